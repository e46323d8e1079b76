"""Importing FrenchMedMCQA files: every record is checked; a bad one stores nothing."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from french_fixtures import sample_questions, write_questions

from engine.cli import cli
from engine.french.dataset import (
    SAMPLE_CORPUS,
    SAMPLE_DATASET,
    DatasetError,
    ensure_sample,
    import_frenchmedmcqa,
    load_questions,
    retrieval_query,
)


def test_sample_imports_with_counts(store, tmp_path):
    path = write_questions(tmp_path / "sample.json", sample_questions())
    result = import_frenchmedmcqa(store, path, "demo")
    assert result["n_items"] == 15 and result["name"] == "demo"
    assert result["by_n_answers"] == {"1": 3, "2": 2, "3": 6, "4": 3, "5": 1}
    items = store.items("demo")
    assert items[0]["id"] == "sample-01" and items[0]["correct_answers"] == ["a", "b", "c"]
    assert store.dataset("demo")["activity"] == "french"
    assert store.dataset("demo")["meta"]["sample"] is True


def test_samples_are_marked_and_well_formed():
    questions = sample_questions()
    assert len(questions) >= 10
    assert all(q["sample"] and q["id"] == f"sample-{i:02d}" for i, q in enumerate(questions, 1))
    assert all(q["nbr_correct_answers"] == len(q["correct_answers"]) for q in questions)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda q: q.pop("question"), "missing or empty 'question'"),
        (lambda q: q["answers"].pop("e"), "exactly the keys a, b, c, d, e"),
        (lambda q: q["answers"].update(c="  "), "option 'c' is empty"),
        (lambda q: q.update(correct_answers=["f"]), "other than the letters a to e"),
        (lambda q: q.update(correct_answers=[]), "non-empty list"),
        (lambda q: q.update(correct_answers=["a", "a"]), "repeats a letter"),
        (lambda q: q.update(nbr_correct_answers=2), "'nbr_correct_answers' is 2"),
        (lambda q: q.update(id=""), "missing or empty 'id'"),
    ],
)
def test_bad_record_names_number_and_reason_and_imports_nothing(store, tmp_path, change, reason):
    questions = sample_questions()
    change(questions[6])  # record 7
    path = write_questions(tmp_path / "bad.json", questions)
    with pytest.raises(DatasetError) as err:
        import_frenchmedmcqa(store, path, "bad")
    assert "record 7:" in str(err.value) and reason in str(err.value)
    assert "nothing imported" in str(err.value)
    assert not store.has_dataset("bad")


def test_duplicate_ids(store, tmp_path):
    questions = sample_questions()
    same = questions + [copy.deepcopy(questions[2])]
    result = import_frenchmedmcqa(store, write_questions(tmp_path / "dup.json", same), "dup")
    assert result["n_items"] == 15 and result["duplicates_skipped"] == [16]

    other = copy.deepcopy(questions[2])
    other["question"] = "Une autre question ?"
    path = write_questions(tmp_path / "clash.json", questions + [other])
    with pytest.raises(DatasetError, match="record 16: duplicate id 'sample-03' with other"):
        load_questions(path)


def test_file_level_errors(tmp_path):
    (tmp_path / "obj.json").write_text('{"id": 1}')
    (tmp_path / "broken.json").write_text("[{")
    (tmp_path / "empty.json").write_text("[]")
    with pytest.raises(DatasetError, match="expected a JSON list"):
        load_questions(tmp_path / "obj.json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_questions(tmp_path / "broken.json")
    with pytest.raises(DatasetError, match="no questions"):
        load_questions(tmp_path / "empty.json")
    with pytest.raises(DatasetError, match="no such file"):
        load_questions(tmp_path / "missing.json")


def test_many_bad_records_are_listed(tmp_path):
    questions = sample_questions()
    for q in questions:
        q["correct_answers"] = ["z"]
    with pytest.raises(DatasetError) as err:
        load_questions(write_questions(tmp_path / "bad.json", questions))
    assert "15 invalid record(s)" in str(err.value) and "(and 5 more)" in str(err.value)


def test_query_is_question_plus_options():
    q = sample_questions()[0]
    query = retrieval_query(q)
    assert query.startswith(q["question"]) and all(v in query for v in q["answers"].values())


def test_ensure_sample_is_idempotent(store):
    assert ensure_sample(store) == {"dataset": SAMPLE_DATASET, "corpus": SAMPLE_CORPUS}
    ensure_sample(store)
    assert len(store.items(SAMPLE_DATASET)) == 15
    assert store.corpus(SAMPLE_CORPUS)["n_passages"] >= 30


def test_public_train_and_dev(store, shared_data):
    folder = shared_data / "frenchmedmcqa"
    train = import_frenchmedmcqa(store, folder / "train.json", "fm-train")
    # The public train.json repeats one question verbatim (records 1188 and 1221).
    assert train["n_items"] == 2170 and train["duplicates_skipped"] == [1221]
    dev = import_frenchmedmcqa(store, folder / "dev.json", "fm-dev")
    assert dev["n_items"] == 312


def test_cli_import(db_path, tmp_path):
    runner = CliRunner()
    path = write_questions(tmp_path / "s.json", sample_questions())
    result = runner.invoke(
        cli, ["--db", db_path, "import", "frenchmedmcqa", str(path), "--name", "s", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_items"] == 15

    again = runner.invoke(
        cli, ["--db", db_path, "import", "frenchmedmcqa", str(path), "--name", "s"]
    )
    assert again.exit_code == 1 and "already exists" in again.output
    replaced = runner.invoke(
        cli, ["--db", db_path, "import", "frenchmedmcqa", str(path), "--name", "s", "--replace"]
    )
    assert replaced.exit_code == 0 and "imported 15 questions as 's'" in replaced.output

    bad = sample_questions()
    bad[3]["answers"]["a"] = ""
    bad_path = write_questions(tmp_path / "bad.json", bad)
    failed = runner.invoke(cli, ["--db", db_path, "import", "frenchmedmcqa", str(bad_path)])
    assert failed.exit_code == 1
    assert "record 4: option 'a' is empty" in failed.output
