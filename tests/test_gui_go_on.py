"""Exam → Practice's Go on: a past session left before its end (quit, or its app killed) is
answered on where it stopped, its answers kept; a finished one cannot go on."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting

pytestmark = pytest.mark.gui


def test_go_on_answers_the_rest_of_a_quit_session(qtbot, window):
    store = window.ctx.store
    dataset = ensure_sample(store)
    quit_early = ExamSitting(store, dataset, limit=3)
    quit_early.answer(quit_early.next_question()["answer"])
    quit_early.finish()
    done = ExamSitting(store, dataset, limit=1)
    done.answer(done.next_question()["answer"])
    done.finish()

    p = window.go("exam").practice
    p.dataset.select(dataset)
    p.part.refresh()
    places = {int(r["id"]): i for i, r in enumerate(p.part.past.rows)}
    p.part.past_card.table.selectRow(places[done.run_id])
    assert not p.part.past_card.go_button.isEnabled()  # finished: nothing left
    p.part.past_card.table.selectRow(places[quit_early.run_id])
    assert p.part.past_card.go_button.isEnabled()
    qtbot.mouseClick(p.part.past_card.go_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.session is not None)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy)
    assert p.session.run_id == quit_early.run_id
    assert p.position.text() == "Question 2 of 3"
    assert str(p.item["id"]) == str(quit_early.questions[1]["id"])
    p.closing()


def test_french_go_on_answers_the_rest_of_the_last_session(qtbot, window):
    from engine.french.dataset import ensure_sample as french_sample
    from engine.french.person import FrenchSitting

    store = window.ctx.store
    dataset = french_sample(store)["dataset"]
    left = FrenchSitting(store, dataset, limit=3, book="none")
    left.answer("a", position=0)
    left.finish()  # quit after one: cancelled

    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData(dataset) >= 0, timeout=60_000)
    p.dataset.select(dataset)
    p.part.book.setCurrentIndex(p.part.book.findData("none"))
    p._enable()
    assert p.part.go_button.isEnabled()
    qtbot.mouseClick(p.part.go_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=60_000)
    assert p.session.run_id == left.run_id
    assert p.position.text() == "Question 2 of 3" and p.item.id == left.items[1]["id"]
    p.closing()


@pytest.mark.usefixtures("chat_model")
def test_consult_go_on_takes_up_the_dialogue_where_it_stopped(qtbot, window):
    from engine.consult.cases.cases import ensure_sample as cases_sample
    from engine.consult.cases.cases import get_case
    from engine.consult.doctor.person import abandon_person_consultation, start_person_consultation
    from engine.models.scripted import ScriptedModel

    store = window.ctx.store
    dataset = cases_sample(store)
    case = get_case(store, dataset, "sample-01")
    left = start_person_consultation(store, dataset, case, ScriptedModel(replies="I am 22."))
    left.ask("What is your age?")
    abandon_person_consultation(left)  # left before its answer: cancelled

    p = window.go("consult").person
    p.dataset.select(dataset)
    places = [
        p.part.case_list.item(i).data(Qt.ItemDataRole.UserRole).id
        for i in range(p.part.case_list.count())
    ]
    p.part.case_list.setCurrentRow(places.index("sample-01"))
    assert p.part.go_button.isEnabled()
    qtbot.mouseClick(p.part.go_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.session is not None and not p.busy, timeout=240_000)
    assert p.session.run_id == left.run_id
    assert "What is your age?" in p.part.chat.toPlainText()
    assert p.part.left_label.text() == f"{left.max_turns - 1} question(s) left"
    p.closing()
