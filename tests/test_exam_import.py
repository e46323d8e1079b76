"""Importing exam questions: every record is checked, a bad file is refused whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.exam.dataset import (
    SAMPLE_NAME,
    DatasetError,
    ensure_sample,
    import_file,
    load_file,
    polarity,
    sample_path,
    validate_records,
)
from engine.store.store import StoreError

GOOD = {
    "id": 1,
    "question": "下列药物中，属于肝药酶诱导剂的是",
    "options": ["西咪替丁", "酮康唑", "利福平", "红霉素", "氯霉素"],
    "answer": "C",
    "explanation": "利福平是肝药酶诱导剂。故本题选C。",
    "type1": "正向",
}


def write_json(path: Path, records: list) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def test_import_explaincpe_json(store, tmp_path):
    path = write_json(tmp_path / "pharm.json", [GOOD, {**GOOD, "id": 2, "answer": "c"}])
    ds = import_file(store, path, "explaincpe")
    assert ds["name"] == "pharm"  # default name: the file stem
    assert ds["activity"] == "exam"
    assert ds["n_items"] == 2
    items = store.items("pharm")
    assert items[1]["answer"] == "C"  # normalised to upper case
    assert items[0]["type1"] == "正向"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"options": ["a", "b", "c", "d"]}, "exactly 5"),
        ({"answer": "F"}, "'answer' must be one letter"),
        ({"answer": "AB"}, "'answer' must be one letter"),
        ({"question": "  "}, "'question'"),
        ({"explanation": ""}, "'explanation'"),
        ({"id": None}, "'id'"),
        ({"options": ["a", "", "c", "d", "e"]}, "option B"),
        ({"type2": ["x"]}, "'type2' must be a text"),
    ],
)
def test_bad_record_is_reported_with_its_number(store, tmp_path, change, reason):
    records = [GOOD, {**GOOD, "id": 2}, {**GOOD, "id": 3, **change}]
    path = write_json(tmp_path / "bad.json", records)
    with pytest.raises(DatasetError) as err:
        import_file(store, path, "explaincpe")
    assert "record 3" in str(err.value)
    assert reason in str(err.value)
    assert not store.has_dataset("bad")  # nothing half-imported


def test_duplicate_ids_and_empty_files_are_refused(tmp_path):
    with pytest.raises(DatasetError, match="record 2: duplicate id 1"):
        validate_records([GOOD, GOOD])
    with pytest.raises(DatasetError, match="no records"):
        load_file(write_json(tmp_path / "empty.json", []))
    (tmp_path / "broken.json").write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_file(tmp_path / "broken.json")


def test_existing_name_needs_replace(store, tmp_path):
    path = write_json(tmp_path / "pharm.json", [GOOD])
    import_file(store, path, "explaincpe", name="bank")
    with pytest.raises(StoreError, match="already exists"):
        import_file(store, path, "explaincpe", name="bank")
    import_file(
        store,
        write_json(tmp_path / "two.json", [GOOD, {**GOOD, "id": 9}]),
        "explaincpe",
        name="bank",
        replace=True,
    )
    assert store.dataset("bank")["n_items"] == 2


def test_mcq_jsonl_allows_fewer_options_and_no_explanation(store, tmp_path):
    path = tmp_path / "quiz.jsonl"
    rows = [
        {"id": "q1", "question": "2+2?", "options": ["3", "4"], "answer": "B"},
        {
            "id": "q2",
            "question": "Capital of France?",
            "options": ["Paris", "Rome", "Oslo"],
            "answer": "a",
            "explanation": "Paris.",
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    ds = import_file(store, path, "mcq")
    assert ds["name"] == "quiz" and ds["n_items"] == 2
    assert store.items("quiz")[1]["answer"] == "A"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "answer": "D"}) + "\n")
    with pytest.raises(DatasetError, match=r"record 2: 'answer' must be one letter of A, B, C"):
        import_file(store, bad, "mcq")


def test_mcq_csv_with_option_columns(store, tmp_path):
    path = tmp_path / "quiz.csv"
    path.write_text(
        "id,question,A,B,C,D,E,answer,explanation,type1\n"
        "1,妊娠期禁用的降压药是,甲基多巴,拉贝洛尔,硝苯地平,依那普利,肼屈嗪,D,ACEI妊娠禁用,正向\n"
        '2,"Which is an enzyme inducer?",cimetidine,rifampicin,,,,B,,\n',
        encoding="utf-8",
    )
    import_file(store, path, "mcq", name="csvquiz")
    first, second = store.items("csvquiz")
    assert first["options"][3] == "依那普利" and first["type1"] == "正向"
    assert second["options"] == ["cimetidine", "rifampicin"] and second["answer"] == "B"
    path.write_text("id,question,A,B,answer\n1,Q?,x,y,C\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="record 1"):
        import_file(store, path, "mcq", name="csvbad")


def test_sample_bank_is_valid_and_marked():
    items = load_file(sample_path(), "explaincpe")
    assert len(items) >= 10
    for item in items:
        assert str(item["id"]).startswith("sample-")
        assert item["source"] == "medexam sample"
        assert item["explanation"] and all(item.get(f) for f in ("type1", "type2", "type3"))


def test_ensure_sample_imports_once(store):
    assert ensure_sample(store) == SAMPLE_NAME
    assert ensure_sample(store) == SAMPLE_NAME
    assert store.dataset(SAMPLE_NAME)["n_items"] == len(load_file(sample_path()))


def test_polarity_reads_the_wording():
    assert polarity({"question": "关于奥美拉唑的说法，错误的是"}) == "反向"
    assert polarity({"question": "属于肝药酶诱导剂的是"}) == "正向"
    assert polarity({"question": "…", "type1": "反向"}) == "反向"


def test_import_the_published_test_split(store, shared_data):
    ds = import_file(store, shared_data / "explaincpe" / "test.json", "explaincpe")
    assert ds["name"] == "test" and ds["n_items"] == 190
    assert set(ds["meta"]["types"]["type1"]) == {"正向", "反向"}
