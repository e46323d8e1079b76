"""Exam practice: a person's session over a question set, with feedback after each question
(practice) or only at the end (a timed exam), a model's explanation streamed on request
(:mod:`gui.exam.explain`), and the report at the end (:mod:`gui.exam.report`).
Keys a–e or 1–5 choose, Shift+letter (or a right-click) strikes an option through; Previous
shows the questions answered before, as answered; Go on answers the rest of a past session.
The questions, scoring, pass mark and missed questions are :mod:`engine.exam.person`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.exam.dataset import LETTERS
from engine.exam.settings import PracticeSettings
from gui.exam.explain import ExplainBox
from gui.exam.report import PastCard, ReportPage, duration
from gui.models import set_setting, setting
from gui.widgets.bank_block import BlockControls, drawn_seed, order_box
from gui.widgets.bank_marks import MarkBar, difficulty_words
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    add_rows,
    current_profile,
    flush_column,
    muted,
    plain,
    primary,
    say_verdict,
    selectable,
    show_error,
    spin_box,
)
from gui.widgets.question import (
    QuestionCard,
    SessionClock,
    option_keys,
    position_widgets,
    show_position,
)
from gui.widgets.question_grid import QuestionGrid, cell_states, marked_places
from gui.widgets.screen import SessionCalls, scrolled, under_way

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from engine.exam.dataset import Question
    from engine.exam.person import ExamSitting, Feedback, SessionResult
    from gui.workers import Job, Worker


_TITLES = {"practice": "Practice", "timed": "Timed exam", "review": "Review"}


class PracticePanel(QWidget, SessionCalls):
    """The setup page, the question page and the report page of a person's session;
    ``title_changed`` says what the tab shows now (Practice, Timed exam, Review)."""

    title_changed = Signal(str)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.session: ExamSitting | None = None
        self.item: Question | None = None
        self.answered = False
        self.at = 0  # the place in the session of the question shown (earlier: looked at again)
        self.struck: dict[int, list[str]] = {}  # the options struck through, by place
        self.chosen: dict[int, list[str]] = {}  # chosen, not answered yet, by place
        self.clock_for = -1  # the place whose question the clock times
        self.missed: list[str] = []  # the questions got wrong last time, of the data set
        self.end_box: QMessageBox | None = None  # "End the session?" while it asks
        self.stack = QStackedWidget()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.addWidget(self.stack)
        self.stack.addWidget(self._setup_page())
        self.stack.addWidget(self._question_page())
        self.report = ReportPage(lambda: self.ctx.store)
        self.report.review_clicked.connect(self.review)
        self.report.new_session_clicked.connect(self.back_to_setup)
        self.result: SessionResult | None = None
        self.stack.addWidget(scrolled(self.report))
        self._shortcuts()
        self._dataset_changed()

    # -- setup page ---------------------------------------------------------------------

    def _setup_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(16)
        card = Card("Start a session")
        card.add_layout(self._setup_grid())
        self.mode_timed.toggled.connect(self._mode_changed)
        self._mode_changed()
        buttons = QHBoxLayout()
        self.profile_note = muted(QLabel(""))
        self.profile_note.setWordWrap(True)
        self.profile_note.setToolTip("Choose whose cards on the Review screen")
        buttons.addWidget(self.profile_note, 1)
        self.start_button = primary(QPushButton("Start"))
        self.start_button.setMinimumWidth(120)
        self.start_button.clicked.connect(lambda: self.start())
        buttons.addWidget(self.start_button)
        card.add_layout(buttons)
        card.layout_.addStretch(1)
        row.addWidget(card, 3)
        self.past_card = PastCard(self, lambda run_id: self._sit(resume=run_id))  # Go on
        self.past, self.missed_note = self.past_card.model, self.past_card.note
        row.addWidget(self.past_card, 2)
        return page

    def _setup_grid(self) -> QGridLayout:
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        self.dataset = DatasetPicker(self.ctx, "exam", compact=True)
        if (window := self.ctx.window) is not None:
            self.dataset.import_clicked.connect(lambda: window.open_import("exam"))
        self.dataset.changed.connect(self._dataset_changed)
        self.count = spin_box(0, 100000, setting("exam/count", 0, int), special="All")
        self.count.setToolTip("How many questions, drawn at random (or in file order)")
        self.in_order = order_box("exam")
        self.minutes = spin_box(1, 600, setting("exam/minutes", 15, int), suffix=" min")
        self.pass_mark = spin_box(
            0, 100, setting("exam/pass_mark", int(PracticeSettings.pass_mark), int), suffix=" %"
        )
        self.only_missed = QCheckBox("Only the ones I got wrong")
        modes = self._modes()
        self.block = BlockControls(self.ctx, "exam", self, count=self.count, minutes=self.minutes)
        self.block.set_modes(self.mode_timed, self.mode_practice)
        self.block.changed.connect(self._block_changed)
        self.block.loaded.connect(lambda block: self.dataset.select(block.dataset))
        rows = [("Questions", self.dataset), *self.block.filter_rows(), ("Mode", modes)]
        rows += [("How many", self.count), ("", self.in_order), ("Time limit", self.minutes)]
        rows += [("Pass mark", self.pass_mark), ("", self.only_missed), self.block.saved_row()]
        add_rows(grid, rows)
        for cell in filter(None, (grid.itemAtPosition(row, 0) for row in (2, 4))):
            cell.setAlignment(Qt.AlignmentFlag.AlignTop)  # beside the subjects and the two modes
        grid.setColumnStretch(1, 1)
        return grid

    def _modes(self) -> QVBoxLayout:
        self.mode_practice = QRadioButton("Practice: each answer explained at once")
        self.mode_timed = QRadioButton("Timed exam: results at the end only")
        group = QButtonGroup(self)
        group.addButton(self.mode_practice)
        group.addButton(self.mode_timed)
        timed = setting("exam/mode", "practice") == "timed"
        (self.mode_timed if timed else self.mode_practice).setChecked(True)
        modes = QVBoxLayout()
        modes.setSpacing(4)
        modes.addWidget(self.mode_practice)
        modes.addWidget(self.mode_timed)
        return modes

    def _mode_changed(self) -> None:
        self.minutes.setEnabled(self.mode_timed.isChecked())

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        """Back on the screen: the profile may have changed on the Review screen."""
        super().showEvent(event)
        if self.stack.currentIndex() == 0:
            self._dataset_changed()

    def _dataset_changed(self, _name: str = "") -> None:
        from engine.exam.person import missed_items, person_runs

        profile = current_profile(self.ctx)
        self.profile_note.setText(f"Answers go to the review cards of {profile!r}.")
        name = self.dataset.name
        self.block.refresh(name or "", profile)
        if not name:
            self.past.set_rows([])
            return
        self.past.set_rows(person_runs(self.ctx.store, name, profile))
        self.missed = missed = missed_items(self.ctx.store, name, profile)
        self._block_changed()
        if not missed:
            self.only_missed.setChecked(False)
        self.only_missed.setText(
            f"Only the {len(missed)} I got wrong last time"
            if missed
            else "Only the ones I got wrong (none yet)"
        )
        self.missed_note.setText(
            f"{len(missed)} question(s) of this set to review." if missed else ""
        )

    def _block_changed(self) -> None:
        """A pool, subject or difficulty chosen: it, not "only the ones I got wrong", decides."""
        self.only_missed.setEnabled(bool(self.missed) and self.block.plain)
        self.only_missed.setToolTip("" if self.block.plain else "The pool chooses the questions")

    # -- question page --------------------------------------------------------------------

    def _question_page(self) -> QWidget:
        page = QWidget()
        lay = flush_column(page, spacing=10)
        self.marks = MarkBar(self.ctx, "exam")
        self.marks.install_shortcut(self)
        top = QHBoxLayout()
        self.position, self.bar = position_widgets(260)
        self.kind = QLabel("")
        self.kind.setObjectName("pill")
        self.clock = SessionClock()
        self.clock.time_up.connect(self._time_up)
        top.addWidget(self.position)
        top.addSpacing(12)
        top.addWidget(self.bar, 1)
        top.addStretch(1)
        top.addWidget(self.kind)
        top.addSpacing(12)
        top.addWidget(self.clock)
        lay.addLayout(top)
        body = QWidget()
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 6, 0)
        bl.setSpacing(12)
        bl.addWidget(self._question_card())
        bl.addWidget(self._feedback_card())
        bl.addStretch(1)
        middle = QHBoxLayout()
        middle.setSpacing(12)
        middle.addWidget(scrolled(body), 1)
        self.grid = QuestionGrid()
        self.grid.jump.connect(lambda place: None if self.busy else self.go_to(place))
        self.marks.mark_button.toggled.connect(lambda _on: self._show_grid())
        middle.addWidget(self.grid)
        lay.addLayout(middle, 1)
        lay.addWidget(self.marks)
        lay.addLayout(self._actions())
        return page

    def _question_card(self) -> Card:
        qcard = QuestionCard(multi=False)
        self.question, self.options = qcard.question, qcard.options
        self.options.selection_changed.connect(self._selection_changed)
        return qcard

    def _feedback_card(self) -> Card:
        self.feedback = Card()
        self.verdict = QLabel("")
        self.feedback.add(self.verdict)
        self.difficulty = self.feedback.add(muted(QLabel("")))
        self.feedback.add(self.marks.reasons)
        self.explanation = plain(selectable(QLabel("")))
        self.feedback.add(self.explanation)
        self.explainer = ExplainBox(self.ctx, self)
        self.explainer.button.clicked.connect(self.explain)
        self.explain_button, self.explain_stop = self.explainer.button, self.explainer.stop_button
        self.explain_lang, self.model_text = self.explainer.lang, self.explainer.text
        self.feedback.add(self.explainer)
        self.feedback.setVisible(False)
        return self.feedback

    def _actions(self) -> QHBoxLayout:
        actions = QHBoxLayout()
        self.end_button = QPushButton("End session")
        self.end_button.clicked.connect(self.end_session)
        self.hint = muted(QLabel(""))
        self.skip_button = QPushButton("Skip")
        self.skip_button.setToolTip("Leave this question unanswered (it counts as wrong)")
        self.skip_button.clicked.connect(lambda: self.submit(skip=True))
        self.previous_button = QPushButton("Previous")
        self.previous_button.setToolTip("The question before, as you answered it")
        self.previous_button.clicked.connect(self.previous)
        self.submit_button = primary(QPushButton("Check answer"))
        self.submit_button.setMinimumWidth(140)
        self.submit_button.clicked.connect(lambda: self.submit())
        self.next_button = primary(QPushButton("Next question"))
        self.next_button.setMinimumWidth(140)
        self.next_button.clicked.connect(self.next_question)
        actions.addWidget(self.end_button)
        actions.addWidget(self.hint, 1)
        actions.addWidget(self.previous_button)
        actions.addWidget(self.skip_button)
        actions.addWidget(self.submit_button)
        actions.addWidget(self.next_button)
        return actions

    def _shortcuts(self) -> None:
        option_keys(self, self._key_option)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(self._key_enter)

    def _key_option(self, i: int, how: str) -> None:
        if self.stack.currentIndex() == 1 and not self.answered:
            self.options.press(i, how)

    def _key_enter(self) -> None:
        if self.stack.currentIndex() != 1:
            return
        if self.next_button.isVisible() and self.next_button.isEnabled():
            self.next_question()
        elif self.submit_button.isEnabled():
            self.submit()

    # -- report page ------------------------------------------------------------------------

    def start(self, keys: list[str] | None = None) -> None:
        """Start a session with the settings of the setup page (``keys``: only those)."""
        from engine.bank.blocks import choose
        from engine.exam.person import ExamSitting, missed_items

        dataset = self.dataset.name
        if not dataset:
            show_error(self, "Import a question set first (or use the sample).", self.ctx)
            return
        timed = self.mode_timed.isChecked()
        set_setting("exam/mode", "timed" if timed else "practice")
        set_setting("exam/count", self.count.value())
        set_setting("exam/minutes", self.minutes.value())
        set_setting("exam/pass_mark", self.pass_mark.value())
        profile = current_profile(self.ctx)
        block = None if keys is not None or self.block.plain else self.block.block()
        if keys is None and block is None and self.only_missed.isChecked():
            keys = missed_items(self.ctx.store, dataset, profile)
        kwargs: dict[str, Any] = {
            "profile": profile,
            "mode": "timed" if timed else "practice",
            "time_limit_s": self.minutes.value() * 60.0 if timed else None,
            "limit": self.count.value() or None if block is None else None,
            "seed": drawn_seed(self.in_order),
            "pass_mark": float(self.pass_mark.value()),
        }

        def make(job: Job) -> tuple[ExamSitting, Question | None]:
            chosen = keys if block is None else choose(job.store, block, profile)
            session = ExamSitting(job.store, dataset, keys=chosen, **kwargs)
            return session, session.next_question()

        self.call(make, self._started)

    def _sit(self, **given: Any) -> None:
        """An :class:`~engine.exam.person.ExamSitting` of ``given``, its first question shown."""
        from engine.exam.person import ExamSitting

        def make(job: Job) -> tuple[ExamSitting, Question | None]:
            session = ExamSitting(job.store, **given)
            return session, session.next_question()

        self.call(make, self._started)

    def _started(self, result: tuple[ExamSitting, Question | None]) -> None:
        self.session, item = result
        self.title_changed.emit(_TITLES[self.session.mode])
        self.ctx.notify_runs()
        self.stack.setCurrentIndex(1)
        self.struck, self.chosen, self.clock_for = {}, {}, -1
        self.clock.start(self.session)
        self._show(item)

    def _show(self, item: Question | None) -> None:
        if item is None:
            self._end()
            return
        s = under_way(self.session)
        self.answered = False
        self.at = s.index
        show_position(self.position, self.bar, s.index, len(s.questions), s.index)
        self._show_item(item, s)
        self.options.set_chosen(self.chosen.pop(self.at, []), self.struck.get(self.at, []))
        self.feedback.setVisible(False)
        if self.clock_for != self.at:
            self.clock_for = self.at
            self.clock.new_question()
        else:  # back from an earlier question: this one's clock goes on
            self.clock.resume()
        self._enable()
        self._show_grid()
        self.options.setFocus()

    def _show_item(self, item: Question, s: ExamSitting) -> None:
        """The question, its options and its marks (its answer and clock are the caller's)."""
        self.item = item
        kinds = [str(item.get(k)) for k in ("type2", "type3") if item.get(k)]
        self.kind.setText(" · ".join(kinds))
        self.kind.setVisible(bool(kinds))
        self.question.setText(item["question"])
        self.options.set_options(list(zip(LETTERS, item["options"], strict=False)))
        self.explainer.clear()
        self.marks.show_question(s.profile, s.dataset, str(item["id"]))

    def _selection_changed(self) -> None:
        if self.options.selected():
            self.hint.setText("")
        self._enable()

    def _enable(self) -> None:
        practice = self.session is not None and self.session.explained
        answering = not self.answered
        self.submit_button.setVisible(answering)
        self.submit_button.setEnabled(answering and not self.busy)
        self.previous_button.setEnabled(self.at > 0 and not self.busy)
        self.submit_button.setText("Check answer" if practice else "Answer")
        self.skip_button.setVisible(answering)
        self.skip_button.setEnabled(not self.busy)
        self.next_button.setVisible(not answering)
        self.next_button.setEnabled(not self.busy)
        self.end_button.setEnabled(not self.busy)
        self.start_button.setEnabled(not self.busy)

    def submit(self, skip: bool = False) -> None:
        if self.session is None or self.answered or self.busy:
            return
        chosen = None if skip else next(iter(self.options.selected()), None)
        if chosen is None and not skip:
            self.hint.setText("Choose an option first (keys a–e or 1–5), or Skip.")
            return
        session = self.session
        self.call(lambda job: session.answer(chosen), self._answered)

    def _answered(self, feedback: Feedback | None) -> None:
        self.answered = True
        if feedback is None:  # timed: straight on
            self.next_question()
            return
        self.clock.freeze(feedback.seconds)
        self._show_feedback(feedback)
        if not feedback.correct:
            self.marks.missed()
        self._enable()
        self._show_grid()
        self.next_button.setFocus()

    def _show_feedback(self, feedback: Feedback) -> None:
        self.options.reveal([feedback.gold], [feedback.chosen] if feedback.chosen else [])
        if feedback.correct:
            said = f"Correct — {feedback.gold} ({duration(feedback.seconds)})"
        else:
            chose = f"you chose {feedback.chosen}" if feedback.chosen else "skipped"
            said = f"Not quite — the answer is {feedback.gold} ({chose})"
        say_verdict(self.verdict, feedback.correct, said)
        self.difficulty.setText(
            difficulty_words(self.ctx.store, under_way(self.session).dataset, feedback.key)
        )
        self.explanation.setText(feedback.explanation or "No explanation is given for this one.")
        self.feedback.setVisible(True)
        self.explain_button.setEnabled(True)

    def _show_past(self, place: int) -> None:
        """Question ``place``, answered before, as answered (with its verdict in practice)."""
        s = under_way(self.session)
        fb = s.feedback[place]
        self.at, self.answered = place, True
        show_position(self.position, self.bar, place, len(s.questions), s.index)
        self._show_item(s.questions[place], s)
        self.options.set_chosen([fb.chosen] if fb.chosen else [], self.struck.get(place, []))
        self.clock.freeze(fb.seconds)
        if s.explained:
            self._show_feedback(fb)
        else:
            self.options.lock()
            self.feedback.setVisible(False)
        self._enable()
        self._show_grid()

    def _leave(self) -> None:
        """Keep what the question shown has struck through (and chosen, unanswered)."""
        self.explainer.stop()
        self.hint.setText("")
        self.struck[self.at] = self.options.struck()
        if not self.answered:
            self.chosen[self.at] = self.options.selected()

    def previous(self) -> None:
        """Show the question before (answered: it cannot be answered again)."""
        if not self.busy:
            self.go_to(self.at - 1)

    def next_question(self) -> None:
        """The question after the one shown: one looked at again, or the next to answer."""
        self.go_to(self.at + 1)

    def go_to(self, place: int) -> None:
        """Show question ``place``: one answered (as answered), or the next to answer (the
        question grid's click; later ones are not reached yet)."""
        s = self.session
        if s is None or not 0 <= place <= s.index or (place == self.at and not self.answered):
            return
        self._leave()
        if place < s.index:
            self._show_past(place)
        else:
            self.call(lambda job: s.next_question(), self._show)

    def _show_grid(self) -> None:
        """The question grid: answered (right or wrong once explained), marked, reached."""
        if (s := self.session) is None:
            return
        said = [f.correct if f.chosen or s.explained else None for f in s.feedback]
        states = cell_states(said + [None] * (len(s.questions) - len(said)), s.explained)
        keys = [str(q["id"]) for q in s.questions]
        marked = marked_places(self.ctx.store, s.profile, s.dataset, keys)
        self.grid.show_block(states, self.at, marked, reach=s.index)

    @property
    def explain_job(self) -> Worker | None:
        return self.explainer.job

    def explain(self) -> None:
        """Stream the model's explanation of the question shown."""
        if self.session is not None and self.item is not None:
            self.explainer.explain(self.session, self.item)

    def _time_up(self) -> None:
        if self.stack.currentIndex() == 1 and not self.busy:
            self._close_box()
            self._end()

    def end_session(self) -> None:
        """End the session; while questions are left, only once the person says so."""
        from gui.exam.ending import ask_to_end, lost_words

        s = self.session
        if s is None:
            return
        chosen = self.stack.currentIndex() == 1 and not self.answered and self.at == s.index
        left = 0 if s.finished or s.expired else s.remaining
        lost = lost_words(left, s.mode == "timed", bool(chosen and self.options.selected()))
        self.end_box = ask_to_end(self, lost, self._end)

    def _close_box(self) -> None:
        if self.end_box is not None and self.end_box.isVisible():
            self.end_box.done(0)

    def _end(self) -> None:
        if self.session is None:
            return
        self.explainer.stop()
        self.clock.stop()
        self.marks.leave()
        session = self.session
        self.call(lambda job: session.finish(), self._finished)

    def _finished(self, result: SessionResult) -> None:
        self.ctx.notify_runs()
        self.show_report(result)
        self._dataset_changed()

    def show_report(self, result: SessionResult) -> None:
        """Fill and show the report page for a :class:`~engine.exam.person.SessionResult`."""
        self.result = result
        questions = self.session.questions if self.session is not None else []
        dataset = self.session.dataset if self.session is not None else ""
        self.report.show_result(result, questions, dataset)
        self.stack.setCurrentIndex(2)

    def review(self, which: str = "missed") -> None:
        """Go over the questions of the session just ended again (``missed``, ``all`` or
        ``marked`` ones): untimed, each answer explained, never an exam."""
        result, session = self.result, self.session
        if result is None or session is None or self.busy:
            return
        keys = self.report.review_keys(which, result, session, self.ctx.store)
        if not keys:
            self.ctx.status(f"No {which} question in this session to review.")
            return
        self.dataset.select(session.dataset)
        self._sit(
            dataset=session.dataset, keys=keys, profile=session.profile, review_of=result.run_id
        )

    def back_to_setup(self) -> None:
        self.session = None
        self.title_changed.emit(_TITLES["practice"])
        self._dataset_changed()
        self.stack.setCurrentIndex(0)

    def closing(self) -> None:
        """The window closes: stop the stream; an unfinished session is closed as such."""
        self.clock.stop()
        self.explainer.stop()
        self.marks.leave()
        session = self.session
        if session is not None and not session.finished:
            self.ctx.jobs.start(lambda job: session.finish(), pool="session")
