"""The results chart of an exam block by question type (issue #46): at the default window
(1280×820) every type's label reads whole, four types or more, never cut to "药品知识题...".
No model."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsTextItem

from engine.exam.dataset import import_file

pytestmark = [pytest.mark.gui]

TYPES = ("逻辑推理题", "药品知识题", "情景分析题", "常识题", "疾病知识题", "数学计算题", "其他")
# the seven kinds of question of ExplainCPE's test split


def typed_set(window, tmp_path, types: tuple[str, ...]) -> None:
    rows = [
        {
            "id": i,
            "question": f"Q{i}?",
            "options": ["a", "b", "c", "d", "e"],
            "answer": "B",
            "explanation": "because",
            "type1": "正向",
            "type2": kind,
            "type3": "其他",
        }
        for i, kind in enumerate(types, start=1)
    ]
    path = tmp_path / "typed.json"
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    import_file(window.ctx.store, path, name="typed")
    window.ctx.notify_data()


@pytest.mark.parametrize("count", [4, 7])
def test_layout_1280_every_type_label_reads_whole(qtbot, window, tmp_path, count):
    types = TYPES[:count]
    window.resize(1280, 820)
    typed_set(window, tmp_path, types)
    p = window.go("exam").practice
    p.dataset.select("typed")
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(count)
    p.part.in_order.setChecked(True)
    qtbot.mouseClick(p.start_button, Qt.MouseButton.LeftButton)
    for i in range(count):
        qtbot.waitUntil(lambda i=i: p.at == i and not p.answered and not p.busy)
        qtbot.mouseClick(p.options.buttons["B" if i % 2 else "C"], Qt.MouseButton.LeftButton)
        qtbot.mouseClick(p.submit_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: p.answered and not p.busy)
        qtbot.mouseClick(p.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    qtbot.waitUntil(
        lambda: p.part.report.type_chart is not None and p.part.report.type_chart.isVisible()
    )
    chart = p.part.report.type_chart
    qtbot.wait(50)
    texts = [
        item.toPlainText() for item in chart.scene().items() if isinstance(item, QGraphicsTextItem)
    ]
    for kind in types:  # the name, then its score and count on the second line
        label = next((t for t in texts if t.startswith(kind)), None)
        assert label is not None and "..." not in label and "% · n=1" in label, (kind, texts)
