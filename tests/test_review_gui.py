"""The Review screen, driven with pytest-qt: the due count in the sidebar, a session with
feedback, the gold explanation and the rating, the charts, profiles and the Anki export."""

from __future__ import annotations

import zipfile

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting

pytestmark = pytest.mark.gui


def missed_two(store) -> list[dict]:
    """An exam session of three questions: the first and the third answered wrong."""
    dataset = ensure_sample(store)
    session = ExamSitting(store, dataset, limit=3)
    asked = []
    for i in range(3):
        q = session.next_question()
        asked.append(q)
        session.answer(q["answer"] if i == 1 else next(x for x in "ABCDE" if x != q["answer"]))
    session.finish()
    return asked


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def nav_text(window) -> str:
    row = [i for i in range(window.nav.count()) if window.nav.item(i).text().startswith("Review")]
    return window.nav.item(row[0]).text()


def test_a_review_session_on_the_screen(qtbot, window, tmp_path):
    asked = missed_two(window.ctx.store)
    r = window.go("review")
    assert nav_text(window) == "Review  (2 due)"
    assert r.due_label.text() == "2 due now" and r.start_button.isEnabled()
    assert r.profile.currentText() == "default"
    assert r.due_view.chart().series()[0].barSets()[0].at(0) == 2.0
    assert r.mastery_view.chart().series()  # bars by topic

    click(qtbot, r.start_button)
    assert r.stack.currentIndex() == 1 and r.position.text() == "Card 1 · 2 due"
    assert r.question.text() == asked[0]["question"] and len(r.options.buttons) == 5
    click(qtbot, r.check_button)  # nothing chosen: refused, with why
    assert r.feedback is None and "Choose an option first" in r.hint.text()
    window.activateWindow()
    qtbot.waitUntil(lambda: r.isAncestorOf(window.focusWidget() or window))
    qtbot.keyClick(window.focusWidget(), asked[0]["answer"].lower())  # a letter selects
    assert r.options.selected() == [asked[0]["answer"]]
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Return)  # Enter checks
    assert r.feedback_card.isVisible() and r.verdict.text().startswith("Correct")
    assert r.explanation.text() == asked[0]["explanation"]
    assert r.rate_buttons["good"].property("kind") == "primary"  # the suggestion
    assert all(b.isVisible() for b in r.rate_buttons.values())
    click(qtbot, r.rate_buttons["easy"])  # the person's rating wins

    assert r.question.text() == asked[2]["question"]
    click(qtbot, r.skip_button)
    assert r.verdict.text().startswith("Not quite")
    assert r.options.buttons[asked[2]["answer"]].state == "correct"
    assert r.rate_buttons["again"].property("kind") == "primary"
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_1)  # 1-4 rate
    # Missed again: it comes back in the same session; End leaves it due.
    assert r.question.text() == asked[2]["question"] and r.position.text().startswith("Card 3")
    click(qtbot, r.end_button)
    assert r.stack.currentIndex() == 0 and r.due_label.text() == "1 due now"
    assert nav_text(window) == "Review  (1 due)"

    r.only_missed.setChecked(True)
    result = r.export_to(str(tmp_path / "missed.apkg"))
    assert result is not None and result["notes"] == 1
    assert zipfile.is_zipfile(tmp_path / "missed.apkg")


def test_profiles_are_picked_and_kept_apart(qtbot, window):
    missed_two(window.ctx.store)
    r = window.go("review")
    r.add_profile("kim")
    assert r.profile.currentText() == "kim" and [
        r.profile.itemText(i) for i in range(r.profile.count())
    ] == ["default", "kim"]
    assert r.due_label.text() == "Nothing due now" and not r.start_button.isEnabled()
    assert not r.export_button.isEnabled()
    assert nav_text(window) == "Review"
    r.profile.setCurrentText("default")
    assert r.due_label.text() == "2 due now"
