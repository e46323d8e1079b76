"""Going over a finished session again is a review, never an exam: untimed, each answer
explained, not a past session nor a point of the trend, its answers the latest ones; and
ending a session early asks first (the app)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.bank.standing import standing
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting, SessionError, missed_items, person_runs
from gui.testing import click_button, message_boxes


def _timed(store, dataset, answers):
    """A timed exam over the first questions, answered ``answers`` (True right, False
    wrong, None skipped), handed in."""
    session = ExamSitting(store, dataset, time_limit_s=900, limit=len(answers))
    for right in answers:
        q = session.next_question()
        wrong = next(letter for letter in "ABCDE" if letter != q["answer"])
        session.answer(None if right is None else q["answer"] if right else wrong)
    return session, session.finish()


def test_review_is_not_exam_in_the_engine(store):
    dataset = ensure_sample(store)
    exam, result = _timed(store, dataset, [True, True, False, True, True])
    assert result.score == 80.0 and result.passed
    with pytest.raises(SessionError, match="no time limit"):
        ExamSitting(store, dataset, keys=result.missed, review_of=exam.run_id, time_limit_s=60)
    review = ExamSitting(store, dataset, keys=result.missed, review_of=exam.run_id)
    assert review.mode == "review" and review.time_left() is None
    q = review.next_question()
    fb = review.answer(q["answer"])  # explained at once, as in practice
    assert fb is not None and fb.correct and fb.explanation == q.get("explanation", "")
    done = review.finish()
    assert done.passed is False and done.mode == "review"
    # Not a past session, not a point of the trend; its answer is the latest one.
    assert [r["id"] for r in person_runs(store, dataset)] == [exam.run_id]
    assert [t["run_id"] for t in standing(store, "default", "exam").trend] == [exam.run_id]
    assert missed_items(store, dataset) == []
    assert store.run(review.run_id)["settings"]["review_of"] == exam.run_id


def test_review_is_not_exam_even_when_quit_or_all_wrong(store):
    dataset = ensure_sample(store)
    exam, result = _timed(store, dataset, [False, None])
    review = ExamSitting(store, dataset, keys=result.missed, review_of=exam.run_id)
    q = review.next_question()
    review.answer(next(letter for letter in "ABCDE" if letter != q["answer"]))
    done = review.finish()  # quit with one left
    assert done.status == "cancelled" and not done.passed
    assert standing(store, "default", "exam").trend[-1]["run_id"] == exam.run_id
    assert len(missed_items(store, dataset)) == 2


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def _answer(qtbot, p, how):
    """Answer the question shown: ``right``, ``wrong`` or ``skip``."""
    n = p.session.index
    if how == "skip":
        click(qtbot, p.skip_button)
    else:
        gold = p.item["answer"]
        letter = gold if how == "right" else next(x for x in "ABCDE" if x != gold)
        click(qtbot, p.options.buttons[letter])
        click(qtbot, p.submit_button)
    shown = lambda: p.at == n + 1 and not p.answered  # noqa: E731 - the next one up
    qtbot.waitUntil(lambda: not p.busy and (shown() or p.stack.currentIndex() == 2))


def _timed_block(qtbot, window, count):
    screen = window.go("exam")
    p = screen.practice
    p.dataset.select("explaincpe-sample")
    p.part.mode_timed.setChecked(True)
    p.part.minutes.setValue(15)
    p.part.count.setValue(count)
    p.part.in_order.setChecked(True)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None)
    tab = screen.tabs.tabText(screen.tabs.indexOf(p))
    assert tab == "Timed exam"
    return screen, p


def test_review_is_not_exam_in_the_app(qtbot, window):
    screen, p = _timed_block(qtbot, window, 3)
    for how in ("right", "wrong", "skip"):
        _answer(qtbot, p, how)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    stats = p.part.report.stats_label.text()
    assert "1 of 3 right · 2 answered · 1 skipped" in stats  # a skip is not an answer
    exam_id = p.part.result.run_id
    missed = list(p.part.result.missed)
    assert len(missed) == 2

    click(qtbot, p.part.report.review_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.session.run_id != exam_id)
    assert p.session.mode == "review" and p.session.time_left() is None
    assert screen.tabs.tabText(screen.tabs.indexOf(p)) == "Review"
    assert "left" not in p.part.clock.text()
    assert p.position.text() == "Question 1 of 2"
    assert p.submit_button.text() == "Check answer"
    gold = p.item["answer"]
    click(qtbot, p.options.buttons[gold])
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible())  # explained at once
    assert p.part.explanation.text() == (
        p.item.get("explanation") or "No explanation is given for this one."
    )
    click(qtbot, p.end_button)  # one left: asks first
    qtbot.waitUntil(lambda: bool(message_boxes()))
    click_button(message_boxes()[0], "End session")
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert p.part.report.session_label.text().startswith("Review")
    assert "not counted as an exam" in p.part.report.pass_label.text()

    # Past sessions and the trend: the exam only, its score unchanged.
    store = window.ctx.store
    assert [r["id"] for r in person_runs(store, "explaincpe-sample")] == [exam_id]
    assert p.part.past.rowCount() == 1
    trend = standing(store, "default", "exam").trend
    assert [(t["run_id"], round(t["score"])) for t in trend] == [(exam_id, 33)]
    assert missed_items(store, "explaincpe-sample") == missed[1:]


def test_review_is_not_exam_all_and_marked_questions(qtbot, window):
    screen, p = _timed_block(qtbot, window, 2)
    _answer(qtbot, p, "right")
    _answer(qtbot, p, "right")
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert not p.part.report.review_button.isEnabled()  # nothing missed
    click(qtbot, p.part.report.review_marked)  # nothing marked: no session
    assert p.stack.currentIndex() == 2
    exam_id = p.part.result.run_id
    click(qtbot, p.part.report.review_all)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.session.run_id != exam_id)
    assert p.session.mode == "review" and p.position.text() == "Question 1 of 2"


def test_review_is_not_exam_ending_a_timed_exam_asks_first(qtbot, window):
    screen, p = _timed_block(qtbot, window, 2)
    _answer(qtbot, p, "right")
    click(qtbot, p.end_button)
    qtbot.waitUntil(lambda: bool(message_boxes()))
    assert "1 question(s) not answered yet count as wrong" in message_boxes()[0].text()
    click_button(message_boxes()[0], "Keep going")
    qtbot.wait(50)
    assert p.stack.currentIndex() == 1 and not p.session.finished
    click(qtbot, p.end_button)
    qtbot.waitUntil(lambda: bool(message_boxes()))
    click_button(message_boxes()[0], "End session")
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert p.part.result.status == "cancelled" and p.part.result.score == 50.0
    # Past sessions says it as Results does: ended early, not "not passed".
    past = p.part.past.index(0, 3).data()
    assert past == "cancelled"
