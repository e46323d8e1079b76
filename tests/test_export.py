"""Exports a spreadsheet can use, from real runs: CSV with the question, its options and
type, the gold answer beside the response and one column per score; the consultation turns
file; JSON that keeps everything; XLSX. Each is read back."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample as consult_sample
from engine.core.runs import run
from engine.exam.dataset import ensure_sample as exam_sample
from engine.reports import run_label
from engine.reports.export import (
    answer_table,
    export_run,
    export_turns,
    run_detail,
    turns_path,
    write_export,
)
from engine.store.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def made(tmp_path_factory, chat_model):
    """An exam run (generate, 2 questions) and a consultation (1 case, 1 question)."""
    store = Store(tmp_path_factory.mktemp("export") / "medexam.db")
    exam_settings = {"model": "smollm2", "method": "generate", "limit": 2, "max_tokens": 24}
    exam = run(store, "exam", exam_sample(store), exam_settings)
    consult_settings = {"doctor": "smollm2", "limit": 1, "max_turns": 1}
    consult = run(store, "consult", consult_sample(store), consult_settings)
    yield store, exam["run_id"], consult["run_id"]
    store.close()


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_exam_csv_has_every_column_a_spreadsheet_needs(made):
    store, exam, _ = made
    rows = read_csv(export_run(store, exam, "csv"))
    items = {i["id"]: i for i in store.items("explaincpe-sample")}
    answers = {a["item_key"]: a for a in store.answers(exam)}
    assert len(rows) == 2
    header = list(rows[0])
    for column in (
        "run_id",
        "run_label",
        "item_key",
        "question",
        "options",
        "type1",
        "type2",
        "type3",
        "gold",
        "chosen",
        "correct",
        "response",
        "score_rouge1",
        "score_rouge2",
        "score_rougeL",
        "extra_rule",
        "latency_s",
    ):
        assert column in header, column
    assert header.index("gold") + 1 == header.index("chosen")  # gold beside the response
    for row in rows:
        item, answer = items[row["item_key"]], answers[row["item_key"]]
        assert row["question"] == item["question"]
        assert row["options"].splitlines()[1] == f"B. {item['options'][1]}"
        assert row["type2"] == item["type2"] and row["gold"] == item["answer"]
        assert row["response"] == answer["response"]
        assert row["correct"] == str(int(bool(answer["correct"])))
        assert float(row["score_rougeL"]) == pytest.approx(answer["scores"]["rougeL"])
        assert row["run_label"] == run_label(store.run(exam))
        assert not any(v.startswith("{") for v in row.values())  # no JSON blobs for scores


def test_consultation_turns_file(made):
    store, _, consult = made
    rows = read_csv(export_turns(store, consult))
    turns = store.turns(consult)
    assert len(rows) == len(turns) >= 3  # opening, question, reply (and a conclusion)
    assert list(rows[0]) == [
        "run_id",
        "case",
        "turn",
        "speaker",
        "kind",
        "text",
        "facts_revealed",
        "facts_leaked",
        "facts_given",
        "source",
        "latency_s",
        "tokens",
        "created",
    ]
    assert [r["text"] for r in rows] == [t["text"] for t in turns]
    case = store.items("cases-sample")[0]
    keys = [f["key"] for f in case["facts"]]
    for row, turn in zip(rows, turns, strict=True):
        revealed = [keys[i] for i in turn["extra"].get("revealed", [])]
        assert row["facts_revealed"] == "; ".join(revealed)  # fact keys, not indices
        assert (row["speaker"], row["turn"]) == (turn["role"], str(turn["turn"]))
    assert {r["speaker"] for r in rows} == {"doctor", "patient"}
    answers = read_csv(export_run(store, consult, "csv"))
    assert answers[0]["question"] == case["task"]["question"]
    assert answers[0]["opening_request"] == case["initial_request"]
    assert "score_doctor_f1" in answers[0] and "score_patient_f1" in answers[0]


def test_json_keeps_everything_and_round_trips(made):
    store, exam, consult = made
    for run_id in (exam, consult):
        data = json.loads(export_run(store, run_id, "json"))
        detail = run_detail(store, run_id)
        assert data["run"] == json.loads(json.dumps(detail["run"]))
        assert data["answers"] == detail["answers"] and data["turns"] == detail["turns"]
        assert set(data["items"]) == {a["item_key"] for a in detail["answers"]}
        assert data["run"]["label"] == run_label(store.run(run_id))


def test_files_xlsx_and_the_command_line(made, tmp_path):
    from openpyxl import load_workbook

    store, exam, consult = made
    written = write_export(store, consult, tmp_path / "consult.csv")
    assert written == [tmp_path / "consult.csv", tmp_path / "consult-turns.csv"]
    assert turns_path(Path("a/run.csv")) == Path("a/run-turns.csv")
    book = load_workbook(write_export(store, exam, tmp_path / "exam.xlsx")[0])
    assert book.sheetnames == ["answers", "run"]
    columns, rows = answer_table(store, exam)
    sheet = list(book["answers"].values)
    assert list(sheet[0]) == columns and len(sheet) == 1 + len(rows)
    assert sheet[1][columns.index("question")] == rows[0]["question"]
    assert load_workbook(tmp_path / "exam.xlsx")["run"]["A2"].value == "id"
    assert "turns" in load_workbook(write_export(store, consult, tmp_path / "c.xlsx")[0]).sheetnames

    db = store.path
    out = CliRunner().invoke(cli, ["--db", db, "runs", "export", str(consult), "--turns"])
    assert out.exit_code == 0 and read_csv(out.output)[0]["speaker"] == "patient"
    saved = CliRunner().invoke(
        cli, ["--db", db, "runs", "export", str(exam), "-o", str(tmp_path / "e.xlsx")]
    )
    assert saved.exit_code == 0 and (tmp_path / "e.xlsx").stat().st_size > 0
    refused = CliRunner().invoke(cli, ["--db", db, "runs", "export", str(exam), "--format", "xlsx"])
    assert refused.exit_code == 1 and "needs a file" in refused.output
