"""A person's practice session in the one panel every activity's person mode shows (the
exam's, French QA's, the consultation's, a plug-in's): the setup page (or, for an activity
whose choices apply during the session, a setup card above the questions), the question page
and the results page; Start and Go on; the session's engine calls run one at a time off the
UI thread (:class:`gui.widgets.screen.SessionCalls`); the place in the block, its question
grid, Previous and Next; the options, struck through or chosen; ending with a confirmation
when answers would be lost; the window closing.

What differs between activities is their :class:`ItemWidget`: the setup's choices, how the
session is made and asked (one question after another, any of them in any order, or one
case with a dialogue of its own before its question), and what shows beside an item and
after an answer. The activity's descriptor names it (``Activity.item_widget``); a plug-in
that names one and nothing else of a person's gets its person mode from the defaults (a
:class:`~engine.core.block.PersonBlock` of the run loop). Keys a–e or 1–5 choose (or, where
several options may be right, tick and untick), Shift+letter (or a right-click) strikes an
option through, Enter answers or goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import activity
from engine.errors import UserError
from gui.widgets.asking import Asking
from gui.widgets.bank_marks import MarkBar
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    add_rows,
    button,
    current_profile,
    flush_column,
    muted,
    primary,
    show_error,
)
from gui.widgets.question import QuestionCard, option_keys, position_widgets, show_position
from gui.widgets.question_grid import QuestionGrid, marked_places
from gui.widgets.screen import SessionCalls, scrolled

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from engine.core.progress import Progress
    from engine.types import JSONDict
    from gui.workers import Job

#: How a session is made on the session thread: ``job → (session, its first item)``.
Make = Callable[..., tuple[Any, Any]]


class ItemWidget(Asking):
    """What an activity adds to :class:`PracticePanel`: made with the panel (whose shared
    widgets it may place and read), it builds the setup page and what shows with an item,
    and speaks to the activity's sitting (``engine/<activity>/person.py``). The defaults
    suit a sitting asked one question after another, with ``next_question()``,
    ``answer(chosen)``, ``finish()``, ``finished``, ``index`` (the place of the next question
    to answer), ``questions``, ``feedback`` (one per answered question, with ``chosen`` and
    ``correct``), ``profile`` and ``dataset`` (:class:`~gui.widgets.asking.Asking`); a
    sitting answered in any order overrides how it is asked."""

    #: The session's title on its tab, by mode ("" for a session with no ``mode``).
    titles: ClassVar[dict[str, str]] = {"": "Practice"}
    #: The setup's choices apply during the session: its card stays above the questions.
    setup_above: ClassVar[bool] = False
    #: A session of one item (a case): no place, grid, Previous, Next, Skip or marks.
    single: ClassVar[bool] = False
    #: The line between a question and its options.
    options_hint: ClassVar[str] = ""
    #: The question grid's columns; the mark bar's reasons under its buttons.
    grid_columns: ClassVar[int] = 5
    stacked_marks: ClassVar[bool] = False
    #: The settings group of the data set chosen last (:class:`DatasetPicker`'s ``remember``).
    remember: ClassVar[str] = ""

    def __init__(self, panel: PracticePanel) -> None:
        self.panel = panel
        self.ctx = panel.ctx

    # -- building --------------------------------------------------------------------------

    def setup_page(self) -> QWidget:
        """The setup page: the panel's ``dataset`` picker and ``start_button`` placed with
        the activity's own choices (here: none)."""
        card = Card("Start a session")
        grid = QGridLayout()
        add_rows(grid, [("Questions", self.panel.dataset)])
        grid.setColumnStretch(1, 1)
        card.add_layout(grid)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.panel.start_button)
        card.add_layout(buttons)
        card.layout_.addStretch(1)
        return card

    def top(self) -> list[QWidget]:
        """Widgets at the right of the question page's top row (a clock, a pill)."""
        return []

    def below(self) -> list[QWidget]:
        """Widgets under the question card (feedback, an explanation)."""
        return []

    def body(self) -> QWidget | None:
        """The question page's main widget, in place of the question card (which the item
        widget then places) and the grid."""
        return None

    def chosen(self) -> list[str]:
        """The answer given on the question page (none: not given yet)."""
        return self.panel.options.selected()

    def foot(self) -> list[QWidget]:
        """Widgets under the questions and their grid, above the mark bar (never scrolled)."""
        return []

    def beside(self) -> QWidget | None:
        """A widget at the right of the questions (passages), the two split."""
        return None

    def results_page(self) -> QWidget | None:
        """The page shown when the session ends (none: back to the setup page)."""
        return None

    # -- the session -------------------------------------------------------------------------

    def make(self, keys: list[str] | None) -> Make | None:
        """How to make a session with the setup page's choices (``keys``: only those);
        None (after saying why): none is made. Here: a
        :class:`~engine.core.block.PersonBlock` of the data set chosen, each answer
        :meth:`answer` makes of the option chosen."""
        from engine.core.block import PersonBlock

        dataset, panel = self.panel.dataset.name, self.panel
        if not dataset:
            show_error(panel, "Import a data set first.", self.ctx)
            return None
        settings: JSONDict = {"profile": current_profile(self.ctx)}
        if keys is not None:
            settings["keys"] = list(keys)

        def make(job: Job) -> tuple[PersonBlock, Any]:
            block = PersonBlock(
                job.store, panel.activity_id, dataset, settings, self.answer, self.gold, self.key
            )
            return block, block.next_question()

        return make

    def started(self, session: Any) -> None:
        """A session begins (or goes on)."""

    def show(self, item: Any, answered: bool) -> None:
        """The item is shown (its question and options are the panel's)."""

    def answered(self, feedback: Any, fresh: bool) -> None:
        """Show ``feedback`` of the item shown (``fresh``: just answered)."""

    def hidden(self) -> None:
        """The item shown is left."""

    def ending(self) -> None:
        """The session is about to end (what streams stops)."""

    def ended(self, result: Any) -> None:
        """The session's ``finish()`` returned ``result`` (here: a run's summary)."""
        answered = result.get("answered", 0) if isinstance(result, dict) else 0
        self.ctx.status(f"Session ended: {answered} answered. See Results for the details.")

    def preparing(self, progress: Progress) -> None:
        """The progress of the engine call making a session (an index being built)."""

    def enable(self, busy: bool) -> None:
        """Enable the activity's own controls (``busy``: an engine call runs)."""

    def failed(self, exc: BaseException) -> bool:
        """An engine call failed with ``exc``: True when handled here (else: a dialog)."""
        return False

    def call_ended(self) -> None:
        """An engine call has ended (``busy`` is false again)."""

    def refresh(self) -> None:
        """Back on the setup page, or its data set or profile changed."""

    def closing(self) -> None:
        """The window closes (the panel then closes an unfinished session)."""


def item_widget(activity_id: str) -> type[ItemWidget]:
    """The item widget the descriptor of ``activity_id`` names (:class:`UserError`: none)."""
    part = activity(activity_id).item_widget
    if part is None:
        raise UserError(f"{activity(activity_id).name} has no person mode in the app.")
    widget = part.load()
    if not issubclass(widget, ItemWidget):
        raise UserError(f"{part} is not an item widget.")
    return widget


class PracticePanel(QWidget, SessionCalls):
    """The setup page, the question page and the results page of a person's session on
    ``activity_id``, with its :class:`ItemWidget` (the one its descriptor names, unless
    ``widget`` is given); ``title_changed`` says what the tab shows now (Practice, Timed
    exam, Review)."""

    title_changed = Signal(str)
    part: ItemWidget

    def __init__(
        self, ctx: AppContext, activity_id: str, widget: type[ItemWidget] | None = None
    ) -> None:
        super().__init__()
        if widget is None:
            widget = item_widget(activity_id)
        self.ctx, self.activity_id = ctx, activity_id
        self.session: Any = None
        self.item: Any = None
        self.answered = False
        self.at = 0  # the place in the session of the question shown
        self.struck: dict[int, list[str]] = {}  # the options struck through, by place
        self.chosen: dict[int, list[str]] = {}  # chosen, not answered yet, by place
        self.end_box: QMessageBox | None = None  # "End the session?" while it asks
        self.end_after = False  # end the session once the engine call running ends
        self.dataset = DatasetPicker(ctx, activity_id, compact=True, remember=widget.remember)
        if (window := ctx.window) is not None:
            self.dataset.import_clicked.connect(lambda: window.open_import(activity_id))
        self.dataset.changed.connect(lambda _name: self.part.refresh())
        self.start_button = primary(QPushButton("Start"))
        self.start_button.clicked.connect(lambda: self.start())
        self.marks = MarkBar(ctx, activity_id, stacked=widget.stacked_marks)
        self.marks.install_shortcut(self)
        qcard = QuestionCard(multi=widget.multi, hint=widget.options_hint)
        self.question_card, self.question, self.options = qcard, qcard.question, qcard.options
        self.options.selection_changed.connect(self._selection_changed)
        self.part = widget(self)
        self.stack = QStackedWidget()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(12)
        self.setup = self.part.setup_page()
        if widget.setup_above:
            lay.addWidget(self.setup)
        else:
            self.stack.addWidget(self.setup)
        lay.addWidget(self.stack, 1)
        self.question_page = self._question_page()
        self.stack.addWidget(self.question_page)
        self.results = self.part.results_page()
        if self.results is not None:
            self.stack.addWidget(self.results)
        self._shortcuts()
        self._enable()
        self.part.refresh()

    # -- building ----------------------------------------------------------------------------

    def _question_page(self) -> QWidget:
        page = QWidget()
        lay = flush_column(page, spacing=10)
        self.position, self.bar = position_widgets(260)
        self.grid = QuestionGrid(columns=self.part.grid_columns)
        self.grid.jump.connect(lambda place: None if self.busy else self.go_to(place))
        self.marks.mark_button.toggled.connect(lambda _on: self._show_grid())
        if not self.part.single:
            lay.addLayout(self._top())
        lay.addWidget(self.part.body() or self._middle(), 1)
        for widget in self.part.foot():
            lay.addWidget(widget)
        if not self.part.single:
            lay.addWidget(self.marks)
        lay.addLayout(self._actions())
        if (beside := self.part.beside()) is None:
            return page
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(page)
        split.addWidget(beside)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 4)
        return split

    def _top(self) -> QHBoxLayout:
        top = QHBoxLayout()
        top.addWidget(self.position)
        top.addSpacing(12)
        top.addWidget(self.bar, 1)
        top.addStretch(1)
        for i, widget in enumerate(self.part.top()):
            if i:
                top.addSpacing(12)
            top.addWidget(widget)
        return top

    def _middle(self) -> QWidget:
        """The question card and what shows under it (scrolled), beside the grid."""
        body = QWidget()
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 6, 0)
        bl.setSpacing(12)
        bl.addWidget(self.question_card)
        for widget in self.part.below():
            bl.addWidget(widget)
        bl.addStretch(1)
        middle = QWidget()
        row = QHBoxLayout(middle)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(12)
        row.addWidget(scrolled(body), 1)
        row.addWidget(self.grid)
        return middle

    def _actions(self) -> QHBoxLayout:
        self.end_button = button("End session", self.end_session)
        self.hint = muted(QLabel(""))
        self.hint.setWordWrap(True)  # a long line wraps rather than widen the page
        skip = "Leave this question unanswered (it counts as wrong)"
        self.skip_button = button("Skip", lambda: self.submit(skip=True), skip)
        before = "The question before, as you answered it"
        self.previous_button = button("Previous", self.previous, before)
        self.submit_button = primary(button("Check answer", lambda: self.submit()))
        self.next_button = primary(button("Next question", self.next_question))
        actions = QHBoxLayout()
        moves = [] if self.part.single else [self.previous_button, self.skip_button]
        for widget in (self.end_button, self.hint, *moves, self.submit_button):
            actions.addWidget(widget, 1 if widget is self.hint else 0)
        if not self.part.single:  # one item: nowhere to go next
            actions.addWidget(self.next_button)
        for widget in (self.submit_button, self.next_button):
            widget.setMinimumWidth(140)
        return actions

    def _shortcuts(self) -> None:
        option_keys(self, self._key_option)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(self._key_enter)

    def _asking(self) -> bool:
        """A question of the session is on the screen."""
        return self.session is not None and self.stack.currentWidget() is self.question_page

    def _key_option(self, i: int, how: str) -> None:
        if self._asking() and not self.answered and self.options.isVisibleTo(self):
            self.options.press(i, how)

    def _key_enter(self) -> None:
        if not self._asking():
            return
        if self.answered and self.next_button.isEnabled():
            self.next_question()
        elif self.submit_button.isEnabled():
            self.submit()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        """Back on the screen: the profile may have changed on the Review screen."""
        super().showEvent(event)
        if self.session is None:
            self.part.refresh()

    # -- the session ---------------------------------------------------------------------------

    def start(self, keys: list[str] | None = None) -> None:
        """Start a session with the choices of the setup page (``keys``: only those)."""
        make = self.part.make(keys)
        if make is not None:
            self.begin(make)

    def begin(self, make: Make) -> None:
        """Make a session with ``make(job)`` on the session thread and show its first item
        (Start, Go on, a review of the session just ended); its progress goes to the item
        widget's :meth:`~gui.widgets.item_widget.ItemWidget.preparing`."""
        self.call(make, self._started, progress=self.part.preparing)

    def _started(self, result: tuple[Any, Any]) -> None:
        self.session, item = result
        self.title_changed.emit(self.part.titles[getattr(self.session, "mode", "")])
        self.ctx.notify_runs()
        self.stack.setCurrentWidget(self.question_page)
        self.struck, self.chosen = {}, {}
        self.part.started(self.session)
        self._show(item)

    def _show(self, item: Any, place: int | None = None) -> None:
        """Show ``item`` (at ``place``; default: where the sitting says it is; None: no
        question is left, the session ends)."""
        s = self.session
        if item is None:
            self.end()
            return
        self.at = self.part.place(s, item) if place is None else place
        fb = self.part.said(s, self.at)
        self.answered = fb is not None
        total, done = self.part.progress(s)
        show_position(self.position, self.bar, self.at, total, done)
        self.item = item
        self.question.setText(self.part.text(item))
        self.options.set_options(self.part.options(item))
        if not self.part.single:
            self.marks.show_question(s.profile, s.dataset, self.part.key(item))
        struck = self.struck.get(self.at, [])
        if fb is None:
            self.options.set_chosen(self.chosen.pop(self.at, []), struck)
        else:
            self.options.set_chosen(self.part.revealed(fb)[1], struck)
        self.part.show(item, answered=fb is not None)
        if fb is not None:
            if getattr(s, "explained", True):
                self.options.reveal(*self.part.revealed(fb))
            else:
                self.options.lock()
            self.part.answered(fb, fresh=False)
        self._enable()
        self._show_grid()
        if fb is None and self.options.isVisibleTo(self):
            self.options.setFocus()

    def _selection_changed(self) -> None:
        if self.options.selected():
            self.hint.setText("")
        self._enable()

    def _enable(self) -> None:
        s, busy, free = self.session, self.busy, self.part.any_order
        has = s is not None
        practice = not has or getattr(s, "explained", True)
        answering = has and not self.answered
        self.submit_button.setVisible(not self.answered)
        self.submit_button.setEnabled(answering and not busy)
        self.submit_button.setText("Check answer" if practice else "Answer")
        self.previous_button.setVisible(has and not self.part.single)
        self.previous_button.setEnabled(has and self.at > 0 and not busy)
        self.skip_button.setVisible(answering and not free and not self.part.single)
        self.skip_button.setEnabled(not busy)
        self.next_button.setVisible((self.answered or (has and free)) and not self.part.single)
        after = self.part.after(s, self.at) if has else None
        self.next_button.setEnabled(not busy and after is not None)
        self.end_button.setEnabled(has and not busy)
        self.start_button.setEnabled(not busy)
        self.part.enable(busy)

    def submit(self, skip: bool = False) -> None:
        if self.session is None or self.answered or self.busy:
            return
        chosen = [] if skip else self.part.chosen()
        if not chosen and not skip:
            self.hint.setText(self.part.unanswered())
            return
        session, place = self.session, self.at
        self.call(lambda job: self.part.give(session, place, chosen), self._answered)

    def _answered(self, feedback: Any) -> None:
        self.answered = True
        if feedback is None:  # timed: straight on
            self.next_question()
            return
        self.options.reveal(*self.part.revealed(feedback))
        self.part.answered(feedback, fresh=True)
        if not self.part.right(feedback) and not self.part.single:
            self.marks.missed()
        total, done = self.part.progress(self.session)
        self.bar.setValue(done)
        self._enable()
        self._show_grid()
        self.next_button.setFocus()
        self.end_after = self.part.ends_at_last and done == total  # the last one: it ends

    def _leave(self) -> None:
        """Keep what the question shown has struck through (and chosen, unanswered)."""
        self.part.hidden()
        self.hint.setText("")
        self.struck[self.at] = self.options.struck()
        if not self.answered:
            self.chosen[self.at] = self.options.selected()

    def previous(self) -> None:
        """Show the question before (answered: it cannot be answered again)."""
        if not self.busy:
            self.go_to(self.at - 1)

    def next_question(self) -> None:
        """Where Next goes: one looked at again, the next to answer (or, in any order, the
        next of the block, else the first unanswered)."""
        if self.session is not None:
            after = self.part.after(self.session, self.at)
            if after is not None:
                self.go_to(after)

    def go_to(self, place: int) -> None:
        """Show question ``place`` (the question grid's click; places past the reach of
        the session cannot be shown yet)."""
        s = self.session
        if s is None or not 0 <= place <= self.part.reach(s):
            return
        if place == self.at and not self.answered:
            return
        self._leave()
        if (item := self.part.at_hand(s, place)) is not None:
            self._show(item, place)
        else:
            self.call(lambda job: self.part.fetch(s, place), lambda item: self._show(item, place))

    def _show_grid(self) -> None:
        """The question grid: answered (right or wrong once said), marked, reached."""
        if (s := self.session) is None or self.part.single:
            return
        marked = marked_places(self.ctx.store, s.profile, s.dataset, self.part.keys(s))
        self.grid.show_block(self.part.states(s), self.at, marked, reach=self.part.reach(s))

    def end_session(self) -> None:
        """End the session; while questions are left, only once the person says so."""
        from gui.exam.ending import ask_to_end

        s = self.session
        if s is None:
            return
        chosen = self._asking() and not self.answered and bool(self.options.selected())
        self.end_box = ask_to_end(self, self.part.lost(s, chosen), self.end)

    def close_box(self) -> None:
        """Close the "End the session?" box if it is open (the session ends anyway)."""
        if self.end_box is not None and self.end_box.isVisible():
            self.end_box.done(0)

    def end(self) -> None:
        """End the session now (what is left unanswered is lost)."""
        if self.session is None:
            return
        self.part.ending()
        self.marks.leave()
        session = self.session
        self.call(lambda job: self.part.finish(session), self._finished)

    def _finished(self, result: Any) -> None:
        self.ctx.notify_runs()
        self.part.ended(result)
        if self.results is not None and result is not None:
            self.stack.setCurrentWidget(self.results)
        else:
            self.back_to_setup()
        self.part.refresh()

    def back_to_setup(self) -> None:
        """No session: the setup page (an activity whose setup stays above keeps the last
        question on the screen)."""
        self.session = None
        self.title_changed.emit(self.part.titles[""])
        self.part.refresh()
        self.stack.setCurrentWidget(self.question_page if self.part.setup_above else self.setup)
        self._enable()

    def _call_failed(self, exc: BaseException) -> None:
        if not self.part.failed(exc):
            super()._call_failed(exc)

    def _call_ended(self) -> None:
        super()._call_ended()
        if self.end_after:  # the session's last answer is in: it ends
            self.end_after = False
            self.end()
        else:
            self.part.call_ended()

    def closing(self) -> None:
        """The window closes: the item widget stops what it streams; an unfinished session
        is closed as such."""
        self.part.closing()
        self.marks.leave()
        session = self.session
        if session is not None and not session.finished:
            self.ctx.jobs.start(lambda job: self.part.finish(session), pool="session")
