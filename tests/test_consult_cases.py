"""The native case format: validation, import, the shipped samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.consult.cases.cases import (
    SAMPLE_DATASET,
    Case,
    CaseError,
    Fact,
    Task,
    add_case,
    ensure_sample,
    get_case,
    import_cases,
    load_cases,
    read_cases,
    sample_path,
    validate_case,
)

GOOD = {
    "id": "c1",
    "language": "en",
    "facts": [{"key": "Age", "value": "40 years"}, {"key": "Smoking", "value": "never"}],
    "initial_request": "Doctor, my chest hurts.",
    "task": {"question": "Most likely?", "options": {"A": "Angina", "B": "Reflux"},
             "answer": "B"},
    "source": "hand-written",
}  # fmt: skip


def write(tmp_path: Path, records: object, name: str = "cases.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_validate_case_reads_every_field() -> None:
    case = validate_case(GOOD)
    assert case.id == "c1" and case.language == "en"
    assert case.facts == [Fact("Age", "40 years"), Fact("Smoking", "never")]
    assert case.task.kind == "mcq" and case.task.gold == "B"
    assert validate_case(case.to_dict()) == case


def test_options_as_a_list_are_lettered_and_numbers_become_text() -> None:
    record = {**GOOD, "id": 7, "facts": [{"key": "Age", "value": 40}],
              "task": {"question": "Q?", "options": ["x", "y", "z"], "answer": "c"}}  # fmt: skip
    case = validate_case(record)
    assert case.id == "7" and case.facts[0].value == "40"
    assert case.task.options == {"A": "x", "B": "y", "C": "z"} and case.task.answer == "C"


def test_diagnosis_task() -> None:
    case = validate_case({**GOOD, "task": {"diagnosis": "Reflux oesophagitis"}})
    assert case.task.kind == "diagnosis" and case.task.gold == "Reflux oesophagitis"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"id": ""}, "missing 'id'"),
        ({"facts": []}, "'facts' must be a non-empty list"),
        ({"facts": [{"key": "Age"}]}, "fact 1 needs a non-empty 'key' and 'value'"),
        ({"initial_request": " "}, "missing 'initial_request'"),
        ({"language": "de"}, "language 'de' is not one of en, fr, zh"),
        ({"task": {"question": "Q", "options": {"A": "x", "B": "y"}, "answer": "E"}},
         "task answer 'E' is not one of the options A, B"),
        ({"task": {"question": "Q", "options": {"A": "x"}, "answer": "A"}},
         "task 'options' must map 2 to 10 letters"),
        ({"task": {}}, "task needs either 'options'"),
        ({"task": "B"}, "'task' must be an object"),
    ],
)  # fmt: skip
def test_bad_records_name_the_record_and_the_reason(
    tmp_path: Path, change: dict, reason: str
) -> None:
    path = write(tmp_path, [GOOD, {**GOOD, "id": "c2", **change}])
    with pytest.raises(CaseError, match=f"^record 2: {reason}"):
        read_cases(path)


def test_duplicate_ids_and_empty_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="record 2: duplicate id 'c1'"):
        read_cases(write(tmp_path, [GOOD, GOOD]))
    with pytest.raises(CaseError, match="no cases"):
        read_cases(write(tmp_path, []))


def test_jsonl_and_wrapped_files(tmp_path: Path) -> None:
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "id": "c2"}) + "\n")
    assert [c.id for c in read_cases(jsonl)] == ["c1", "c2"]
    assert [c.id for c in read_cases(write(tmp_path, {"cases": [GOOD]}))] == ["c1"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(CaseError, match="line 2: not valid JSON"):
        read_cases(bad)


def test_import_stores_a_consult_data_set(store, tmp_path: Path) -> None:
    import_cases(store, write(tmp_path, [GOOD, {**GOOD, "id": "c2"}]), "mine")
    ds = store.dataset("mine")
    assert ds["activity"] == "consult" and ds["n_items"] == 2
    assert [c.id for c in load_cases(store, "mine")] == ["c1", "c2"]
    assert get_case(store, "mine", "c2").initial_request == GOOD["initial_request"]
    with pytest.raises(CaseError, match="no case 'zz'"):
        get_case(store, "mine", "zz")


def test_a_bad_file_stores_nothing(store, tmp_path: Path) -> None:
    with pytest.raises(CaseError):
        import_cases(store, write(tmp_path, [GOOD, {"id": "x"}]), "mine")
    assert not store.has_dataset("mine")


def test_add_case_appends_or_replaces_by_id(store) -> None:
    case = validate_case(GOOD)
    add_case(store, "drafts", case)
    add_case(store, "drafts", Case("c9", case.facts, "Hi", Task(diagnosis="Flu")))
    add_case(store, "drafts", Case("c1", case.facts, "Hello again", case.task))
    assert [c.id for c in load_cases(store, "drafts")] == ["c9", "c1"]
    assert get_case(store, "drafts", "c1").initial_request == "Hello again"


def test_samples_are_at_least_ten_marked_mcq_cases() -> None:
    cases = read_cases(sample_path())
    assert len(cases) >= 10
    assert [c.id for c in cases] == [f"sample-{i:02d}" for i in range(1, len(cases) + 1)]
    for c in cases:
        assert c.sample and c.language == "en" and c.task.kind == "mcq"
        assert len(c.task.options) == 5 and len(c.facts) >= 8
        assert "sample" in c.source
        # the opening request is in the patient's words, not a copy of the facts
        assert c.initial_request not in " ".join(c.values)


def test_ensure_sample_imports_once(store) -> None:
    assert ensure_sample(store) == SAMPLE_DATASET
    first = store.dataset(SAMPLE_DATASET)["id"]
    ensure_sample(store)
    assert store.dataset(SAMPLE_DATASET)["id"] == first
    assert store.dataset(SAMPLE_DATASET)["meta"]["sample"] is True
