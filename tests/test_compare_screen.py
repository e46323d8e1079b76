"""The Compare screen: models ticked from the catalog and a data set, Compare plays the
compare-models experiment off the UI thread with progress; the table fills in as the runs
finish (each score with its interval, the paired difference from the best and its p); Stop
leaves it cancelled, and after a restart Go on plays the rest with nothing asked twice; the
quality-per-size chart is drawn from the runs' recorded file sizes; too few models is one
line in a message box. The models are scripted, named in the test's own catalog."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import ensure_sample
from engine.reports.equivalence import VERDICTS
from gui.testing import close_message_boxes
from gui.widgets.qt_compare import CompareScreen

pytestmark = pytest.mark.gui

SCRIPTS = {
    "qa": {"backend": "scripted", "replies": "答案：B", "delay": 0.15},
    "qb": {"backend": "scripted", "replies": "答案：D", "delay": 2.0},  # the slower
}


@pytest.fixture
def screen(window, qtbot, home):
    (home / "models.json").write_text(json.dumps(SCRIPTS))
    ensure_sample(window.ctx.store)
    window.ctx.notify_data()
    found = window.go("compare")
    window.ctx.refresh_models()
    qtbot.waitUntil(lambda: found.models.count() >= 2, timeout=30_000)
    return found


def _rows(screen) -> list[list[str]]:
    t = screen.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _done(row: list[str]) -> int:
    """Items a row says its run answered ("2/4": 2; none yet: 0)."""
    return int(row[3].split("/")[0] or 0) if row[3] else 0


def _column(screen, name: str) -> list[str]:
    t = screen.table
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    return [row[headers.index(name)] for row in _rows(screen)]


def test_compare_stop_and_go_on_after_a_restart_fill_the_table(window, screen, qtbot):
    assert not screen.compare_button.isEnabled()
    screen.choose(["qa", "qb"], "explaincpe-sample", 4)
    assert screen.compare_button.isEnabled() and screen.chosen_models() == ["qa", "qb"]

    qtbot.mouseClick(screen.compare_button, Qt.MouseButton.LeftButton)
    assert not screen.compare_button.isEnabled() and screen.progress.stop.isEnabled()

    qtbot.waitUntil(lambda: [r[0] for r in _rows(screen)][:1] == ["finished"], timeout=60_000)
    then = _done(_rows(screen)[1])

    def more_done_as_the_table_is_read_again() -> bool:
        row = _rows(screen)[1]
        return row[0] == "running" and _done(row) > then

    qtbot.waitUntil(more_done_as_the_table_is_read_again, timeout=30_000)
    assert screen.progress.bar.maximum() == 8  # both models' items
    qtbot.mouseClick(screen.progress.stop, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: screen.job is None, timeout=60_000)

    assert [row[0] for row in _rows(screen)] == ["finished", "cancelled"]
    assert _column(screen, "Model") == ["qa", "qb"]
    assert "fills in as the runs finish" in screen.notes.text()
    assert screen.picker.count() == 1 and "(cancelled)" in screen.picker.currentText()

    again = CompareScreen(window.ctx)  # the app opened again: the comparison is listed
    assert again.go_button.isEnabled() and again.picker.currentData() == screen.shown_id
    assert again.chosen_models() == ["qa", "qb"] and again.limit.value() == 4
    qtbot.mouseClick(again.go_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: again.job is None, timeout=60_000)

    assert [row[0] for row in _rows(again)] == ["finished", "finished"]
    assert _column(again, "Items") == ["4", "4"]
    accuracy = _column(again, "Accuracy (%)")
    assert all("[" in cell for cell in accuracy)  # each score with its interval
    best, other = (0, 1) if _column(again, "Δ Accuracy")[0] == "best" else (1, 0)
    assert again.table.item(best, 1).font().bold() and not again.table.item(other, 1).font().bold()
    assert "[" in _column(again, "Δ Accuracy")[other] and "McNemar" in _column(again, "p")[other]
    assert "Compared on 4 items of explaincpe-sample." in again.notes.text()
    assert "No file size known" in again.chart.text()  # scripted models have no file
    store = window.ctx.store
    runs = [store.run(int(c.lstrip("#"))) for c in _column(again, "Run")]
    assert [len(store.answers(r["id"])) for r in runs] == [4, 4]  # none asked twice
    assert not again.go_button.isEnabled()
    # Each model's verdict against the best, within the margin chosen.
    assert _column(again, "Verdict (± 5)")[best] == "ref"
    assert _column(again, "Verdict (± 5)")[other] == "too few items"  # 4 items
    again.margin.setValue(20)
    assert "within ± 20 points" in again.notes.text()
    assert _column(again, "Verdict (± 20)")[other] in VERDICTS


def test_the_chart_shows_quality_per_size_once_the_runs_know_their_files(window, screen, qtbot):
    screen.choose(["qa", "qb"], "explaincpe-sample", 2)
    screen.compare()
    qtbot.waitUntil(lambda: screen.job is None, timeout=60_000)
    store = window.ctx.store
    for row, size in zip(_column(screen, "Run"), (94 * 2**20, 241 * 2**20), strict=True):
        run = store.run(int(row.lstrip("#")))  # as a GGUF model's run records its file
        usage = {run["model"]: {"file_size": size, "quantization": "Q4_K_M"}}
        store.update_run(run["id"], summary={**run["summary"], "usage": usage})

    screen.reload()

    assert not screen.chart.pixmap().isNull()
    assert _column(screen, "File") == ["94 MiB Q4_K_M", "241 MiB Q4_K_M"]


def test_too_few_models_is_said_in_one_line(window, screen, qtbot):
    screen.choose(["qa"], "explaincpe-sample", 2)
    assert not screen.compare_button.isEnabled()
    screen.compare()
    assert screen.job is None
    assert close_message_boxes() == ["Tick two models or more and pick a data set."]
