"""The Review screen's Notebook and Where I stand tabs, driven with pytest-qt: marked and
noted questions listed and filtered, a note edited in the view and stored, a mark taken
off, the marked questions practised; the score per subject beside two models' scores on
the same questions, the trend, why questions were missed, and the empty states."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.bank.notebook import entries, entry, mark, set_note, set_reason
from engine.consult.cases.cases import ensure_sample as consult_sample
from engine.consult.cases.cases import get_case
from engine.consult.doctor.person import finish_person_consultation, start_person_consultation
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.models.scripted import ScriptedModel
from gui.widgets.qt_notebook import EMPTY as EMPTY_NOTEBOOK
from gui.widgets.qt_notebook import NONE_MATCH
from gui.widgets.qt_standing import empty_text

pytestmark = pytest.mark.gui

#: The letters the person gives to the 14 sample questions, in order.
PERSON = "BDCBAACDEBCAAD"
#: Each scripted model answers every question with one letter.
MODELS = {"model-a": "B", "model-b": "D"}


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def cells(nb) -> list[list[str]]:
    model = nb.model
    return [
        [model.index(r, c).data() for c in range(model.columnCount())]
        for r in range(model.rowCount())
    ]


def keys(nb) -> list[str]:
    return [str(r["item_key"]) for r in nb.model.rows]


def select(nb, key: str) -> None:
    nb.table.selectRow(keys(nb).index(key))
    assert nb.current is not None and nb.current.item_key == key


def notebook(window):
    r = window.go("review")
    r.tabs.setCurrentWidget(r.notebook)
    return r.notebook


def test_the_notebook_lists_filters_edits_and_unmarks(qtbot, window):
    store = window.ctx.store
    dataset = ensure_sample(store)
    nb = notebook(window)
    assert nb.model.rowCount() == 0 and nb.question.text() == EMPTY_NOTEBOOK
    mark(store, "default", "exam", dataset, "sample-03")
    set_note(store, "default", "exam", dataset, "sample-05", "warfarin: watch the INR")
    set_reason(store, "default", "exam", dataset, "sample-05", "misread")
    window.go("exam")
    nb = notebook(window)  # shown again: listed
    question = store.items_by_key(dataset)["sample-03"]["question"]

    assert keys(nb) == ["sample-05", "sample-03"]  # newest change first
    noted, marked = cells(nb)
    assert noted[:2] == [dataset, "5"] and noted[3] == ""
    assert noted[4:6] == ["Misread the question", "warfarin: watch the INR"]
    assert marked[:2] == [dataset, "3"] and marked[3] == "★" and marked[5] == ""
    assert question.startswith(marked[2].rstrip("…"))
    assert nb.count.text() == "2 questions"

    nb.marked_only.setChecked(True)
    assert keys(nb) == ["sample-03"]
    nb.marked_only.setChecked(False)
    nb.with_note.setChecked(True)
    assert keys(nb) == ["sample-05"]
    nb.with_note.setChecked(False)
    nb.search.setText("inr")
    assert keys(nb) == ["sample-05"]
    nb.search.setText("aspirin")
    assert keys(nb) == [] and nb.count.text() == NONE_MATCH
    nb.search.clear()
    nb.activity.setCurrentIndex(nb.activity.findData("french"))
    assert keys(nb) == []
    nb.activity.setCurrentIndex(nb.activity.findData(""))
    assert len(keys(nb)) == 2

    # The selected question in full: its gold option revealed, its note editable.
    select(nb, "sample-03")
    assert nb.question.text() == question
    options = store.items_by_key(dataset)["sample-03"]["options"]
    assert all(option in nb.options.text() for option in options)
    assert f"<b>B. {options[1]} ✓</b>" in nb.options.text()
    assert nb.gold.text().startswith("Answer: B.")
    assert nb.mark_button.text() == "Unmark"
    window.activateWindow()
    nb.note.setFocus()
    qtbot.waitUntil(nb.note.hasFocus)
    qtbot.keyClicks(nb.note, "calcium: check the dose")
    qtbot.keyClick(nb.note, Qt.Key.Key_Return)  # Enter keeps it
    assert entry(store, "default", dataset, "sample-03").note == "calcium: check the dose"
    assert cells(nb)[keys(nb).index("sample-03")][5] == "calcium: check the dose"
    qtbot.keyClicks(nb.note, " twice")
    nb.search.setFocus()  # leaving the box keeps it too
    qtbot.waitUntil(lambda: not nb.note.hasFocus())
    assert entry(store, "default", dataset, "sample-03").note == "calcium: check the dose twice"

    nb.reason.setCurrentIndex(nb.reason.findData("knowledge"))
    nb.reason.activated.emit(nb.reason.currentIndex())
    assert entry(store, "default", dataset, "sample-03").reason == "knowledge"

    click(qtbot, nb.mark_button)
    assert not entry(store, "default", dataset, "sample-03").marked
    assert cells(nb)[keys(nb).index("sample-03")][3] == ""
    assert nb.current.item_key == "sample-03" and nb.mark_button.text() == "Mark"
    assert entries(store, "default", marked=True) == []
    assert not nb.practise_button.isEnabled()


def test_practise_marked_starts_an_exam_session_of_those_questions(qtbot, window):
    store = window.ctx.store
    dataset = ensure_sample(store)
    for key in ("sample-07", "sample-02"):
        mark(store, "default", "exam", dataset, key)
    nb = notebook(window)
    select(nb, "sample-02")
    assert nb.practise_button.text() == "Practise marked (2)"
    click(qtbot, nb.practise_button)
    practice = window.go("exam").practice
    qtbot.waitUntil(lambda: practice.session is not None and not practice.busy)
    questions = [q["id"] for q in practice.session.questions]  # drawn in a random order
    assert sorted(questions) == ["sample-02", "sample-07"]
    assert practice.item["id"] == questions[0]


def test_practise_marked_during_a_session_says_so_and_keeps_it(qtbot, window, monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(
        "gui.widgets.qt_notebook.show_error", lambda _parent, exc, *_: said.append(str(exc))
    )
    store = window.ctx.store
    dataset = ensure_sample(store)
    mark(store, "default", "exam", dataset, "sample-03")
    nb = notebook(window)
    select(nb, "sample-03")
    click(qtbot, nb.practise_button)
    practice = window.go("exam").practice
    qtbot.waitUntil(lambda: practice.session is not None and not practice.busy)
    session = practice.session
    nb = notebook(window)
    select(nb, "sample-03")
    click(qtbot, nb.practise_button)  # the window shows Exam, whose session is under way
    assert said == ["A session is under way in Exam → Practice: end it first."]
    assert practice.session is session and window.stack.currentWidget() is window.screen("exam")


def model_runs(store, scripted_pool) -> None:
    """The two scripted models each answer the 14 sample questions with their letter."""
    for name, letter in MODELS.items():
        reply = f"答案：{letter}\n解析：本题考查药物的作用，{letter}正确。"
        pool = scripted_pool(ScriptedModel(name, replies=reply))
        settings = {"model": name, "limit": 14, "method": "generate"}
        assert run(store, "exam", "explaincpe-sample", settings, pool=pool)["n"] == 14


def person_session(store) -> None:
    session = ExamSitting(store, "explaincpe-sample", limit=14)
    for letter in PERSON:
        session.next_question()
        session.answer(letter)
    session.finish()


def test_where_i_stand_beside_two_models(qtbot, window, scripted_pool):
    store = window.ctx.store
    dataset = ensure_sample(store)
    r = window.go("review")
    r.tabs.setCurrentWidget(r.standing)
    st = r.standing
    assert [st.activity.itemData(i) for i in range(st.activity.count())] == [
        "exam",
        "french",
        "consult",
    ]
    assert st.stack.currentIndex() == 0 and st.empty.text() == empty_text("exam")
    assert "Answer some questions in Exam → Practice first" in st.empty.text()
    st.activity.setCurrentIndex(st.activity.findData("consult"))
    assert st.empty.text() == empty_text("consult")
    assert st.empty.text().startswith("See a patient in Consultation first")
    st.activity.setCurrentIndex(st.activity.findData("exam"))

    model_runs(store, scripted_pool)
    person_session(store)
    set_reason(store, "default", "exam", dataset, "sample-01", "knowledge")
    window.ctx.notify_runs()  # the tab on screen follows the runs
    assert st.stack.currentIndex() == 1

    # By hand: the 药品知识题 questions among the 14, the person's letters and the models'.
    items = store.items(dataset)
    drugs = [i for i, item in enumerate(items) if item["type2"] == "药品知识题"]
    gold = [items[i]["answer"] for i in drugs]
    mine = sum(PERSON[i] == g for i, g in zip(drugs, gold, strict=True))
    expected = {
        "Subject": "药品知识题",
        "Answered": str(len(drugs)),
        "Right": str(mine),
        "You": f"{100 * mine / len(drugs):.0f}%",
    }
    for name, letter in MODELS.items():
        expected[name] = f"{100 * sum(g == letter for g in gold) / len(drugs):.0f}%"
    assert st.subjects.cells("药品知识题", "type2") == expected
    # Questions 1 2 4 5 8 9 11 12, gold B D B D C E C D: the person is right on 5, B on 2,
    # D on 3.
    assert list(expected.values())[1:] == ["8", "5", "62%", "25%", "38%"]

    headings = [row for row in st.subjects.rows if isinstance(row, str)]
    assert headings == ["Wording", "Kind of question", "Subject"]
    right = sum(p == item["answer"] for p, item in zip(PERSON, items, strict=True))
    assert st.summary.text().startswith(f"You: {right} of 14 questions right")
    assert "Knowledge gap: <b>1</b>" in st.reasons.text()
    points = st.trend_view.chart().series()[0]
    assert points.count() == 1 and points.at(0).y() == pytest.approx(100 * right / 14, abs=0.05)
    for subject in st.subjects.work_first:
        assert subject in st.work_first.text()


def test_where_i_stand_in_the_consultation_is_the_practice_log(qtbot, window):
    store = window.ctx.store
    dataset = consult_sample(store)
    case = get_case(store, dataset, "sample-01")
    patient = ScriptedModel("patient", replies="I am 22 years old.")
    for answer in ("b", "a"):  # B is the case's answer
        consultation = start_person_consultation(store, dataset, case, patient, max_turns=2)
        consultation.ask("What is your age?")
        finish_person_consultation(consultation, answer)
    r = window.go("review")
    r.tabs.setCurrentWidget(r.standing)
    st = r.standing
    st.activity.setCurrentIndex(st.activity.findData("consult"))
    log = st.page("consult")
    assert st.stack.currentWidget() is log and st.stack.currentIndex() == 2
    assert st.summary.text() == "2 consultations, 1 right diagnosis"
    facts = len(case.facts)
    shown = [[log.cases.index(i, c).data() for c in (1, 2, 3)] for i in range(2)]
    assert shown == [
        ["sample-01", "wrong", f"1 of {facts}"],
        ["sample-01", "right", f"1 of {facts}"],
    ]
    assert log.facts_view.chart().series()[0].count() == 2
    assert (
        "Age" not in log.most_missed.text()
        and f"{case.facts[1].key}: <b>2</b>" in log.most_missed.text()
    )


def test_imported_html_is_shown_as_plain_text(qtbot, window):
    """A question or explanation holding HTML (an image 30000 pixels wide, bold) is shown as
    typed, in the Notebook and in practice, and does not size the view."""
    store = window.ctx.store
    img = "<img width=30000 height=30000 src='x.png'>"
    item = {"id": "h1", "question": f"{img}<b>Which?</b>", "options": ["甲", "乙"],
            "answer": "A", "explanation": f"<h1>Because</h1>{img}", "type1": "x"}  # fmt: skip
    store.add_dataset("html", "exam", [item])
    mark(store, "default", "exam", "html", "h1")
    window.go("exam")
    nb = notebook(window)
    select(nb, "h1")
    for label in (nb.question, nb.explanation, nb.title, nb.gold, nb.tags):
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert nb.question.text() == f"{img}<b>Which?</b>"  # shown as typed
    assert nb.question.sizeHint().width() < 3000 and nb.explanation.sizeHint().height() < 3000

    p = window.go("exam").practice
    assert p.question.textFormat() == Qt.TextFormat.PlainText
    assert p.part.explanation.textFormat() == Qt.TextFormat.PlainText
