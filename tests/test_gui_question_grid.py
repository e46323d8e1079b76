"""The question grid beside a practice question (issue #46): one numbered cell per question,
coloured answered / unanswered, right / wrong once the answer is shown, marked ones flagged;
a click jumps there. The same widget in the exam and the French practice. People's answers
only: no model."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui.widgets.question_grid import QuestionGrid

pytestmark = [pytest.mark.gui]


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def exam_block(qtbot, window, timed: bool, count: int):
    p = window.go("exam").practice
    p.dataset.select("explaincpe-sample")
    (p.part.mode_timed if timed else p.part.mode_practice).setChecked(True)
    p.part.count.setValue(count)
    p.part.in_order.setChecked(True)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None and not p.busy)
    return p


def answer(qtbot, p, right: bool) -> None:
    letter = p.item["answer"] if right else next(x for x in "ABCDE" if x != p.item["answer"])
    click(qtbot, p.options.buttons[letter])
    at = p.session.index
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.session.index == at + 1 and not p.busy)


def test_question_grid_in_exam_practice_colours_marks_and_jumps(qtbot, window):
    p = exam_block(qtbot, window, timed=False, count=4)
    grid = p.grid
    assert isinstance(grid, QuestionGrid) and grid.isVisible()
    assert [c.text() for c in grid.cells] == ["1", "2", "3", "4"]
    assert [grid.state(i) for i in range(4)] == ["unanswered"] * 4 and grid.current == 0
    answer(qtbot, p, right=True)
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.at == 1 and not p.answered and not p.busy)
    answer(qtbot, p, right=False)
    click(qtbot, p.marks.mark_button)  # marked: flagged at once
    states = [grid.state(i) for i in range(4)]
    assert states == ["right", "wrong+marked", "unanswered", "unanswered"]
    assert grid.cells[1].text() == "2⚑"
    # Reached: the two answered and the next to answer; the last is not reached yet.
    assert [c.isEnabled() for c in grid.cells] == [True, True, True, False]
    first = p.item
    click(qtbot, grid.cells[0])
    qtbot.waitUntil(lambda: p.at == 0 and not p.busy)
    assert p.position.text() == "Question 1 of 4" and p.answered
    assert p.part.verdict.text().startswith("Correct") and grid.current == 0
    click(qtbot, grid.cells[3])  # not reached: nothing happens
    assert p.at == 0
    click(qtbot, grid.cells[2])  # the next to answer
    qtbot.waitUntil(lambda: p.at == 2 and not p.answered and not p.busy)
    assert p.item is not first and p.submit_button.isVisible() and grid.current == 2
    answer(qtbot, p, right=True)
    assert grid.state(2) == "right"


def test_question_grid_in_a_timed_exam_says_answered_not_right_or_wrong(qtbot, window):
    p = exam_block(qtbot, window, timed=True, count=3)
    answer(qtbot, p, right=False)  # timed: straight on to the next question
    qtbot.waitUntil(lambda: p.at == 1 and not p.busy)
    click(qtbot, p.skip_button)
    qtbot.waitUntil(lambda: p.at == 2 and not p.busy)
    assert [p.grid.state(i) for i in range(3)] == ["answered", "unanswered", "unanswered"]
    assert "wrong" not in p.grid.cells[0].toolTip()
    click(qtbot, p.grid.cells[0])
    qtbot.waitUntil(lambda: p.at == 0 and not p.busy)
    assert p.position.text() == "Question 1 of 3"


def test_question_grid_in_french_practice_jumps_anywhere(qtbot, window):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0)
    p.dataset.select("frenchmedmcqa-sample")
    p.part.retrieval.retriever.setCurrentIndex(p.part.retrieval.retriever.findData(""))
    p.part.limit.setValue(3)
    p.part.in_order.setChecked(True)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy)
    grid = p.grid
    assert type(grid) is type(window.go("exam").practice.grid)  # one widget for both
    window.go("french")
    for letter in sorted(p.session.items[0]["correct_answers"]):
        p.options.toggle(letter)
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    assert [grid.state(i) for i in range(3)] == ["right", "unanswered", "unanswered"]
    assert all(c.isEnabled() for c in grid.cells[:3])  # questions in any order
    click(qtbot, grid.cells[2])
    qtbot.waitUntil(lambda: p.item.position == 2 and not p.busy)
    assert p.position.text() == "Question 3 of 3" and grid.current == 2
    p.options.toggle("a")
    p.options.toggle("e")
    wrong = sorted(p.session.items[2]["correct_answers"]) != ["a", "e"]
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    assert grid.state(2) == ("wrong" if wrong else "right")
    click(qtbot, p.marks.mark_button)
    assert grid.state(2).endswith("+marked")
    click(qtbot, grid.cells[0])
    qtbot.waitUntil(lambda: p.item.position == 0 and not p.busy)
    assert "Exactly right" in p.part.verdict.text()


def legend_lines(html: str, font, width: int) -> list[str]:
    """The lines of rich text laid out at ``width`` as a label lays it out."""
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setHtml(html)
    doc.setTextWidth(width)
    doc.size()  # lays the text out
    block = doc.firstBlock()
    layout = block.layout()
    return [
        block.text()[line.textStart() : line.textStart() + line.textLength()].strip()
        for line in (layout.lineAt(i) for i in range(layout.lineCount()))
    ]


def test_the_legend_breaks_between_items_never_inside_one(qtbot):
    """At the grid's width, and any width from the widest item's on, each line of the legend
    starts with an item's swatch: "·" or "marked" never begins a line alone."""
    grid = QuestionGrid()
    qtbot.addWidget(grid)
    grid.show()
    qtbot.waitExposed(grid)
    font = grid.legend.font()
    at_grid = legend_lines(grid.legend.text(), font, grid.legend.contentsRect().width())
    assert all(line[:1] in "■⚑" for line in at_grid), at_grid
    for width in range(120, 400, 5):
        lines = legend_lines(grid.legend.text(), font, width)
        assert all(line[:1] in "■⚑" for line in lines), (width, lines)
