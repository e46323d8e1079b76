"""The keyboard and flow of the practice screens: a–e and 1–5 choose everywhere (French
practice ticks and unticks), Check refuses an empty answer and says so, Previous and Next
within a block, options struck through (Shift+letter or a right-click), a per-question
clock in a timed exam, and the Review buttons with their next interval. (Rate explanations
taking keys as soon as it opens is tested on the real platform: test_gui_platform.)"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting

pytestmark = pytest.mark.gui
LONG = 300_000


def click(qtbot: Any, widget: Any, button: Qt.MouseButton = Qt.MouseButton.LeftButton) -> None:
    qtbot.mouseClick(widget, button)


def key(qtbot: Any, page: Any, text: str, shift: bool = False) -> None:
    """Press ``text`` where the page's keyboard focus is (the page itself without one)."""
    target = page.focusWidget() or page
    modifier = Qt.KeyboardModifier.ShiftModifier if shift else Qt.KeyboardModifier.NoModifier
    qtbot.keyClick(target, text, modifier)


def start_french(qtbot: Any, window: Any, limit: int = 3) -> Any:
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    p.dataset.select("frenchmedmcqa-sample")
    p.part.retrieval.retriever.setCurrentIndex(p.part.retrieval.retriever.findData(""))
    p.part.limit.setValue(limit)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    return p


def start_exam(qtbot: Any, window: Any, count: int = 3, timed: bool = False) -> Any:
    p = window.go("exam").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("explaincpe-sample") >= 0, timeout=LONG)
    p.dataset.select("explaincpe-sample")
    (p.part.mode_timed if timed else p.part.mode_practice).setChecked(True)
    p.part.count.setValue(count)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None and not p.busy)
    return p


def test_french_keys_a_to_e_and_1_to_5_tick_and_untick(qtbot, window):
    p = start_french(qtbot, window)
    key(qtbot, p, "a")
    key(qtbot, p, "c")
    assert p.options.selected() == ["a", "c"]  # several answers may be right: keys toggle
    key(qtbot, p, "a")
    key(qtbot, p, "5")
    assert p.options.selected() == ["c", "e"]
    key(qtbot, p, "b", shift=True)  # strikes b through
    assert p.options.struck() == ["b"] and p.options.selected() == ["c", "e"]
    qtbot.keyClick(p.focusWidget() or p, Qt.Key.Key_Return)  # Enter checks
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    assert window.ctx.store.answers(p.session.run_id)[0]["extra"]["pred"] == ["c", "e"]
    key(qtbot, p, "a")  # answered: the keys change nothing
    assert p.options.selected() == []


def test_french_check_refuses_an_empty_answer(qtbot, window):
    p = start_french(qtbot, window)
    assert p.options.selected() == []
    click(qtbot, p.submit_button)
    assert "at least one option" in p.hint.text()
    assert p.part.verdict.text() == "" and p.submit_button.isVisible()  # not graded
    assert window.ctx.store.answers(p.session.run_id) == []
    key(qtbot, p, "d")
    assert p.hint.text() == ""


def test_exam_check_refuses_an_empty_answer(qtbot, window):
    p = start_exam(qtbot, window, count=2)
    qtbot.keyClick(p.focusWidget() or p, Qt.Key.Key_Return)
    assert "Choose an option first" in p.hint.text()
    click(qtbot, p.submit_button)
    assert not p.part.feedback.isVisible() and p.session.index == 0
    assert window.ctx.store.answers(p.session.run_id) == []


def test_exam_strike_through_by_key_and_right_click(qtbot, window):
    p = start_exam(qtbot, window, count=2)
    key(qtbot, p, "2")  # 1–5 choose as a–e do
    assert p.options.selected() == ["B"]
    key(qtbot, p, "b", shift=True)  # struck through: no longer chosen
    assert p.options.struck() == ["B"] and p.options.selected() == []
    b = p.options.buttons["B"]
    assert b.property("struck") is True and b.label.font().strikeOut()  # shown struck
    click(qtbot, p.options.buttons["D"], Qt.MouseButton.RightButton)
    assert p.options.struck() == ["B", "D"]
    click(qtbot, p.options.buttons["D"], Qt.MouseButton.RightButton)  # and back
    assert p.options.struck() == ["B"] and not p.options.buttons["D"].label.font().strikeOut()
    key(qtbot, p, "b")  # choosing a struck option takes the stroke away
    assert p.options.selected() == ["B"] and p.options.struck() == []


def test_exam_previous_and_next_within_a_block(qtbot, window):
    p = start_exam(qtbot, window, count=3)
    assert not p.previous_button.isEnabled()
    first = p.item
    wrong = next(x for x in "ABCDE" if x != first["answer"])
    p.options.toggle(wrong)
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible() and not p.busy)
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 3" and not p.busy)
    second = p.item
    key(qtbot, p, "c", shift=True)
    key(qtbot, p, "a")

    click(qtbot, p.previous_button)  # the first, as answered, with its verdict
    assert p.position.text() == "Question 1 of 3" and p.item["id"] == first["id"]
    assert p.options.buttons[wrong].state == "wrong"
    assert p.options.buttons[first["answer"]].state == "correct"
    assert p.part.feedback.isVisible() and p.part.verdict.text().startswith("Not quite")
    assert not p.submit_button.isVisible() and not p.previous_button.isEnabled()
    key(qtbot, p, "b")  # answered: nothing to choose
    assert p.options.buttons[wrong].state == "wrong"

    click(qtbot, p.next_button)  # back to the second, as it was left
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 3" and not p.busy)
    assert p.item["id"] == second["id"] and p.submit_button.isVisible()
    assert p.options.selected() == ["A"] and p.options.struck() == ["C"]
    assert not p.part.feedback.isVisible()
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible() and not p.busy)
    assert p.session.index == 2
    assert [a["item_key"] for a in window.ctx.store.answers(p.session.run_id)] == [
        str(first["id"]),
        str(second["id"]),
    ]


def test_timed_exam_times_each_question_and_goes_back(qtbot, window):
    p = start_exam(qtbot, window, count=2, timed=True)
    assert " · " in p.part.clock.text() and p.part.clock.text().endswith("left")  # question · left
    chosen = p.item["answer"]
    p.options.toggle(chosen)
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 2" and not p.busy)
    click(qtbot, p.previous_button)  # your answer, no verdict before the end
    assert p.options.selected() == [chosen] and not p.part.feedback.isVisible()
    assert p.options.buttons[chosen].locked
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.submit_button.isVisible() and not p.busy)
    assert p.position.text() == "Question 2 of 2"


def test_french_previous_and_next_within_a_block(qtbot, window):
    p = start_french(qtbot, window, limit=3)
    first = p.item.id
    key(qtbot, p, "a")
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    verdict = p.part.verdict.text()
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.item.position == 1 and not p.busy)
    key(qtbot, p, "b")
    key(qtbot, p, "d", shift=True)
    click(qtbot, p.previous_button)
    qtbot.waitUntil(lambda: p.item.position == 0 and not p.busy)
    assert p.item.id == first and p.part.verdict.text() == verdict  # answered: its verdict
    assert not p.submit_button.isVisible()
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.item.position == 1 and not p.busy)
    assert p.options.selected() == ["b"] and p.options.struck() == ["d"]
    assert p.submit_button.isVisible() and p.part.verdict.text() == ""
    click(qtbot, p.next_button)  # on without answering: the third
    qtbot.waitUntil(lambda: p.item.position == 2 and not p.busy)
    assert p.position.text() == "Question 3 of 3"


def missed_one(store: Any) -> None:
    session = ExamSitting(store, ensure_sample(store), limit=1)
    q = session.next_question()
    session.answer(next(x for x in "ABCDE" if x != q["answer"]))
    session.finish()


def test_review_buttons_show_their_intervals_and_keys_choose(qtbot, window):
    missed_one(window.ctx.store)
    r = window.go("review")
    click(qtbot, r.start_button)
    click(qtbot, r.check_button)  # nothing chosen: refused, said
    assert "Choose an option first" in r.hint.text() and r.feedback is None
    gold = r.current.face.gold[0]
    key(qtbot, r, str("ABCDE".index(gold) + 1))  # 1–5 choose before the answer
    assert r.options.selected() == [gold]
    click(qtbot, r.check_button)
    texts = {name: b.text() for name, b in r.rate_buttons.items()}
    assert texts["again"] == "1 Again · 1m"  # still learning: the 1-minute step
    assert texts["good"].startswith("3 Good · ") and texts["good"].endswith("d")  # days
    waits = r.session.intervals()  # the scheduler's, before fuzz
    for i, name in enumerate(("again", "hard", "good", "easy"), start=1):
        assert texts[name] == f"{i} {name.capitalize()} · {waits[name]}"
    session = r.session
    key(qtbot, r, "3")  # 1–4 rate once answered
    assert session.reviewed[-1][1].last_rating == 3
