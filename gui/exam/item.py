"""The exam's item widget in the practice panel (:class:`gui.widgets.practice.PracticePanel`):
practice (feedback after each question), a timed exam (results only at the end) or a review;
the setup page's choices (a block, the mode, how many, the time limit, the pass mark, the
ones got wrong), the question's type and the clock, the answer's verdict and explanation, a
model's explanation streamed on request (:mod:`gui.exam.explain`), and the report at the end
(:mod:`gui.exam.report`) with Go on for a session left before its end. The questions,
scoring, pass mark and missed questions are :mod:`engine.exam.person`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from engine.exam.dataset import LETTERS
from engine.exam.settings import PracticeSettings
from gui.exam.explain import ExplainBox
from gui.exam.report import PastCard, ReportPage, duration
from gui.models import set_setting, setting
from gui.widgets.bank_block import BlockControls, drawn_seed, order_box
from gui.widgets.bank_marks import difficulty_words
from gui.widgets.common import (
    Card,
    add_rows,
    current_profile,
    muted,
    plain,
    say_verdict,
    selectable,
    show_error,
    spin_box,
)
from gui.widgets.practice import ItemWidget, Make, PracticePanel
from gui.widgets.question import SessionClock
from gui.widgets.question_grid import cell_states
from gui.widgets.screen import scrolled, under_way

if TYPE_CHECKING:
    from engine.exam.dataset import Question
    from engine.exam.person import ExamSitting, Feedback, SessionResult
    from gui.workers import Job, Worker


class ExamItem(ItemWidget):
    """The exam's part of the practice panel (see the module)."""

    titles = {"": "Practice", "practice": "Practice", "timed": "Timed exam", "review": "Review"}

    def __init__(self, panel: PracticePanel) -> None:
        super().__init__(panel)
        self.session: ExamSitting | None = None
        self.clock_for = -1  # the place whose question the clock times
        self.missed: list[str] = []  # the questions got wrong last time, of the data set
        self.result: SessionResult | None = None
        self.kind = QLabel("")
        self.kind.setObjectName("pill")
        self.clock = SessionClock()
        self.clock.time_up.connect(self._time_up)
        self._feedback_card()

    # -- setup page ---------------------------------------------------------------------

    def setup_page(self) -> QWidget:
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
        self.panel.start_button.setMinimumWidth(120)
        buttons.addWidget(self.panel.start_button)
        card.add_layout(buttons)
        card.layout_.addStretch(1)
        row.addWidget(card, 3)
        self.past_card = PastCard(self.panel, lambda run_id: self._sit(resume=run_id))  # Go on
        self.past, self.missed_note = self.past_card.model, self.past_card.note
        row.addWidget(self.past_card, 2)
        return page

    def _setup_grid(self) -> QGridLayout:
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        dataset = self.panel.dataset
        self.count = spin_box(0, 100000, setting("exam/count", 0, int), special="All")
        self.count.setToolTip("How many questions, drawn at random (or in file order)")
        self.in_order = order_box("exam")
        self.minutes = spin_box(1, 600, setting("exam/minutes", 15, int), suffix=" min")
        self.pass_mark = spin_box(
            0, 100, setting("exam/pass_mark", int(PracticeSettings.pass_mark), int), suffix=" %"
        )
        self.only_missed = QCheckBox("Only the ones I got wrong")
        modes = self._modes()
        self.block = BlockControls(
            self.ctx, "exam", self.panel, count=self.count, minutes=self.minutes
        )
        self.block.set_modes(self.mode_timed, self.mode_practice)
        self.block.changed.connect(self._block_changed)
        self.block.loaded.connect(lambda block: dataset.select(block.dataset))
        rows = [("Questions", dataset), *self.block.filter_rows(), ("Mode", modes)]
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
        group = QButtonGroup(self.panel)
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

    def refresh(self) -> None:
        from engine.exam.person import missed_items, person_runs

        profile = current_profile(self.ctx)
        self.profile_note.setText(f"Answers go to the review cards of {profile!r}.")
        name = self.panel.dataset.name
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

    def top(self) -> list[QWidget]:
        return [self.kind, self.clock]

    def below(self) -> list[QWidget]:
        return [self.feedback]

    def _feedback_card(self) -> None:
        self.feedback = Card()
        self.verdict = QLabel("")
        self.feedback.add(self.verdict)
        self.difficulty = self.feedback.add(muted(QLabel("")))
        self.feedback.add(self.panel.marks.reasons)
        self.explanation = plain(selectable(QLabel("")))
        self.feedback.add(self.explanation)
        self.explainer = ExplainBox(self.ctx, self.panel)
        self.explainer.button.clicked.connect(self.explain)
        self.explain_button, self.explain_stop = self.explainer.button, self.explainer.stop_button
        self.explain_lang, self.model_text = self.explainer.lang, self.explainer.text
        self.feedback.add(self.explainer)
        self.feedback.setVisible(False)

    def results_page(self) -> QWidget:
        self.report = ReportPage(lambda: self.ctx.store)
        self.report.review_clicked.connect(self.review)
        self.report.new_session_clicked.connect(self.panel.back_to_setup)
        return scrolled(self.report)

    # -- the session --------------------------------------------------------------------------

    def make(self, keys: list[str] | None) -> Make | None:
        from engine.bank.blocks import choose
        from engine.exam.person import ExamSitting, missed_items

        dataset = self.panel.dataset.name
        if not dataset:
            show_error(self.panel, "Import a question set first (or use the sample).", self.ctx)
            return None
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

        return make

    def _sit(self, **given: Any) -> None:
        """An :class:`~engine.exam.person.ExamSitting` of ``given``, its first question shown."""
        from engine.exam.person import ExamSitting

        def make(job: Job) -> tuple[ExamSitting, Question | None]:
            session = ExamSitting(job.store, **given)
            return session, session.next_question()

        self.panel.begin(make)

    def options(self, item: Any) -> list[tuple[str, str]]:
        return list(zip(LETTERS, item["options"], strict=False))

    def started(self, session: Any) -> None:
        self.session = session
        self.clock_for = -1
        self.clock.start(session)

    def show(self, item: Any, answered: bool) -> None:
        kinds = [str(item.get(k)) for k in ("type2", "type3") if item.get(k)]
        self.kind.setText(" · ".join(kinds))
        self.kind.setVisible(bool(kinds))
        self.explainer.clear()
        self.feedback.setVisible(False)
        if answered:
            return
        at = self.panel.at
        if self.clock_for != at:
            self.clock_for = at
            self.clock.new_question()
        else:  # back from an earlier question: this one's clock goes on
            self.clock.resume()

    def answered(self, feedback: Any, fresh: bool) -> None:
        self.clock.freeze(feedback.seconds)
        if under_way(self.session).explained:
            self._show_feedback(feedback)

    def _show_feedback(self, feedback: Feedback) -> None:
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

    def hidden(self) -> None:
        self.explainer.stop()

    def ending(self) -> None:
        self.explainer.stop()
        self.clock.stop()

    def lost(self, session: Any, chosen: bool) -> str:
        from gui.exam.ending import lost_words

        left = 0 if session.finished or session.expired else session.remaining
        return lost_words(left, session.mode == "timed", chosen)

    def states(self, session: Any) -> list[str]:
        s = session
        said = [f.correct if f.chosen or s.explained else None for f in s.feedback]
        return cell_states(said + [None] * (len(s.questions) - len(said)), s.explained)

    @property
    def explain_job(self) -> Worker | None:
        return self.explainer.job

    def explain(self) -> None:
        """Stream the model's explanation of the question shown."""
        if self.session is not None and self.panel.item is not None:
            self.explainer.explain(self.session, self.panel.item)

    def _time_up(self) -> None:
        if self.panel.stack.currentIndex() == 1 and not self.panel.busy:
            self.panel.close_box()
            self.panel.end()

    # -- the report ------------------------------------------------------------------------

    def ended(self, result: Any) -> None:
        self.show_report(result)

    def show_report(self, result: SessionResult) -> None:
        """Fill and show the report page for a :class:`~engine.exam.person.SessionResult`."""
        self.result = result
        questions = self.session.questions if self.session is not None else []
        dataset = self.session.dataset if self.session is not None else ""
        self.report.show_result(result, questions, dataset)
        self.panel.stack.setCurrentIndex(2)

    def review(self, which: str = "missed") -> None:
        """Go over the questions of the session just ended again (``missed``, ``all`` or
        ``marked`` ones): untimed, each answer explained, never an exam."""
        result, session = self.result, self.session
        if result is None or session is None or self.panel.busy:
            return
        keys = self.report.review_keys(which, result, session, self.ctx.store)
        if not keys:
            self.ctx.status(f"No {which} question in this session to review.")
            return
        self.panel.dataset.select(session.dataset)
        self._sit(
            dataset=session.dataset, keys=keys, profile=session.profile, review_of=result.run_id
        )

    def closing(self) -> None:
        self.clock.stop()
        self.explainer.stop()
