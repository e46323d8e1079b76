"""The app's Items side by side: two runs item by item from Results (and the button on
Compare and Experiments), filtered to the flipped items, each reply shown as plain text."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import ensure_sample
from gui.testing import message_boxes
from gui.widgets.qt_diff import pick_pair
from tests.test_runs_diff import CUT_WORDS, A, B, stored_run

pytestmark = pytest.mark.gui


def test_gui_side_by_side_from_results_filters_flipped_items(qtbot, window) -> None:
    store = window.ctx.store
    dataset = ensure_sample(store)
    a, b = stored_run(store, dataset, "model-a", A), stored_run(store, dataset, "model-b", B)
    r = window.go("results")
    r.reload()
    r.select_runs([a, b])
    r.tabs.setCurrentIndex(1)
    found = [w for w in r.findChildren(type(r.compare_button)) if w.text() == "Items side by side"]
    assert len(found) == 1
    qtbot.mouseClick(found[0], Qt.MouseButton.LeftButton)
    dialog = r.diff_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.table.rowCount() == 4 and "2 flipped (1 right only in A" in dialog.summary.text()
    dialog.only.setCurrentIndex(dialog.only.findData("flipped"))
    assert [dialog.table.item(i, 0).text() for i in range(dialog.table.rowCount())] == ["2", "4"]
    assert [dialog.table.item(0, c).text() for c in (3, 4, 5, 6, 7, 10)] == [
        "B", "答案", "stop", "✗", "C", "✓"]  # fmt: skip
    assert dialog.reply_b.toPlainText() == "答案：C\n<b>解析</b>"  # shown as written
    assert dialog.head_a.text() == f"A: #{a} model-a"
    dialog.only.setCurrentIndex(dialog.only.findData("no-answer"))
    assert dialog.table.rowCount() == 1 and dialog.table.item(0, 3).text() == CUT_WORDS
    assert dialog.table.item(0, 3).toolTip() == CUT_WORDS  # whole, its column kept narrow
    assert dialog.table.columnWidth(3) <= 200 and dialog.table.columnWidth(7) <= 200
    assert "没有字母" in dialog.reply_a.toPlainText()
    dialog.close()
    r.select_runs([a])
    qtbot.mouseClick(found[0], Qt.MouseButton.LeftButton)  # one run: said in one line
    boxes = message_boxes()
    assert len(boxes) == 1 and "Select two runs" in boxes[0].text()
    boxes[0].done(0)


def test_gui_side_by_side_is_on_compare_and_experiments(window) -> None:
    for key in ("compare", "experiments"):
        screen = window.go(key)
        texts = [w.text() for w in screen.findChildren(type(window.go("results").compare_button))]
        assert "Items side by side" in texts, key
    cells = [{"run_id": 4, "status": "finished"}, {"run_id": None, "status": "failed"},
             {"run_id": 7, "status": "finished"}, {"run_id": 9, "status": "finished"}]  # fmt: skip
    assert pick_pair([], {"cells": cells}) == (4, 7)
    assert pick_pair([9, 4], {"cells": cells}) == (9, 4)
    assert pick_pair([], {"cells": cells[:2]}) is None and pick_pair([3], None) is None
