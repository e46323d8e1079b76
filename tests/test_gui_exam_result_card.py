"""The result card at the end of an exam block: the score and the pass mark are percentages
with one decimal, as every percentage the app shows (``fmt_number`` with ``%``). No model."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import import_file

pytestmark = [pytest.mark.gui]


def test_the_score_and_the_pass_mark_have_one_decimal(qtbot, window, tmp_path):
    rows = [
        {"id": i, "question": f"Q{i}?", "options": list("abcde"), "answer": "B", "explanation": "b"}
        for i in range(1, 8)
    ]
    path = tmp_path / "seven.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    import_file(window.ctx.store, path, name="seven")
    window.ctx.notify_data()
    p = window.go("exam").practice
    p.dataset.select("seven")
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(7)
    p.part.in_order.setChecked(True)
    qtbot.mouseClick(p.start_button, Qt.MouseButton.LeftButton)
    for i in range(7):  # 3 of 7 right: 42.857…%
        qtbot.waitUntil(lambda i=i: p.at == i and not p.answered and not p.busy)
        qtbot.mouseClick(p.options.buttons["B" if i < 3 else "C"], Qt.MouseButton.LeftButton)
        qtbot.mouseClick(p.submit_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: p.answered and not p.busy)
        qtbot.mouseClick(p.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    report = p.part.report
    assert report.score_label.text() == "42.9%"
    assert report.pass_label.text() == "Not passed — the pass mark is 60.0%"
