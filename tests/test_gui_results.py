"""The Results screen: every run in a filterable table, a run's per-item answers, two runs
compared, charts, and CSV/JSON export. The runs are made through the engine's own session
API (a person's answers need no model)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engine.core.scoring import Scored
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from gui.tables import RowsModel

pytestmark = pytest.mark.gui


def sit(store, answers):
    """A person's exam session answering ``answers`` in order."""
    s = ExamSitting(store, ensure_sample(store), limit=len(answers))
    for letter in answers:
        s.next_question()
        s.answer(letter)
    s.finish()
    return s.run_id


def test_table_filter_details_compare_charts_export(qtbot, window, tmp_path):
    store = window.ctx.store
    first = sit(store, ["B", "A", "A"])
    second = sit(store, ["B", "C", "A"])
    run3 = store.start_run("consult", "cases-sample", "smollm2", {}, runner="model", n_total=1)
    store.finish_run(run3, {"accuracy": 0.0, "n": 1}, status="cancelled")

    r = window.go("results")
    assert r.proxy.rowCount() == 3
    r.activity.setCurrentIndex(r.activity.findData("exam"))
    assert r.proxy.rowCount() == 2
    assert {x["id"] for x in r.proxy.runs()} == {first, second}
    r.search.setText("cases")
    assert r.proxy.rowCount() == 0
    r.search.clear()
    r.who.setCurrentIndex(r.who.findData("You"))
    assert r.proxy.rowCount() == 2

    # One run: its summary and its answers, one per question.
    r.select_runs([first])
    assert r.selected_ids() == [first]
    assert len(r.answers.rows) == 3
    assert "Run " + str(first) in r.summary.toPlainText()
    marks = [r.answers.data(r.answers.index(i, 0)) for i in range(3)]
    assert marks.count("✓") == sum(bool(a["correct"]) for a in store.answers(first))
    r.answers_table.selectRow(0)
    shown = r.item_view.toPlainText()
    assert "Question 1" in shown
    assert store.items("explaincpe-sample")[0]["question"] in shown

    # Two runs side by side.
    r.select_runs([first, second])
    assert r.compare_button.isEnabled()
    r.compare_selected()
    assert r.tabs.currentIndex() == 1
    labels = [row[0] for row in r.compare_metrics.rows]
    assert "Score (%)" in labels
    assert len(r.compare_items.rows) == 3
    assert "same answer on 2" in r.compare_agree.text()
    item = r.compare_items.data(r.compare_items.index(0, 0))  # the question, not its id
    assert item.startswith("1. ") and store.items("explaincpe-sample")[0]["question"][:8] in item

    # Charts: scores over time for the filtered runs, categories of the selected one.
    r.select_runs([first])
    r.tabs.setCurrentIndex(2)
    assert r.time_chart is not None
    chart = r.time_chart.chart()
    assert chart.series() and chart.title() == "Scores over time"
    assert "Accuracy by kind of question" in r.cat_chart.chart().title()
    assert r.cat_chart.chart().series()

    # Export.
    out_csv = r.export_selected(str(tmp_path / "run.csv"))
    assert Path(out_csv).read_bytes().startswith(b"\xef\xbb\xbf")  # Excel reads it as UTF-8
    with open(out_csv, encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 and rows[0]["run_id"] == str(first)
    out_json = r.export_selected(str(tmp_path / "run.json"))
    data = json.loads(Path(out_json).read_text(encoding="utf-8"))
    assert data["run"]["id"] == first and len(data["answers"]) == 3


def test_answers_show_their_questions_numbered_from_one(qtbot, window):
    """Items keyed by hashes (as imports make them): the table shows each question's text
    and numbers the answers 1, 2, …, never the hash."""
    store = window.ctx.store
    questions = ["华法林的作用机制是什么？", "Quel est l'antidote du paracétamol ?"]
    items = [
        {
            "id": hashlib.sha256(q.encode()).hexdigest(),
            "question": q,
            "options": {"A": "x", "B": "y"},
            "answer": "A",
        }
        for q in questions
    ]
    store.add_dataset("hashed", "exam", items)
    run_id = store.start_run("exam", "hashed", "smollm2", {}, runner="model", n_total=2)
    for item, chosen in zip(items, ["A", "B"], strict=True):
        right = [Scored("exam.letter", 1, {"correct": chosen == "A"})]
        store.add_answer(run_id, item["id"], chosen=chosen, gold="A", scores=right)
    store.finish_run(run_id, {"accuracy": 50.0, "n": 2})

    r = window.go("results")
    r.select_runs([run_id])
    model = r.answers
    titles = [
        model.headerData(i, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
        for i in range(model.columnCount())
    ]
    assert titles[1:3] == ["#", "Question"]
    cells = [
        [model.data(model.index(row, col)) for col in range(model.columnCount())]
        for row in range(model.rowCount())
    ]
    assert [row[1] for row in cells] == ["1", "2"]
    assert [row[2] for row in cells] == questions
    assert not any(re.search(r"[0-9a-f]{64}", str(cell)) for row in cells for cell in row)
    r.answers_table.selectRow(1)
    shown = r.item_view.toPlainText()
    assert "Question 2" in shown and questions[1] in shown
    assert not re.search(r"[0-9a-f]{64}", shown)


def test_new_runs_appear_without_refreshing(qtbot, window):
    r = window.go("results")
    assert r.proxy.rowCount() == 0
    run_id = sit(window.ctx.store, ["A"])
    window.ctx.notify_runs()
    assert r.proxy.rowCount() == 1
    assert r.proxy.data(r.proxy.index(0, 0), RowsModel.ROW_ROLE)["id"] == run_id


def test_setting_column_filter_and_report_tab(qtbot, window, tmp_path):
    from engine.reports import run_label

    store = window.ctx.store
    first = sit(store, ["B", "A", "A"])
    second = sit(store, ["B", "C", "C"])
    r = window.go("results")
    headers = [
        r.runs.headerData(i, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
        for i in range(r.runs.columnCount())
    ]
    column = headers.index("Setting")
    shown = r.proxy.data(r.proxy.index(0, column))
    assert shown == run_label(store.run(second)) and shown.startswith("you")
    r.search.setText(shown.split(" · ")[-1].upper())  # the label is searched too
    assert r.proxy.rowCount() == 2
    r.search.setText("no such setting")
    assert r.proxy.rowCount() == 0
    r.search.clear()

    assert r.make_report([]) is None and not r.save_report_button.isEnabled()
    r.select_runs([first, second])
    report = r.make_report()
    assert r.tabs.currentIndex() == 3 and r.save_report_button.isEnabled()
    assert [x["id"] for x in report["runs"]] == [first, second]
    assert "ExplainCPE Table 8" in r.report_view.toPlainText()
    saved = r.save_report(str(tmp_path / "report.html"))
    page = Path(saved).read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and f"#{first}" in page


def test_an_answers_scores_are_named_in_words(qtbot, window):
    store = window.ctx.store
    run_id = store.start_run("consult", "cases-sample", "smollm2", {}, runner="model", n_total=1)
    scores = [
        Scored("consult.task", 1, {"correct": True, "similarity": 1.0}),
        Scored("consult.dialogue", 1, {"patient_recall": 0.25, "doctor_f1": 0.5}),
    ]
    store.add_answer(run_id, "sample-01", chosen="B", gold="B", scores=scores)
    store.finish_run(run_id, {"accuracy": 100.0, "n": 1})
    r = window.go("results")
    r.reload()
    r.select_runs([run_id])
    r.answers_table.selectRow(0)
    shown = r.item_view.toPlainText()
    assert "Patient word overlap with fact values (ROUGE-1 recall): 0.25" in shown
    assert "Diagnosis similarity: 1" in shown
    assert "patient_recall" not in shown and "doctor_f1" not in shown
