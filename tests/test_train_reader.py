"""``medexam train french-reader`` then ``medexam french run --reader``: the paper's reader
trained on 64 FrenchMedMCQA questions for one epoch (BM25 context from a corpus made of the
training questions, short inputs), evaluated with the French scorers, listed, reported in
the Table 2 layout."""

from __future__ import annotations

import json
from pathlib import Path

import french_fixtures
import pytest
from click.testing import CliRunner
from conftest import SHARED_DATA

from engine.cli import cli
from engine.store.store import Store
from engine.train.artefacts import find

indexes = french_fixtures.indexes
TRAIN = SHARED_DATA / "frenchmedmcqa" / "train.json"
DEV = SHARED_DATA / "frenchmedmcqa" / "dev.json"

pytestmark = pytest.mark.skipif(
    not TRAIN.is_file() or not DEV.is_file(),
    reason=f"needs FrenchMedMCQA's train.json and dev.json in {TRAIN.parent}",
)


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


def part(source: Path, start: int, n: int, target: Path) -> Path:
    """``n`` questions of a FrenchMedMCQA file from ``start`` (the file opens with a long run
    of one-answer questions: a slice further in mixes them)."""
    questions = json.loads(source.read_text(encoding="utf-8"))[start : start + n]
    return french_fixtures.write_questions(target, questions)


def test_train_the_reader_then_run_it(
    db_path: str, home: Path, indexes: Path, tmp_path: Path
) -> None:
    train_file = part(TRAIN, 64, 64, tmp_path / "train.json")
    dev_file = part(DEV, 0, 32, tmp_path / "dev.json")
    for name, path in (("fm-train", train_file), ("fm-dev", dev_file)):
        assert invoke(db_path, "import", "frenchmedmcqa", str(path), "--name", name).exit_code == 0
    made = invoke(
        db_path, "french", "corpus", "add", "--name", "fm-q", "--from-dataset", "fm-train"
    )
    assert made.exit_code == 0, made.output
    trained = invoke(
        db_path, "train", "french-reader", "--dataset", "fm-train",
        "--dev", "fm-dev", "--retriever", "bm25", "--corpus", "fm-q", "--epochs", "1",
        "--max-length", "96", "--batch-size", "16", "--name", "tiny", "--json",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    row = json.loads(trained.output)
    assert row["status"] == "finished" and row["device"].startswith(("CPU", "CUDA"))
    assert row["step"] == row["n_steps"] == 4 and len(row["loss_curve"]) == 4
    data = row["data"]
    assert data["n_train"] == 64 and data["index"] == "fm-q-bm25" and data["n_dev"] == 32
    assert data["head"] == "options" and data["classes"] == list("abcde")  # a yes/no each
    assert data["dev_prior_loss"] > 0 and row["evals"][0]["loss"] > 0
    assert row["evals"][0]["n"] == 32 and 0 <= row["evals"][0]["hamming"] <= 100
    reader = find("tiny", "reader")
    assert Path(reader["path"]).parent == home / "trained"  # never in the project tree
    assert (Path(reader["path"]) / "config.json").is_file()

    ran = invoke(
        db_path, "french", "run", "--reader", "tiny", "--dataset", "fm-dev", "--limit", "12",
        "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.output)
    assert summary["status"] == "finished" and summary["model"] == "tiny" and summary["n"] == 12
    assert summary["settings"]["index"] == "fm-q-bm25" and summary["settings"]["k"] == 1
    store = Store(db_path)
    run = store.run(summary["run_id"])
    assert run["model"] == "tiny" and run["settings"]["encoder"] == "MiniLM"
    answers = store.answers(summary["run_id"])
    assert all(a["chosen"] and set(a["extra"]["pred"]) <= set("abcde") for a in answers)
    assert {a["scores"]["hamming"] >= 0 for a in answers} == {True}
    assert all(len(a["extra"]["passages"]) == 1 for a in answers)  # the context it learnt with

    listed = invoke(db_path, "train", "list")
    assert listed.exit_code == 0 and "tiny" in listed.output and "finished" in listed.output
    report = invoke(db_path, "report", str(summary["run_id"]), "--format", "md")
    assert "FrenchMedMCQA Table 2 layout" in report.output
    assert "fm-q w/ BM25 Hamming" in report.output and "MiniLM" in report.output
