"""French QA practice: a person answers FrenchMedMCQA questions (one or more right
options) with the passages a retriever finds for each, the query words highlighted — open
book (with the question), closed book (once answered, with what in them bears on each
option) or none, the choice remembered; the
Hamming score and exact match per question and overall. Keys a–e or 1–5 tick an option (or
take the tick away), Shift+letter (or a right-click) strikes one through; Previous and Next
go through the block, each question answered once.

Retrieval, the highlighted spans and scoring are :mod:`engine.french`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from engine.core.progress import Cancelled
from engine.french.book import BOOK_NAMES, BOOK_TIPS, BOOKS
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
from gui.widgets.bank_marks import MarkBar
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    ProgressRow,
    add_rows,
    button,
    combo,
    current_profile,
    flush_column,
    muted,
    primary,
    show_error,
    spin_box,
    text_view,
)
from gui.widgets.question import QuestionCard, option_keys, position_widgets, show_position
from gui.widgets.question_grid import QuestionGrid, cell_states, marked_places
from gui.widgets.screen import GOES_ON, SessionCalls, scrolled, under_way

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from engine.core.progress import Progress
    from engine.french.person import Feedback, FrenchSitting, QuestionView
    from engine.types import Summary
    from gui.workers import Job

#: What a call that may build an index returns.
T = TypeVar("T")

Retrieval = tuple[str, str, int]  # corpus, retriever, k
SLOW = ("dense", "hybrid")  # retrievers whose index is built as soon as they are chosen


def _stale(text: str) -> str:
    return f"<p style='color:#6b7280'>{text}</p>"


class FrenchPractice(QWidget, SessionCalls):
    """A person's French QA session: the setup row, the question and its passages.

    The index a retriever needs is built when it is chosen (or at Start), its progress in
    the setup card's progress row with a Cancel button; a cancelled build goes back to the
    retrieval chosen before."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.session: FrenchSitting | None = None
        self.view: QuestionView | None = None
        self.end_box: QMessageBox | None = None  # "End the session?" while it asks
        self.building: tuple[str, str] | None = None  # corpus and retriever being indexed
        self._stop_build = threading.Event()
        self._previous: Retrieval | None = None  # the retrieval to go back to on Cancel
        self.struck: dict[int, list[str]] = {}  # options struck through, by position
        self.chosen: dict[int, list[str]] = {}  # ticked, not answered yet, by position
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(12)
        lay.addWidget(self._setup_card())
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(self._question_side())
        pcard = Card("Passages")
        self.passages = text_view()
        self.passages.setPlaceholderText("Passages show here once you start.")
        pcard.add(self.passages, 1)
        split.addWidget(pcard)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 4)
        lay.addWidget(split, 1)
        self._choice: Retrieval = self.retrieval.values  # the retrieval asked for last
        option_keys(self, self._key_option)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(self._key_enter)
        self._enable()

    # -- building ----------------------------------------------------------------------------

    def _setup_card(self) -> Card:
        """Questions and how many on one line; the passages, when they show and Start on the
        next."""
        setup = Card()
        self.dataset = DatasetPicker(self.ctx, "french", compact=True, remember="french")
        self.dataset.import_clicked.connect(self._open_import)
        self.dataset.changed.connect(self._dataset_changed)
        self.retrieval = RetrievalControls(self.ctx, "french")
        self.retrieval.retriever.currentIndexChanged.connect(self._retrieval_changed)
        self.retrieval.k.valueChanged.connect(self._retrieval_changed)
        self.retrieval.corpus.currentIndexChanged.connect(self._retrieval_changed)
        self.book = combo([(b, BOOK_NAMES[b]) for b in BOOKS], setting("french/book", "open"))
        for i, b in enumerate(BOOKS):
            self.book.setItemData(i, BOOK_TIPS[b], Qt.ItemDataRole.ToolTipRole)
        self.book.currentIndexChanged.connect(self._book_changed)
        self.limit = spin_box(
            0, 100000, setting("french/limit", 0, int), special="All", tip="How many questions"
        )
        self.limit.setMinimumWidth(90)
        self.in_order = order_box("french")
        self.start_button = primary(QPushButton("Start"))
        self.start_button.setMinimumWidth(110)
        self.start_button.clicked.connect(self.start)
        begin = QHBoxLayout()  # when the passages show, then Start
        begin.addWidget(self.book)
        begin.addWidget(self.start_button, 1)
        self.go_button = button(
            "Go on", self.go_on, "Answer the rest of your last session of these questions"
        )
        begin.addWidget(self.go_button)
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        add_rows(grid, [("Questions", self.dataset), ("Passages", self.retrieval)])
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

    def _question_side(self) -> QWidget:
        side = QWidget()
        lay = flush_column(side)
        self.marks = MarkBar(self.ctx, "french", stacked=True)
        self.marks.install_shortcut(self)
        middle = QHBoxLayout()
        middle.addWidget(scrolled(self._question_card()), 1)
        self.grid = QuestionGrid(columns=4)
        self.grid.jump.connect(self._go)
        self.marks.mark_button.toggled.connect(lambda _on: self._show_grid())
        middle.addWidget(self.grid)
        lay.addLayout(middle, 1)
        lay.addWidget(self.marks.reasons)
        lay.addWidget(self.marks)
        buttons = QHBoxLayout()
        self.finish_button = QPushButton("Finish")
        self.finish_button.clicked.connect(self.finish)
        self.previous_button = QPushButton("Previous")
        self.previous_button.setToolTip("The question before (answered ones as answered)")
        self.previous_button.clicked.connect(self.previous)
        self.hint = muted(QLabel(""))
        self.total = muted(QLabel(""))
        self.total.setWordWrap(True)  # a long line wraps rather than widen the question side
        self.submit_button = primary(QPushButton("Check"))
        self.submit_button.setMinimumWidth(110)
        self.submit_button.clicked.connect(self.submit)
        self.next_button = primary(QPushButton("Next question"))
        self.next_button.clicked.connect(self.next_question)
        buttons.addWidget(self.finish_button)
        buttons.addWidget(self.total, 1)
        buttons.addWidget(self.previous_button)
        buttons.addWidget(self.submit_button)
        buttons.addWidget(self.next_button)
        lay.addWidget(self.hint)
        lay.addLayout(buttons)
        return side

    def _question_card(self) -> Card:
        top = QHBoxLayout()
        self.position, self.bar = position_widgets(220)
        top.addWidget(self.position)
        top.addStretch(1)
        top.addWidget(self.bar)
        qcard = QuestionCard(
            multi=True,
            text="Choose a question set and press Start.",
            head=top,
            hint="Select every right option (one or more).",
        )
        self.question, self.options = qcard.question, qcard.options
        self.options.selection_changed.connect(self._selection_changed)
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        qcard.add(self.verdict)
        qcard.layout_.addStretch(1)
        return qcard

    def _open_import(self) -> None:
        if self.ctx.window is not None:
            self.ctx.window.open_import("french")

    # -- flow ------------------------------------------------------------------------------

    def start(self) -> None:
        from engine.french.person import FrenchSitting

        dataset = self.dataset.name
        if not dataset:
            show_error(self, "Import a French question set first.", self.ctx)
            return
        corpus, retriever, k = self.retrieval.values
        book = self.book.currentData()
        retriever = "" if book == "none" else retriever
        if retriever and not corpus:
            show_error(self, "Import a corpus for the passages, or choose “No passages”.", self.ctx)
            return
        limit, seed = self.limit.value() or None, drawn_seed(self.in_order)
        set_setting("french/limit", self.limit.value())
        self.dataset.remember_choice()
        profile = current_profile(self.ctx)
        old = self.session if self.session is not None and not self.session.done else None

        def make(job: Job, stop: threading.Event) -> tuple[FrenchSitting, QuestionView]:
            index = load_retriever(job, corpus, retriever, stop.is_set)
            if old is not None:  # a new session replaces it (not when the build is cancelled)
                old.finish()
            session = FrenchSitting(
                job.store, dataset, limit, index, k, profile=profile, seed=seed, book=book
            )
            return session, session.question()

        self.passages.setHtml(_stale("Preparing the passages…"))
        self._choice, self._previous = self.retrieval.values, None
        self._with_index(make, self._started)

    def _left_run(self) -> int | None:
        """Your latest session of these questions if it was left before its end (quit, or
        its app killed): what Go on answers the rest of."""
        from engine.bank.pools import person_runs

        name = self.dataset.name
        runs = person_runs(self.ctx.store, "french", current_profile(self.ctx), name or "")
        left = runs[-1:] if name else []
        return next((int(r["id"]) for r in left if r["status"] in GOES_ON), None)

    def go_on(self) -> None:
        """Go on with :meth:`_left_run` where it stopped, with the passages chosen now."""
        from engine.french.person import FrenchSitting

        run_id = self._left_run()
        if run_id is None:
            return
        corpus, retriever, k = self.retrieval.values
        retriever = "" if self.book.currentData() == "none" else retriever
        old = self.session if self.session is not None and not self.session.done else None

        def make(job: Job, stop: threading.Event) -> tuple[FrenchSitting, QuestionView]:
            index = load_retriever(job, corpus, retriever, stop.is_set)
            if old is not None:
                old.finish()
            session = FrenchSitting.resume(job.store, run_id, index, k)
            return session, session.question()

        self._choice, self._previous = self.retrieval.values, None
        self._with_index(make, self._started)

    def _with_index(
        self, fn: Callable[[Job, threading.Event], T], on_done: Callable[[T], None]
    ) -> None:
        """Run ``fn(job, stop)``, which may build the chosen retriever's index, on the
        session thread; ``stop`` is set by Cancel."""
        corpus, retriever, _k = self.retrieval.values
        self.building = (corpus, retriever)
        self._stop_build = threading.Event()
        self.call(fn, on_done, self._stop_build, progress=self._index_progress)

    def _index_progress(self, p: Progress) -> None:
        if self.building is None:
            return
        if not self.build_row.isVisible():
            self.build_row.started(p.total, "")
            self.build_row.setVisible(True)
            self.passages.setHtml(_stale("The passages show once the index is built."))
        if not self._stop_build.is_set():
            self.build_row.update(p, build_message(self.building[1], p))

    def cancel_build(self) -> None:
        """Stop the index being built (nothing of it is kept)."""
        if self.building is not None:
            self._stop_build.set()
            self.build_row.stop.setEnabled(False)
            self.build_row.label.setText("Cancelling…")

    def _call_failed(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            self._build_cancelled()
        else:
            super()._call_failed(exc)

    def _build_cancelled(self) -> None:
        """Back to the retrieval chosen before, with its passages; one line says so."""
        previous = self._previous
        if previous is not None:
            self._choice = previous
            self.retrieval.set_values(previous)
            name = dict(RETRIEVERS).get(previous[1], previous[1])
            self.ctx.status(f"Index build cancelled; nothing was kept. Passages: {name}.")
        else:
            self.ctx.status("Index build cancelled; nothing was kept. Press Start again.")
        if self.view is not None:
            self.passages.setHtml(self._passages_html(self.view))
        else:
            self.passages.clear()

    def _call_ended(self) -> None:
        self.building = None
        self.build_row.setVisible(False)
        super()._call_ended()
        if self.retrieval.values != self._choice and not self.busy:
            self._retrieval_changed()  # changed while another call ran
        elif self.session is not None and self.session.book != self.book.currentData():
            self._book_changed()

    def _started(self, result: tuple[FrenchSitting, QuestionView]) -> None:
        self.session, view = result
        self.struck, self.chosen = {}, {}
        self.ctx.notify_runs()
        self._show(view)

    def _show(self, view: QuestionView) -> None:
        self.view = view
        session = under_way(self.session)
        answered = session.summary()["answered"]
        show_position(self.position, self.bar, view.position, view.total, answered)
        self.question.setText(view.question)
        self.options.set_options([(letter, text) for letter, text in view.options])
        self.options.set_chosen(
            self.chosen.pop(view.position, []), self.struck.get(view.position, [])
        )
        self.verdict.setText("")
        self.hint.setText("")
        fb = session.feedback(view.position) if view.answered else None
        if fb is not None:
            self._show_verdict(fb)
        self.marks.show_question(session.profile, session.dataset, view.id)
        self.passages.setHtml(self._passages_html(view))
        self._totals()
        self._enable()
        self._show_grid()
        self.options.setFocus()

    def _retrieval_changed(self) -> None:
        """Build the chosen retriever's index when it is not built, and retrieve the current
        question's passages again with the new settings."""
        values = self.retrieval.values
        if self.busy or values == self._choice:
            return
        self._previous, self._choice = self._choice, values
        corpus, retriever, k = values
        session = self.session if self.view is not None else None
        position = self.view.position if self.view is not None else 0
        if session is None and (retriever not in SLOW or self._previous[:2] == values[:2]):
            return  # no passages to show; a BM25 index builds in moments at Start

        def redo(job: Job, stop: threading.Event) -> QuestionView | None:
            index = load_retriever(job, corpus, retriever, stop.is_set)
            if session is None:
                return None
            session.set_retrieval(index, k)
            return session.question(position)

        if session is not None:
            self.passages.setHtml(_stale("Retrieving the passages again…"))
        self._with_index(redo, self._show_passages)

    def _show_passages(self, view: QuestionView | None) -> None:
        if view is not None:
            self.view = view
            self.passages.setHtml(self._passages_html(view))

    def _passages_html(self, view: QuestionView) -> str:
        book = self.session.book if self.session is not None else self.book.currentData()
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
        self._enable()
        session = self.session if self.view is not None else None
        if session is None or self.busy:
            return
        session.set_book(book)
        if book != "none" and session.index is None and self.retrieval.values[1]:
            self._choice = ("", "", 0)  # the session has no index: retrieve anew
            self._retrieval_changed()
            return
        if self.view is None:
            return
        position = self.view.position
        self.call(lambda job: session.question(position), self._show_passages)

    def _dataset_changed(self, _name: str) -> None:
        self._enable()

    def _selection_changed(self) -> None:
        if self.options.selected():
            self.hint.setText("")
        self._enable()

    def _enable(self) -> None:
        has = self.session is not None and self.view is not None
        answered = has and bool(self.verdict.text())
        self.submit_button.setVisible(not answered)
        self.submit_button.setEnabled(has and not self.busy and not answered)
        self.next_button.setVisible(has)
        self.next_button.setEnabled(has and not self.busy and self._after() is not None)
        self.previous_button.setVisible(has)
        self.previous_button.setEnabled(
            has and not self.busy and self.view is not None and self.view.position > 0
        )
        self.finish_button.setEnabled(has and not self.busy)
        self.start_button.setEnabled(not self.busy and bool(self.dataset.name))
        self.go_button.setEnabled(not self.busy and self._left_run() is not None)
        self.retrieval.setEnabled(self.building is None and self.book.currentData() != "none")
        self.book.setEnabled(self.building is None)
        self.dataset.setEnabled(self.building is None)

    def submit(self) -> None:
        if self.session is None or self.view is None or self.busy:
            return
        chosen = [c.lower() for c in self.options.selected()]
        if not chosen:
            self.hint.setText("Tick at least one option first (keys a–e or 1–5).")
            return
        session, position = self.session, self.view.position
        self.call(
            lambda job: (
                session.answer(chosen, position),
                session.summary(),
                session.question(position),  # closed book: now with its passages
            ),
            self._answered,
        )

    def _answered(self, result: tuple[Feedback, Summary, QuestionView]) -> None:
        fb, summary, view = result
        self._show_verdict(fb)
        self._show_passages(view)
        if not fb.exact:
            self.marks.missed()
        self._totals(summary)
        self.bar.setValue(summary["answered"])
        if under_way(self.session).done:
            self._finish()
        self._enable()
        self._show_grid()
        self.next_button.setFocus()

    def _show_verdict(self, fb: Feedback) -> None:
        self.options.reveal(fb.gold, fb.chosen)
        self.verdict.setText(verdict_html(fb))

    def _show_grid(self) -> None:
        """The question grid: each question right or wrong once answered, marked ones."""
        if self.session is None or self.view is None:
            return
        s = self.session
        said = [fb.exact if (fb := s.feedback(i)) is not None else None for i in range(len(s))]
        keys = [str(item["id"]) for item in s.items]
        marked = marked_places(self.ctx.store, s.profile, s.dataset, keys)
        self.grid.show_block(cell_states(said, shown=True), self.view.position, marked)

    def _totals(self, summary: Summary | None = None) -> None:
        if summary is None and self.session is not None:
            summary = self.session.summary()
        if not summary or not summary.get("answered"):
            self.total.setText("")
            return
        self.total.setText(
            f"Overall: Hamming {summary['hamming']:.0f}% · EMR {summary['emr']:.0f}% "
            f"· {summary['answered']} of {summary['total']} answered"
        )

    def _key_option(self, i: int, how: str) -> None:
        if self.session is not None and self.view is not None and not self.verdict.text():
            self.options.press(i, how)

    def _key_enter(self) -> None:
        if self.next_button.isVisible() and self.verdict.text():
            self.next_question()
        elif self.submit_button.isVisible():
            self.submit()

    def _after(self) -> int | None:
        """Where Next goes: the next question of the block, else the first unanswered one."""
        if self.session is None or self.view is None:
            return None
        if self.view.position + 1 < self.view.total:
            return self.view.position + 1
        return None if self.session.done else self.session.position

    def _go(self, position: int | None) -> None:
        if self.session is None or self.view is None or position is None or self.busy:
            return
        here = self.view.position
        self.struck[here] = self.options.struck()
        if not self.verdict.text():
            self.chosen[here] = self.options.selected()
        session = self.session
        self.call(lambda job: session.question(position), self._show)

    def previous(self) -> None:
        """The question before in the block (an answered one shows its verdict)."""
        if self.view is not None and self.view.position > 0:
            self._go(self.view.position - 1)

    def next_question(self) -> None:
        self._go(self._after())

    def finish(self) -> None:
        """End the session; while questions are left, only once the person says so."""
        from gui.exam.ending import ask_to_end, lost_words

        if self.session is not None:
            self.end_box = ask_to_end(self, lost_words(self.session.left), self._finish)

    def _finish(self) -> None:
        if self.session is None:
            return
        session = self.session
        self.marks.save_note()  # the last question can still be marked and tagged

        def done(summary: Summary) -> None:
            if self.session is session:  # the run is closed: nothing more is answered in it
                self.session = None
            self.ctx.notify_runs()
            self.total.setText(
                f"Finished: Hamming {summary.get('hamming') or 0:.0f}% · "
                f"EMR {summary.get('emr') or 0:.0f}% over {summary['answered']} question(s). "
                "See Results for the details."
            )

        self.call(lambda job: session.finish(), done)

    def closing(self) -> None:
        """The window closes: an unfinished session is closed (its answers are kept)."""
        self.marks.leave()
        session = self.session
        if session is not None and self.ctx.store.run(session.run_id)["status"] == "running":
            self.ctx.jobs.start(lambda job: session.finish(), pool="session")
