"""The Exam screen, driven end to end: a practice session with feedback and a streamed model
explanation, the report with missed questions to review, a timed exam, and a model
evaluation that is stopped and resumed. The model is the real embedded one."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.review import due_cards
from gui.testing import click_button, message_boxes

pytestmark = [pytest.mark.gui, pytest.mark.usefixtures("chat_model")]
LONG = 240_000


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_practice_session_with_feedback_explanation_and_review(qtbot, window):
    p = window.go("exam").practice
    p.dataset.select("explaincpe-sample")
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(2)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None)
    assert p.position.text() == "Question 1 of 2"
    assert len(p.options.buttons) == 5

    # Question 1: the right answer, clicked.
    gold = p.item["answer"]
    click(qtbot, p.options.buttons[gold])
    assert p.submit_button.isEnabled()
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible())
    assert p.part.verdict.text().startswith("Correct")
    assert p.part.explanation.text() == p.item["explanation"]
    assert p.options.buttons[gold].state == "correct"

    # The model explains, streamed; stopping keeps what it wrote.
    click(qtbot, p.part.explain_button)
    qtbot.waitUntil(lambda: p.part.model_text.toPlainText().strip() != "", timeout=LONG)
    click(qtbot, p.part.explain_stop)
    qtbot.waitUntil(lambda: p.part.explain_job is None, timeout=LONG)
    run_id = p.session.run_id
    turns = window.ctx.store.turns(run_id)
    assert turns and turns[0]["role"] == "model" and turns[0]["text"]

    # Question 2: a wrong answer.
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 2" and not p.answered)
    wrong = next(letter for letter in "ABCDE" if letter != p.item["answer"])
    second = p.item
    qtbot.keyClick(p, wrong.lower())  # the letter keys choose an option
    assert p.options.selected() == [wrong]
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible())
    assert p.part.verdict.text().startswith("Not quite")
    assert p.options.buttons[wrong].state == "wrong"

    # The report: 1 of 2, the missed question to review.
    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert p.part.report.score_label.text() == "50.0%"
    assert p.part.report.pass_label.text() == "Not passed — the pass mark is 60.0%"
    assert second["question"] in p.part.report.missed_view.toPlainText()
    run = window.ctx.store.run(run_id)
    assert run["runner"] == "person" and run["status"] == "finished"
    assert run["summary"]["score"] == 50.0

    # Reviewing replays only the missed question.
    assert p.part.report.review_button.isEnabled()
    click(qtbot, p.part.report.review_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.session.run_id != run_id)
    assert p.position.text() == "Question 1 of 1"
    assert p.item["id"] == second["id"]


def test_timed_exam_gives_no_feedback_until_the_end(qtbot, window):
    p = window.go("exam").practice
    p.part.mode_timed.setChecked(True)
    p.part.minutes.setValue(5)
    p.part.count.setValue(2)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None)
    assert "left" in p.part.clock.text()
    p.options.toggle(p.item["answer"])
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 2" and not p.busy)
    assert not p.part.feedback.isVisible()
    click(qtbot, p.end_button)  # ends early: the second question counts as wrong
    box = message_boxes()[0]  # it asks first
    assert "count as wrong" in box.text()
    click_button(box, "End session")
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert p.part.result.score == 50.0 and p.part.result.status == "cancelled"
    assert "ended early" in p.part.report.stats_label.text()


def test_practice_answers_go_to_the_chosen_review_profile(qtbot, window):
    window.go("review").add_profile("kim")  # picked on the Review screen
    p = window.go("exam").practice
    p.dataset.select("explaincpe-sample")
    assert "'kim'" in p.part.profile_note.text()
    p.part.mode_practice.setChecked(True)
    p.part.only_missed.setChecked(False)
    p.part.count.setValue(1)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None)
    wrong = next(letter for letter in "ABCDE" if letter != p.item["answer"])
    click(qtbot, p.options.buttons[wrong])
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible())
    store = window.ctx.store
    assert [c.item_key for c in due_cards(store, "kim")] == [p.item["id"]]
    assert due_cards(store, "default") == []
    assert store.run(p.session.run_id)["settings"]["profile"] == "kim"


def test_the_sidebar_counts_missed_questions_when_a_practice_ends(qtbot, window):
    review = window.nav.item(next(i for i, s in enumerate(window.screen_list) if s.key == "review"))
    assert "due" not in review.text()
    p = window.go("exam").practice
    p.dataset.select("explaincpe-sample")
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(1)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None)
    wrong = next(letter for letter in "ABCDE" if letter != p.item["answer"])
    click(qtbot, p.options.buttons[wrong])
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.feedback.isVisible())
    click(qtbot, p.next_button)  # the last question: the session ends
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    assert window.stack.currentWidget() is window.screen("exam")  # no other screen shown
    assert "(1 due)" in review.text()


def test_model_evaluation_stops_and_resumes(qtbot, window):
    ev = window.go("exam").evaluation
    window.window().activateWindow()
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    ev.dataset.select("explaincpe-sample")
    ev.fields["model"].setCurrentIndex(ev.fields["model"].findData("smollm2"))
    ev.fields["method"].setCurrentIndex(ev.fields["method"].findData("logprob"))
    ev.fields["shots"].setCurrentIndex(ev.fields["shots"].findData(0))
    ev.limit.setValue(3)
    ev.at_once.setValue(1)  # one at a time: the Stop below comes before the last answer
    click(qtbot, ev.run_button)
    qtbot.waitUntil(lambda: len(ev.answers) >= 1, timeout=LONG)
    click(qtbot, ev.progress.stop)
    qtbot.waitUntil(lambda: ev.job is None, timeout=LONG)
    run = window.ctx.store.runs("exam")[0]
    assert run["runner"] == "model" and run["model"] == "smollm2"
    assert run["status"] == "cancelled" and run["n_done"] < 3
    assert ev.live.text().endswith("%")

    # Resume it: the remaining questions are answered, none twice.
    assert ev.resumable.currentData() == run["id"]
    click(qtbot, ev.resume_button)
    qtbot.waitUntil(
        lambda: ev.job is None and window.ctx.store.run(run["id"])["status"] == "finished",
        timeout=LONG,
    )
    answers = window.ctx.store.answers(run["id"])
    assert sorted(a["item_key"] for a in answers) == ["sample-01", "sample-02", "sample-03"]
    assert "Run #" in ev.summary.text() and "finished" in ev.summary.text()
