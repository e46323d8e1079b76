"""French QA's item widget in the practice panel (:class:`gui.widgets.practice.PracticePanel`):
a person answers FrenchMedMCQA questions (one or more right options, in any order, each
once) with the passages a retriever finds for each, the query words highlighted — open book
(with the question), closed book (once answered, with what in them bears on each option) or
none, the choice remembered; the Hamming score and exact match per question and overall.

The setup stays above the questions, as its passages can be changed during a session: the
index a retriever needs is built when it is chosen (or at Start), its progress in the setup
card's progress row with a Cancel button; a cancelled build goes back to the retrieval
chosen before. Retrieval, the highlighted spans and scoring are :mod:`engine.french`'s.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QWidget

from engine.core.progress import Cancelled
from engine.french.book import BOOK_NAMES, BOOK_TIPS, BOOKS
from engine.text.columns import fmt_number
from gui.french.passages import (
    RETRIEVERS,
    RetrievalControls,
    build_message,
    load_retriever,
    passages_html,
    verdict_html,
)
from gui.models import set_setting, setting
from gui.widgets.bank_block import drawn_seed, order_box
from gui.widgets.common import (
    Card,
    ProgressRow,
    add_rows,
    button,
    combo,
    current_profile,
    muted,
    show_error,
    spin_box,
    text_view,
)
from gui.widgets.practice import ItemWidget, Make
from gui.widgets.question_grid import cell_states

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.core.progress import Progress
    from engine.french.index import Index
    from engine.french.person import Feedback, FrenchSitting, QuestionView
    from engine.types import Summary
    from gui.widgets.practice import PracticePanel
    from gui.workers import Job

Retrieval = tuple[str, str, int]  # corpus, retriever, k
SLOW = ("dense", "hybrid")  # retrievers whose index is built as soon as they are chosen


def _percent(value: float) -> str:
    return f"{fmt_number(value, unit='%')}%"


def _stale(text: str) -> str:
    return f"<p style='color:#6b7280'>{text}</p>"


class FrenchItem(ItemWidget):
    """French QA's part of the practice panel (see the module)."""

    multi = True
    setup_above = True
    any_order = True
    ends_at_last = True
    options_hint = "Select every right option (one or more)."
    grid_columns = 4
    stacked_marks = True
    remember = "french"

    def __init__(self, panel: PracticePanel) -> None:
        super().__init__(panel)
        self.building: tuple[str, str] | None = None  # corpus and retriever being indexed
        self._stop_build = threading.Event()
        self._previous: Retrieval | None = None  # the retrieval to go back to on Cancel
        self._shown_after: QuestionView | None = None  # the question once answered
        panel.question.setText("Choose a question set and press Start.")
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        panel.question_card.add(self.verdict)
        self.total = muted(QLabel(""))
        self.total.setWordWrap(True)  # a long line wraps rather than widen the question side
        self.passages = text_view()
        self.passages.setPlaceholderText("Passages show here once you start.")

    # -- building --------------------------------------------------------------------------

    def setup_page(self) -> QWidget:
        """Questions and how many on one line; the passages, when they show and Start on the
        next."""
        setup, panel = Card(), self.panel
        self.retrieval = RetrievalControls(self.ctx, "french")
        self.retrieval.retriever.currentIndexChanged.connect(self._retrieval_changed)
        self.retrieval.k.valueChanged.connect(self._retrieval_changed)
        self.retrieval.corpus.currentIndexChanged.connect(self._retrieval_changed)
        self._choice: Retrieval = self.retrieval.values  # the retrieval asked for last
        self.book = combo([(b, BOOK_NAMES[b]) for b in BOOKS], setting("french/book", "open"))
        for i, b in enumerate(BOOKS):
            self.book.setItemData(i, BOOK_TIPS[b], Qt.ItemDataRole.ToolTipRole)
        self.book.currentIndexChanged.connect(self._book_changed)
        self.limit = spin_box(
            0, 100000, setting("french/limit", 0, int), special="All", tip="How many questions"
        )
        self.limit.setMinimumWidth(90)
        self.in_order = order_box("french")
        panel.start_button.setMinimumWidth(110)
        begin = QHBoxLayout()  # when the passages show, then Start
        begin.addWidget(self.book)
        begin.addWidget(panel.start_button, 1)
        self.go_button = button(
            "Go on", self.go_on, "Answer the rest of your last session of these questions"
        )
        begin.addWidget(self.go_button)
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        add_rows(grid, [("Questions", panel.dataset), ("Passages", self.retrieval)])
        how_many = QHBoxLayout()
        how_many.addWidget(self.limit)
        how_many.addWidget(self.in_order)
        add_rows(grid, [("How many", how_many), ("", begin)], column=2)
        grid.setColumnStretch(1, 1)
        setup.add_layout(grid)
        self.build_row = ProgressRow()
        self.build_row.stop.setText("Cancel")
        self.build_row.stop.setToolTip("Stop building the index (nothing is kept)")
        self.build_row.stop_clicked.connect(self.cancel_build)
        self.build_row.setVisible(False)
        setup.add(self.build_row)
        return setup

    def foot(self) -> list[QWidget]:
        return [self.panel.marks.reasons, self.total]

    def beside(self) -> QWidget:
        card = Card("Passages")
        card.add(self.passages, 1)
        return card

    # -- the session -------------------------------------------------------------------------

    def make(self, keys: list[str] | None) -> Make | None:
        from engine.french.person import FrenchSitting

        dataset = self.panel.dataset.name
        if not dataset:
            show_error(self.panel, "Import a French question set first.", self.ctx)
            return None
        corpus, retriever, k = self.retrieval.values
        book = self.book.currentData()
        retriever = "" if book == "none" else retriever
        if retriever and not corpus:
            show_error(
                self.panel,
                "Import a corpus for the passages, or choose “No passages”.",
                self.ctx,
            )
            return None
        limit, seed = self.limit.value() or None, drawn_seed(self.in_order)
        set_setting("french/limit", self.limit.value())
        self.panel.dataset.remember_choice()
        profile = current_profile(self.ctx)

        def sitting(job: Job, index: Index | None) -> FrenchSitting:
            return FrenchSitting(
                job.store,
                dataset,
                limit,
                index,
                k,
                profile=profile,
                keys=keys,
                seed=seed,
                book=book,
            )

        self.passages.setHtml(_stale("Preparing the passages…"))
        return self._with_index(sitting)

    def _left_run(self) -> int | None:
        """Your latest session of these questions if it was left before its end (quit, or
        its app killed): what Go on answers the rest of."""
        from engine.bank.pools import left_session

        name = self.panel.dataset.name
        profile = current_profile(self.ctx)
        return left_session(self.ctx.store, "french", profile, name) if name else None

    def go_on(self) -> None:
        """Go on with :meth:`_left_run` where it stopped, with the passages chosen now."""
        from engine.french.person import FrenchSitting

        run_id, k = self._left_run(), self.retrieval.values[2]
        if run_id is not None:
            self.panel.begin(
                self._with_index(
                    lambda job, index: FrenchSitting.resume(job.store, run_id, index, k)
                )
            )

    def _with_index(self, sitting: Callable[[Job, Index | None], FrenchSitting]) -> Make:
        """Make a sitting with the chosen retriever's index (built first when it is not;
        Cancel stops it), replacing the session under way (not when the build is
        cancelled)."""
        corpus, retriever, _k = self.retrieval.values
        retriever = "" if self.book.currentData() == "none" else retriever
        old = self.panel.session
        stop = self._building(corpus, retriever)

        def make(job: Job) -> tuple[FrenchSitting, QuestionView]:
            index = load_retriever(job, corpus, retriever, stop.is_set)
            if old is not None and not old.done:
                old.finish()
            session = sitting(job, index)
            return session, session.question()

        self._choice, self._previous = self.retrieval.values, None
        return make

    def _building(self, corpus: str, retriever: str) -> threading.Event:
        """An index of ``corpus`` for ``retriever`` may be built by the next engine call: its
        progress shows, and the event returned stops it."""
        self.building = (corpus, retriever)
        self._stop_build = threading.Event()
        return self._stop_build

    def preparing(self, progress: Progress) -> None:
        if self.building is None:
            return
        if not self.build_row.isVisible():
            self.build_row.started(progress.total, "")
            self.build_row.setVisible(True)
            self.passages.setHtml(_stale("The passages show once the index is built."))
        if not self._stop_build.is_set():
            self.build_row.update(progress, build_message(self.building[1], progress))

    def cancel_build(self) -> None:
        """Stop the index being built (nothing of it is kept)."""
        if self.building is not None:
            self._stop_build.set()
            self.build_row.stop.setEnabled(False)
            self.build_row.label.setText("Cancelling…")

    def failed(self, exc: BaseException) -> bool:
        """A cancelled build: back to the retrieval chosen before, with its passages; one
        line says so."""
        if not isinstance(exc, Cancelled):
            return False
        previous = self._previous
        if previous is not None:
            self._choice = previous
            self.retrieval.set_values(previous)
            name = dict(RETRIEVERS).get(previous[1], previous[1])
            self.ctx.status(f"Index build cancelled; nothing was kept. Passages: {name}.")
        else:
            self.ctx.status("Index build cancelled; nothing was kept. Press Start again.")
        view = self.panel.item
        self.passages.setHtml(self._passages_html(view) if view is not None else "")
        return True

    def call_ended(self) -> None:
        self.building = None
        self.build_row.setVisible(False)
        self.enable(self.panel.busy)
        session = self.panel.session
        if self.retrieval.values != self._choice and not self.panel.busy:
            self._retrieval_changed()  # changed while another call ran
        elif session is not None and session.book != self.book.currentData():
            self._book_changed()

    # -- one question ---------------------------------------------------------------------

    def text(self, item: Any) -> str:
        return str(item.question)

    def options(self, item: Any) -> list[tuple[str, str]]:
        return list(item.options)

    def key(self, item: Any) -> str:
        return str(item.id)

    def keys(self, session: Any) -> list[str]:
        return [str(item["id"]) for item in session.items]

    def reach(self, session: Any) -> int:
        return len(session) - 1

    def said(self, session: Any, place: int) -> Feedback | None:
        return session.feedback(place)

    def at_hand(self, session: Any, place: int) -> None:
        return None  # its passages are retrieved on the session thread

    def fetch(self, session: Any, place: int) -> QuestionView:
        return session.question(place)

    def place(self, session: Any, item: Any) -> int:
        return int(item.position)

    def give(self, session: Any, place: int, chosen: list[str]) -> Feedback:
        feedback = session.answer([c.lower() for c in chosen], place)
        self._shown_after = session.question(place)  # closed book: now with its passages
        return feedback

    def after(self, session: Any, place: int) -> int | None:
        """The next question of the block, else the first unanswered one."""
        if place + 1 < len(session):
            return place + 1
        return None if session.done else int(session.position)

    def progress(self, session: Any) -> tuple[int, int]:
        return len(session), len(session) - session.left

    def revealed(self, feedback: Any) -> tuple[list[str], list[str]]:
        return list(feedback.gold), list(feedback.chosen)

    def right(self, feedback: Any) -> bool:
        return bool(feedback.exact)

    def states(self, session: Any) -> list[str]:
        said = [
            fb.exact if (fb := session.feedback(i)) is not None else None
            for i in range(len(session))
        ]
        return cell_states(said, shown=True)

    def show(self, item: Any, answered: bool) -> None:
        self.verdict.setText("")
        self.passages.setHtml(self._passages_html(item))
        self._totals()

    def answered(self, feedback: Any, fresh: bool) -> None:
        self.verdict.setText(verdict_html(feedback))
        if fresh and self._shown_after is not None:
            self._show_passages(self._shown_after)
            self._totals()

    def lost(self, session: Any, chosen: bool) -> str:
        from gui.exam.ending import lost_words

        return lost_words(session.left, chosen=chosen)

    def ended(self, result: Any) -> None:
        self.total.setText(
            f"Finished: Hamming {_percent(result.get('hamming') or 0)} · "
            f"EMR {_percent(result.get('emr') or 0)} over {result['answered']} question(s). "
            "See Results for the details."
        )

    def _totals(self) -> None:
        session = self.panel.session
        summary: Summary = session.summary() if session is not None else {}
        if not summary.get("answered"):
            self.total.setText("")
            return
        self.total.setText(
            f"Overall: Hamming {_percent(summary['hamming'])} · EMR {_percent(summary['emr'])} "
            f"· {summary['answered']} of {summary['total']} answered"
        )

    def enable(self, busy: bool) -> None:
        self.panel.start_button.setEnabled(not busy and bool(self.panel.dataset.name))
        self.go_button.setEnabled(not busy and self._left_run() is not None)
        self.retrieval.setEnabled(self.building is None and self.book.currentData() != "none")
        self.book.setEnabled(self.building is None)
        self.panel.dataset.setEnabled(self.building is None)

    def refresh(self) -> None:
        self.enable(self.panel.busy)

    # -- the passages ------------------------------------------------------------------------

    def _retrieval_changed(self) -> None:
        """Build the chosen retriever's index when it is not built, and retrieve the current
        question's passages again with the new settings."""
        values, panel = self.retrieval.values, self.panel
        if panel.busy or values == self._choice:
            return
        self._previous, self._choice = self._choice, values
        corpus, retriever, k = values
        session = panel.session if panel.item is not None else None
        position = panel.at
        if session is None and (retriever not in SLOW or self._previous[:2] == values[:2]):
            return  # no passages to show; a BM25 index builds in moments at Start
        stop = self._building(corpus, retriever)

        def redo(job: Job) -> QuestionView | None:
            index = load_retriever(job, corpus, retriever, stop.is_set)
            if session is None:
                return None
            session.set_retrieval(index, k)
            return session.question(position)

        if session is not None:
            self.passages.setHtml(_stale("Retrieving the passages again…"))
        panel.call(redo, self._show_passages, progress=self.preparing)

    def _show_passages(self, view: QuestionView | None) -> None:
        if view is not None and view.position == self.panel.at:
            self.panel.item = view
            self.passages.setHtml(self._passages_html(view))

    def _passages_html(self, view: QuestionView) -> str:
        session = self.panel.session
        book = session.book if session is not None else self.book.currentData()
        if book == "none":
            return _stale("No passages: the question alone.")
        if book == "closed" and not view.answered:
            return _stale(
                "Closed book: the passages show once you answer, "
                "with what in them bears on each option."
            )
        return passages_html(view.passages, view.notes)

    def _book_changed(self) -> None:
        """Remember the passage mode; show the current question's passages in it (their
        index built first when the session began with none)."""
        book = self.book.currentData()
        set_setting("french/book", book)
        panel = self.panel
        self.enable(panel.busy)
        session = panel.session if panel.item is not None else None
        if session is None or panel.busy:
            return
        session.set_book(book)
        if book != "none" and session.index is None and self.retrieval.values[1]:
            self._choice = ("", "", 0)  # the session has no index: retrieve anew
            self._retrieval_changed()
            return
        position = panel.at
        panel.call(lambda job: session.question(position), self._show_passages)
