"""What the app's shared screens show of an activity comes from its descriptor: an activity
registered here (and removed after each test) with subject fields, a review card or a page
of its own appears in Where I stand and the Notebook's filter with no edit to the app; the
run panel's per-answer score column and the import dialog's data sets follow the activity's
scorers and the importer's registration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QLabel

from engine.activities import Activity
from engine.registry import CLASS, FUNCTION, Lazy, register, unregister
from gui.widgets.qt_import import ImportDialog
from gui.widgets.qt_notebook import notebook_activities
from gui.widgets.qt_standing import empty_text

pytestmark = pytest.mark.gui


class TallyPage(QLabel):
    """The Where I stand page of the test's activity: nothing until ``tallies`` are set."""

    empty = "Tally something first."
    tallies = 0

    def __init__(self, ctx: object) -> None:
        super().__init__("")

    def show_standing(self, profile: str) -> str | None:
        if not TallyPage.tallies:
            return None
        self.setText(f"{profile}: {TallyPage.tallies}")
        return f"{TallyPage.tallies} tallies"


def no_card(item: dict) -> None:
    """The test's quiz's review card: named (its items are reviewed), never drawn here."""


@pytest.fixture
def added() -> Iterator[None]:
    quiz = Activity(
        "quiz",
        "Quiz",
        "accuracy",
        "question",
        topic_fields=("topic",),
        card=Lazy(__name__, "no_card", FUNCTION),
    )
    tally = Activity(
        "tally", "Tally", "accuracy", "item", standing=Lazy(__name__, "TallyPage", CLASS)
    )
    register("activity", quiz)
    register("activity", tally)
    yield
    unregister("activity", "quiz")
    unregister("activity", "tally")
    TallyPage.tallies = 0


def test_where_i_stand_shows_the_activities_descriptors_bring(qtbot, window, added):
    r = window.go("review")
    r.tabs.setCurrentWidget(r.standing)
    st = r.standing
    shown = [st.activity.itemData(i) for i in range(st.activity.count())]
    assert shown == ["exam", "french", "quiz", "consult", "tally"]

    st.activity.setCurrentIndex(st.activity.findData("quiz"))
    assert st.stack.currentIndex() == 0 and st.empty.text() == empty_text("quiz")
    assert st.empty.text().startswith("Answer some questions in Quiz → Practice first")

    st.activity.setCurrentIndex(st.activity.findData("tally"))
    assert st.stack.currentIndex() == 0 and st.empty.text() == "Tally something first."
    TallyPage.tallies = 3
    st.refresh()
    page = st.page("tally")
    assert isinstance(page, TallyPage) and st.stack.currentWidget() is page
    assert st.summary.text() == "3 tallies" and page.text() == "default: 3"


def test_the_notebook_filters_by_the_activities_reviewed(added):
    assert notebook_activities() == [
        ("", "All activities"),
        ("exam", "Exam"),
        ("french", "French QA"),
        ("quiz", "Quiz"),
    ]


def test_a_score_per_answer_is_a_column_of_the_run_panel_unless_the_headline_is_accuracy(
    window,
):
    exam = [title for title, _ in window.go("exam").evaluation.rows.columns]
    french = [title for title, _ in window.go("french").runs.rows.columns]
    assert exam == ["", "#", "Question", "Chose", "Answer"]
    assert french == [*exam, "Hamming score"]


def test_a_corpus_from_a_data_set_lists_the_french_sets(qtbot, window):
    from engine.exam.dataset import ensure_sample as exam_sample
    from engine.french.dataset import ensure_sample as french_sample

    exam = exam_sample(window.ctx.store)
    french = french_sample(window.ctx.store)["dataset"]
    d = ImportDialog(window.ctx, "corpus", window)
    qtbot.addWidget(d)
    d.format.setCurrentIndex(d.format.findData("dataset"))
    sets = [d.dataset.itemData(i) for i in range(d.dataset.count())]
    assert french in sets and exam not in sets
    assert d.name.text() == f"{sets[0]}-passages" and not d.path.isVisibleTo(d)
