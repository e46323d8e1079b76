"""Paper-shaped output of stored consultation runs (Table 2, golden dialogues), the fixed
solver in medexam's settings, and the warning when doctors were compared on other solvers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine import settings
from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.consult.doctor.runner import consult_settings
from engine.consult.report.tables import (
    ReportError,
    dialogue_records,
    paper_table,
    render_table,
    write_dialogues,
)
from engine.core.scoring import Scored
from engine.reports.results import compare_runs
from engine.store.store import Store

WRONG = [Scored("consult.task", 1, {"correct": False})]
SUMMARY = {
    "patient_recall": 40.0,
    "patient_precision": 30.0,
    "patient_f1": 34.29,
    "patient_length": 7.5,
    "doctor_recall": 20.0,
    "doctor_precision": 10.0,
    "doctor_f1": 13.33,
    "doctor_length": 9.0,
    "avg_turns": 3.0,
    "accuracy": 50.0,
}


def _run(store: Store, runner: str, solver: str, model: str = "smollm2", **summary) -> int:
    name = ensure_sample(store)
    given = {"doctor": runner, "solver": solver, "solver_model": solver, "patient_mode": "paper"}
    run_id = store.start_run("consult", name, model, given, runner=runner, n_total=1)
    store.add_turn(run_id, "sample-01", 0, "patient", "My belly hurts.", extra={"kind": "opening"})
    if runner not in ("upper", "lower"):
        store.add_turn(run_id, "sample-01", 1, "doctor", "Since when?", extra={"kind": "question"})
        store.add_turn(run_id, "sample-01", 1, "patient", "Two days.", extra={"kind": "reply"})
        store.add_turn(
            run_id, "sample-01", 2, "doctor", "It is appendicitis.", extra={"kind": "conclusion"}
        )
    store.add_answer(
        run_id, "sample-01", response="A", chosen="A", gold="B", scores=WRONG, extra={}
    )
    store.finish_run(run_id, {**SUMMARY, **summary})
    return run_id


def test_table_2_layout_with_the_bounds(store) -> None:
    doctor = _run(store, "model", "smollm2")
    lower = _run(store, "lower", "smollm2", accuracy=20.0)
    upper = _run(store, "upper", "smollm2", accuracy=90.0)
    table = paper_table(store, [doctor])  # the bounds of the data set are added
    assert [r["run_id"] for r in table["rows"]] == [upper, doctor, lower]
    assert [r["doctor"] for r in table["rows"]] == ["Upper-B", "smollm2", "Lower-B"]
    assert table["warnings"] == []
    text = render_table(table, "text")
    header = text.splitlines()[0].split()
    assert header[:6] == ["Data", "set", "Doctor", "Patient", "Patient", "Rec"]
    assert header[-2:] == ["Turn", "Acc"]
    lines = text.splitlines()
    assert lines[1].endswith(" 90.00") and lines[0].endswith("  Acc")  # numbers to the right
    assert len({len(line) for line in lines}) == 1  # every column lines up
    assert "34.29" in text and "90.00" in text
    md = render_table(table, "markdown").splitlines()
    assert md[0].startswith(
        "| Data set | Doctor | Patient | Patient Rec | Patient Pre | Patient F1 | Patient Len"
    )
    assert md[1] == "|---|---|---|" + "---:|" * 10 and len(md) == 5
    rows = list(csv.DictReader(io.StringIO(render_table(table, "csv"))))
    assert rows[1]["Doctor Len"] == "9.0" and rows[2]["Acc"] == "20.0"
    data = json.loads(render_table(table, "json"))
    assert data["rows"][1]["doctor_f1"] == 13.33
    assert [r["run_id"] for r in paper_table(store, [doctor], bounds=False)["rows"]] == [doctor]
    with pytest.raises(ReportError):
        render_table(table, "html")


def test_a_trial_set_is_one_row_with_its_spread(store) -> None:
    trials = []
    for k, accuracy in enumerate((40.0, 60.0, 50.0), 1):
        run_id = _run(store, "model", "smollm2", accuracy=accuracy)
        tags = {"trial": k, "trials": 3, "trial_set": "abcd0123", "patient_model": "gemma3-270m"}
        store.update_run(run_id, settings={**store.run(run_id)["settings"], **tags})
        trials.append(run_id)
    alone = _run(store, "model", "smollm2")
    table = paper_table(store, [*trials, alone], bounds=False)
    first, second = table["rows"]
    assert first["run_ids"] == trials and first["trials"] == 3 and second["run_id"] == alone
    assert first["accuracy"] == 50.0 and first["accuracy_sd"] == 10.0
    assert first["patient"] == "gemma3-270m" and first["patient_recall_sd"] == 0.0
    text = render_table(table)
    assert "smollm2 (3 trials)" in text and "50.00 ± 10.00" in text
    assert text.splitlines()[2].split()[-1] == "50.00"  # the single run: no spread


def test_different_solvers_are_flagged(store) -> None:
    a = _run(store, "model", "smollm2")
    b = _run(store, "oracle-direct", "gemma3-270m")
    table = paper_table(store, [a, b], bounds=False)
    assert table["warnings"] == [
        "the runs used different solvers (gemma3-270m, smollm2): accuracies differ"
    ]
    assert "warning: the runs used different solvers" in render_table(table)
    assert compare_runs(store, a, b)["warnings"] == [
        "different solvers answered the tasks (smollm2 and gemma3-270m): accuracies differ"
    ]
    assert compare_runs(store, a, _run(store, "model", "smollm2"))["warnings"] == []


def test_golden_dialogues_in_chat_format(store, tmp_path: Path) -> None:
    run_id = _run(store, "oracle-direct", "smollm2")
    (record,) = dialogue_records(store, run_id)
    roles = [m["role"] for m in record["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert "as many questions as possible, up to 10" in record["messages"][0]["content"]
    assert record["messages"][1]["content"] == "My belly hurts."
    assert record["messages"][-1]["content"].startswith("The answer is B. ")  # the gold one
    (given,) = dialogue_records(store, run_id, answer="run")
    assert given["messages"][-1]["content"].startswith("The answer is A. ")
    assert list(dialogue_records(store, run_id, correct_only=True)) == []
    out = io.StringIO()
    assert write_dialogues(store, [run_id, run_id], out) == 2
    with pytest.raises(ReportError, match="bound"):
        list(dialogue_records(store, _run(store, "lower", "smollm2")))


def test_the_cli_table_and_export(db_path: str, tmp_path: Path) -> None:
    store = Store(db_path)
    doctor = _run(store, "model", "smollm2")
    store.close()
    runner = CliRunner()
    out = runner.invoke(
        cli, ["--db", db_path, "consult", "table", str(doctor), "--format", "markdown"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.startswith("| Data set | Doctor |")
    path = tmp_path / "golden.jsonl"
    out = runner.invoke(
        cli, ["--db", db_path, "consult", "export-dialogues", str(doctor), "--out", str(path)]
    )
    assert out.exit_code == 0 and "wrote 1 dialogues" in out.output
    assert json.loads(path.read_text().splitlines()[0])["case"] == "sample-01"
    bad = runner.invoke(cli, ["--db", db_path, "consult", "table", "999"])
    assert bad.exit_code == 1 and "Traceback" not in bad.output


def test_one_fixed_solver_in_the_settings(db_path: str, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path / "home"))
    assert settings.get("solver") == "model"
    assert consult_settings({"doctor": "gemma3-270m"})["solver"] == "smollm2"  # not the doctor's
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", db_path, "consult", "solver", "gemma3-270m"])
    assert out.exit_code == 0 and "solver: gemma3-270m" in out.output
    assert consult_settings({"doctor": "smollm2"})["solver"] == "gemma3-270m"
    assert consult_settings({"doctor": "smollm2", "solver": "smollm2"})["solver"] == "smollm2"
    bad = runner.invoke(cli, ["--db", db_path, "consult", "solver", "no-such-model"])
    assert bad.exit_code == 1 and "no model named 'no-such-model'" in bad.output
    out = runner.invoke(cli, ["--db", db_path, "consult", "solver", "--reset"])
    assert "solver: model" in out.output and settings.get("solver") == "model"
    with pytest.raises(settings.SettingsError):
        settings.get("colour")
