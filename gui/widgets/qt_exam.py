"""Exam: practise pharmacist exam questions (with feedback, or as a timed exam) and evaluate a
model on a question set.

Everything about the exam — questions, scoring, the pass mark, per-type accuracy, missed
questions, prompts and model runs — comes from :mod:`engine.exam`; this screen only shows it.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import metric_label
from engine.exam.dataset import LETTERS
from engine.text.language import item_language
from gui.models import set_setting, setting
from gui.tables import RowsModel, format_value
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    Header,
    ModelCombo,
    OptionList,
    ProgressRow,
    check_crash,
    esc,
    muted,
    primary,
    show_error,
    text_view,
)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.0f} s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s"


def _scrolled(widget: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(widget)
    return area


def _table(model: Any) -> QTableView:
    t = QTableView()
    t.setModel(model)
    t.verticalHeader().setVisible(False)
    t.setShowGrid(False)
    t.setAlternatingRowColors(True)
    t.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    t.horizontalHeader().setHighlightSections(False)
    return t


class ExamScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        from engine.exam.dataset import ensure_sample

        try:
            ensure_sample(ctx.store)
        except Exception as exc:  # noqa: BLE001 - the app works without the sample
            ctx.status(f"The sample questions could not be loaded: {exc}")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(28, 22, 28, 20)
        outer.setSpacing(12)
        outer.addWidget(
            Header(
                "Exam",
                "Licensed pharmacist exam questions: practise with feedback, sit a timed exam, "
                "or see how a model does.",
            )
        )
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.practice = PracticePanel(ctx)
        self.evaluation = EvalPanel(ctx)
        self.tabs.addTab(self.practice, "Practice")
        self.tabs.addTab(self.evaluation, "Model evaluation")
        outer.addWidget(self.tabs, 1)

    def closing(self) -> None:
        self.practice.closing()


# ------------------------------------------------------------------------------------------
# A person's session
# ------------------------------------------------------------------------------------------


class PracticePanel(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.session: Any = None
        self.item: dict[str, Any] | None = None
        self.answered = False
        self.explain_job: Any = None
        self.busy = False
        self.answer_seconds: float | None = None
        self.stack = QStackedWidget()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.addWidget(self.stack)
        self.stack.addWidget(self._setup_page())
        self.stack.addWidget(self._question_page())
        self.stack.addWidget(self._report_page())
        self.timer = QTimer(self)
        self.timer.setInterval(500)
        self.timer.timeout.connect(self._tick)
        self._shortcuts()
        self._dataset_changed()

    # -- setup page ---------------------------------------------------------------------

    def _setup_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(16)
        card = Card("Start a session")
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        self.dataset = DatasetPicker(self.ctx, "exam")
        self.dataset.import_clicked.connect(lambda: self.ctx.window.open_import("exam"))
        self.dataset.changed.connect(lambda _n: self._dataset_changed())
        grid.addWidget(QLabel("Questions"), 0, 0)
        grid.addWidget(self.dataset, 0, 1)
        self.mode_practice = QRadioButton("Practice — see the answer and its explanation "
                                          "after each question")  # fmt: skip
        self.mode_timed = QRadioButton("Timed exam — results at the end only")
        group = QButtonGroup(self)
        group.addButton(self.mode_practice)
        group.addButton(self.mode_timed)
        timed = setting("exam/mode", "practice") == "timed"
        (self.mode_timed if timed else self.mode_practice).setChecked(True)
        modes = QVBoxLayout()
        modes.setSpacing(4)
        modes.addWidget(self.mode_practice)
        modes.addWidget(self.mode_timed)
        grid.addWidget(QLabel("Mode"), 1, 0, Qt.AlignmentFlag.AlignTop)
        grid.addLayout(modes, 1, 1)
        self.count = QSpinBox()
        self.count.setSpecialValueText("All")
        self.count.setRange(0, 100000)
        self.count.setValue(setting("exam/count", 0, int))
        self.count.setToolTip("How many questions (from the start of the set)")
        grid.addWidget(QLabel("How many"), 2, 0)
        grid.addWidget(self.count, 2, 1)
        self.minutes = QSpinBox()
        self.minutes.setRange(1, 600)
        self.minutes.setSuffix(" min")
        self.minutes.setValue(setting("exam/minutes", 15, int))
        grid.addWidget(QLabel("Time limit"), 3, 0)
        grid.addWidget(self.minutes, 3, 1)
        self.pass_mark = QSpinBox()
        self.pass_mark.setRange(0, 100)
        self.pass_mark.setSuffix(" %")
        self.pass_mark.setValue(setting("exam/pass_mark", 60, int))
        grid.addWidget(QLabel("Pass mark"), 4, 0)
        grid.addWidget(self.pass_mark, 4, 1)
        self.only_missed = QCheckBox("Only the questions I got wrong last time")
        grid.addWidget(self.only_missed, 5, 1)
        grid.setColumnStretch(1, 1)
        card.add_layout(grid)
        self.mode_timed.toggled.connect(self._mode_changed)
        self._mode_changed()
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.start_button = primary(QPushButton("Start"))
        self.start_button.setMinimumWidth(120)
        self.start_button.clicked.connect(lambda: self.start())
        buttons.addWidget(self.start_button)
        card.add_layout(buttons)
        card.layout_.addStretch(1)
        row.addWidget(card, 3)

        past = Card("Your past sessions")
        self.past = RowsModel(
            [
                ("Date", lambda r: (r.get("started") or "")[:16].replace("T", " ")),
                ("Mode", lambda r: (r.get("settings") or {}).get("mode", "")),
                ("Score", lambda r: (r.get("summary") or {}).get("score")),
                ("Result", lambda r: ("passed" if (r.get("summary") or {}).get("passed")
                                      else "not passed") if r.get("summary") else r["status"]),
            ],
            self,
        )  # fmt: skip
        self.past.colour = lambda r: ("#15803d" if (r.get("summary") or {}).get("passed")
                                      else None)  # fmt: skip
        table = _table(self.past)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        past.add(table, 1)
        self.missed_note = muted(QLabel(""))
        self.missed_note.setWordWrap(True)
        past.add(self.missed_note)
        row.addWidget(past, 2)
        return page

    def _mode_changed(self) -> None:
        self.minutes.setEnabled(self.mode_timed.isChecked())

    def _dataset_changed(self) -> None:
        from engine.exam.session import missed_items, person_runs

        name = self.dataset.name
        if not name:
            self.past.set_rows([])
            return
        self.past.set_rows(person_runs(self.ctx.store, name))
        missed = missed_items(self.ctx.store, name)
        self.only_missed.setEnabled(bool(missed))
        if not missed:
            self.only_missed.setChecked(False)
        self.only_missed.setText(
            f"Only the {len(missed)} question(s) I got wrong last time"
            if missed else "Only the questions I got wrong last time (none yet)"
        )  # fmt: skip
        self.missed_note.setText(
            f"{len(missed)} question(s) of this set to review." if missed else ""
        )

    # -- question page --------------------------------------------------------------------

    def _question_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(10)
        top = QHBoxLayout()
        self.position = QLabel("")
        self.position.setObjectName("cardTitle")
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setMaximumWidth(260)
        self.kind = QLabel("")
        self.kind.setObjectName("pill")
        self.clock = QLabel("00:00")
        self.clock.setObjectName("timer")
        self.clock.setToolTip("Time on this question · total")
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
        qcard = Card()
        self.question = QLabel("")
        self.question.setObjectName("question")
        self.question.setWordWrap(True)
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        qcard.add(self.question)
        self.options = OptionList(multi=False)
        self.options.selection_changed.connect(self._selection_changed)
        qcard.add(self.options)
        bl.addWidget(qcard)

        self.feedback = Card()
        self.verdict = QLabel("")
        self.feedback.add(self.verdict)
        self.explanation = QLabel("")
        self.explanation.setWordWrap(True)
        self.explanation.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.feedback.add(self.explanation)
        erow = QHBoxLayout()
        self.explain_button = QPushButton("Ask the model to explain")
        self.explain_button.setToolTip("The loaded model explains this question, word by word")
        self.explain_button.clicked.connect(self.explain)
        self.explain_stop = QPushButton("Stop")
        self.explain_stop.clicked.connect(self._stop_explaining)
        self.explain_stop.setVisible(False)
        self.explain_lang = QComboBox()
        self.explain_lang.addItem("In the question's language", "auto")
        self.explain_lang.addItem("In Chinese", "zh")
        self.explain_lang.addItem("In English", "en")
        i = self.explain_lang.findData(setting("exam/explain_lang", "auto"))
        self.explain_lang.setCurrentIndex(max(i, 0))
        self.explain_lang.currentIndexChanged.connect(
            lambda _i: set_setting("exam/explain_lang", self.explain_lang.currentData())
        )
        self.explain_note = muted(QLabel("Written by a small local model: it can be wrong."))
        erow.addWidget(self.explain_button)
        erow.addWidget(self.explain_lang)
        erow.addWidget(self.explain_stop)
        erow.addWidget(self.explain_note)
        erow.addStretch(1)
        self.feedback.add_layout(erow)
        self.model_text = text_view(90)
        self.model_text.setVisible(False)
        self.feedback.add(self.model_text)
        self.feedback.setVisible(False)
        bl.addWidget(self.feedback)
        bl.addStretch(1)
        lay.addWidget(_scrolled(body), 1)

        actions = QHBoxLayout()
        self.end_button = QPushButton("End session")
        self.end_button.clicked.connect(self.end_session)
        self.skip_button = QPushButton("Skip")
        self.skip_button.setToolTip("Leave this question unanswered (it counts as wrong)")
        self.skip_button.clicked.connect(lambda: self.submit(skip=True))
        self.submit_button = primary(QPushButton("Check answer"))
        self.submit_button.setMinimumWidth(140)
        self.submit_button.clicked.connect(lambda: self.submit())
        self.next_button = primary(QPushButton("Next question"))
        self.next_button.setMinimumWidth(140)
        self.next_button.clicked.connect(self.next_question)
        actions.addWidget(self.end_button)
        actions.addStretch(1)
        actions.addWidget(self.skip_button)
        actions.addWidget(self.submit_button)
        actions.addWidget(self.next_button)
        lay.addLayout(actions)
        return page

    def _shortcuts(self) -> None:
        for letter in LETTERS:  # one shortcut a letter: "B" also matches the b key
            sc = QShortcut(QKeySequence(letter), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(lambda ll=letter: self._key_letter(ll))
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(self._key_enter)

    def _key_letter(self, letter: str) -> None:
        if self.stack.currentIndex() == 1 and not self.answered:
            self.options.toggle(letter)

    def _key_enter(self) -> None:
        if self.stack.currentIndex() != 1:
            return
        if self.next_button.isVisible() and self.next_button.isEnabled():
            self.next_question()
        elif self.submit_button.isEnabled():
            self.submit()

    # -- report page ------------------------------------------------------------------------

    def _report_page(self) -> QWidget:
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(0, 0, 6, 0)
        lay.setSpacing(14)
        top = QHBoxLayout()
        top.setSpacing(16)
        head = Card("Your result")
        self.session_label = muted(QLabel(""))
        head.add(self.session_label)
        self.score_label = QLabel("")
        self.score_label.setObjectName("bigNumber")
        head.add(self.score_label)
        self.pass_label = QLabel("")
        head.add(self.pass_label)
        self.stats_label = muted(QLabel(""))
        self.stats_label.setWordWrap(True)
        head.add(self.stats_label)
        head.layout_.addStretch(1)
        buttons = QHBoxLayout()
        self.review_button = primary(QPushButton("Review missed questions"))
        self.review_button.clicked.connect(self.review_missed)
        again = QPushButton("New session")
        again.clicked.connect(self.back_to_setup)
        buttons.addWidget(self.review_button)
        buttons.addWidget(again)
        buttons.addStretch(1)
        head.add_layout(buttons)
        top.addWidget(head, 2)
        self.type_card = Card("By question type")
        top.addWidget(self.type_card, 3)
        self.time_card = Card("Time per question")
        top.addWidget(self.time_card, 3)
        top_box = QWidget()
        top_box.setLayout(top)
        top_box.setFixedHeight(300)
        top.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(top_box)
        self.type_chart: Any = None
        self.time_chart: Any = None
        missed = Card("Questions to review")
        self.missed_view = text_view(160)
        missed.add(self.missed_view, 1)
        lay.addWidget(missed, 1)
        return body

    # -- flow -------------------------------------------------------------------------------

    def _call(self, fn: Any, on_done: Any, *args: Any) -> None:
        """Run a session call on the session thread (it owns the session's store)."""
        self.busy = True
        self._enable()

        def ended() -> None:
            self.busy = False
            self._enable()

        self.ctx.jobs.start(fn, *args, pool="session", on_done=on_done,
                            on_error=lambda e: show_error(self, e, self.ctx),
                            on_ended=ended)  # fmt: skip

    def start(self, keys: list[str] | None = None) -> None:
        """Start a session with the settings of the setup page (``keys``: only those)."""
        from engine.exam.session import ExamSession, missed_items

        dataset = self.dataset.name
        if not dataset:
            show_error(self, "Import a question set first (or use the sample).", self.ctx)
            return
        timed = self.mode_timed.isChecked()
        set_setting("exam/mode", "timed" if timed else "practice")
        set_setting("exam/count", self.count.value())
        set_setting("exam/minutes", self.minutes.value())
        set_setting("exam/pass_mark", self.pass_mark.value())
        if keys is None and self.only_missed.isChecked():
            keys = missed_items(self.ctx.store, dataset)
        kwargs = {
            "mode": "timed" if timed else "practice",
            "time_limit_s": self.minutes.value() * 60.0 if timed else None,
            "limit": self.count.value() or None,
            "keys": keys,
            "pass_mark": float(self.pass_mark.value()),
        }

        def make(job: Any) -> Any:
            session = ExamSession(job.store, dataset, **kwargs)
            return session, session.next_question()

        self._call(make, self._started)

    def _started(self, result: tuple[Any, dict[str, Any] | None]) -> None:
        self.session, item = result
        self.ctx.notify_runs()
        self.stack.setCurrentIndex(1)
        self.timer.start()
        self._show(item)

    def _show(self, item: dict[str, Any] | None) -> None:
        if item is None:
            self.end_session()
            return
        s = self.session
        self.item = item
        self.answered = False
        n = len(s.questions)
        self.position.setText(f"Question {s.index + 1} of {n}")
        self.bar.setRange(0, n)
        self.bar.setValue(s.index)
        kinds = [item.get(k) for k in ("type2", "type3") if item.get(k)]
        self.kind.setText(" · ".join(kinds))
        self.kind.setVisible(bool(kinds))
        self.question.setText(item["question"])
        self.options.set_options(list(zip(LETTERS, item["options"], strict=False)))
        self.feedback.setVisible(False)
        self.model_text.clear()
        self.model_text.setVisible(False)
        self.shown_at = time.monotonic()
        self._enable()
        self._tick()
        self.options.setFocus()

    def _selection_changed(self) -> None:
        self._enable()

    def _enable(self) -> None:
        practice = self.session is not None and self.session.mode == "practice"
        answering = not self.answered
        self.submit_button.setVisible(answering)
        self.submit_button.setEnabled(answering and not self.busy and bool(self.options.selected()))
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
        chosen = None if skip else (self.options.selected() or [None])[0]
        if chosen is None and not skip:
            return
        session = self.session
        self._call(lambda job: session.answer(chosen), self._answered)

    def _answered(self, feedback: Any) -> None:
        self.answered = True
        self.answer_seconds = feedback.seconds if feedback is not None else None
        if feedback is None:  # timed: straight on
            self.next_question()
            return
        self.options.reveal([feedback.gold], [feedback.chosen] if feedback.chosen else [])
        if feedback.correct:
            self.verdict.setObjectName("good")
            self.verdict.setText(f"Correct — {feedback.gold} ({_duration(feedback.seconds)})")
        else:
            self.verdict.setObjectName("bad")
            said = f"you chose {feedback.chosen}" if feedback.chosen else "skipped"
            self.verdict.setText(f"Not quite — the answer is {feedback.gold} ({said})")
        self.verdict.style().unpolish(self.verdict)
        self.verdict.style().polish(self.verdict)
        self.explanation.setText(feedback.explanation or "No explanation is given for this one.")
        self.feedback.setVisible(True)
        self.explain_button.setEnabled(True)
        self._enable()
        self.next_button.setFocus()

    def next_question(self) -> None:
        if self.session is None:
            return
        self._stop_explaining()
        session = self.session
        self._call(lambda job: session.next_question(), self._show)

    def explain(self) -> None:
        """Stream the model's explanation of the question just answered."""
        if self.session is None or self.item is None or self.explain_job is not None:
            return
        session, host = self.session, self.ctx.host
        lang = self.explain_lang.currentData()
        if lang == "auto":
            lang = item_language(self.item)

        def job(job: Any) -> str:
            model = host.get()
            out = []
            for piece in session.stream_explanation(model, lang=lang):
                job.piece(piece)
                out.append(piece)
                if job.cancelled:
                    model.cancel()
            return "".join(out)

        self.model_text.clear()
        self.model_text.setVisible(True)
        self.model_text.setPlaceholderText("Loading the model…" if host.model is None
                                           else "Thinking…")  # fmt: skip
        self.explain_button.setEnabled(False)
        self.explain_stop.setVisible(True)
        self.explain_job = self.ctx.jobs.start(
            job, pool="session", on_piece=self._piece,
            on_error=lambda e: show_error(self, e, self.ctx, "The model could not explain"),
            on_ended=self._explained,
        )  # fmt: skip

    def _piece(self, text: str) -> None:
        cursor = self.model_text.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self.model_text.setTextCursor(cursor)
        self.model_text.ensureCursorVisible()

    def _explained(self) -> None:
        self.explain_job = None
        self.explain_stop.setVisible(False)
        self.explain_button.setEnabled(True)

    def _stop_explaining(self) -> None:
        if self.explain_job is not None:
            self.explain_job.stop()
            if self.ctx.host.model is not None:
                self.ctx.host.model.cancel()

    def _tick(self) -> None:
        s = self.session
        if s is None or self.stack.currentIndex() != 1:
            return
        if s.time_limit_s is not None:
            left = s.time_left() or 0.0
            self.clock.setText(f"{_clock(left)} left")
            self.clock.setStyleSheet("color: #b91c1c;" if left < 60 else "")
            if left <= 0 and not self.busy:
                self.end_session()
        else:
            q = time.monotonic() - getattr(self, "shown_at", time.monotonic())
            if self.answered and self.answer_seconds is not None:
                q = self.answer_seconds  # this question's clock stopped at the answer
            self.clock.setText(f"{_clock(q)} · {_clock(s.elapsed())}")

    def end_session(self) -> None:
        if self.session is None:
            return
        self._stop_explaining()
        self.timer.stop()
        session = self.session
        self._call(lambda job: session.finish(), self._finished)

    def _finished(self, result: Any) -> None:
        self.ctx.notify_runs()
        self.show_report(result)
        self._dataset_changed()

    def show_report(self, result: Any) -> None:
        """Fill and show the report page for a :class:`~engine.exam.session.SessionResult`."""
        from gui.widgets import charts

        self.result = result
        mode = "Timed exam" if result.mode == "timed" else "Practice"
        dataset = self.session.dataset if self.session is not None else ""
        self.session_label.setText(f"{mode} · {dataset}")
        self.score_label.setText(f"{result.score:.0f}%")
        if result.passed:
            self.pass_label.setObjectName("good")
            self.pass_label.setText(f"Passed — the pass mark is {result.pass_mark:.0f}%")
        else:
            self.pass_label.setObjectName("bad")
            self.pass_label.setText(f"Not passed — the pass mark is {result.pass_mark:.0f}%")
        self.pass_label.style().unpolish(self.pass_label)
        self.pass_label.style().polish(self.pass_label)
        skipped = sum(1 for f in result.feedback if f.chosen is None)
        self.stats_label.setText(
            f"{result.correct} of {result.n} right · {result.answered} answered"
            + (f" · {skipped} skipped" if skipped else "")
            + f"<br>{_duration(result.seconds)} in all · "
            f"{_duration(result.seconds_per_question)} per question"
            + ("" if result.status == "finished" else " · ended early")
        )
        self.stats_label.setTextFormat(Qt.TextFormat.RichText)
        by_type = result.by_type or {}
        field = "type2" if "type2" in by_type else "type1" if "type1" in by_type else None
        rows = [(k, v["accuracy"], v["n"]) for k, v in by_type.get(field, {}).items()]
        if self.type_chart is None:
            self.type_chart = charts.view()
            self.time_chart = charts.view()
            self.type_card.add(self.type_chart, 1)
            self.time_card.add(self.time_chart, 1)
        self.type_chart.setChart(charts.bars(rows, "Accuracy (%)", mark=result.pass_mark))
        self.time_chart.setChart(self._time_chart(result))
        self.review_button.setEnabled(bool(result.missed))
        self.missed_view.setHtml(self._missed_html(result))
        self.stack.setCurrentIndex(2)

    def _time_chart(self, result: Any) -> Any:
        from gui.widgets import charts

        return charts.seconds_per_question([(f.seconds, f.correct) for f in result.feedback])

    def _missed_html(self, result: Any) -> str:
        if not result.missed:
            return "<p style='color:#15803d'><b>Nothing to review — every question right.</b></p>"
        by_key = {str(q["id"]): q for q in self.session.questions} if self.session else {}
        chosen = {f.key: f.chosen for f in result.feedback}
        parts = []
        for key in result.missed:
            q = by_key.get(key)
            if q is None:
                continue
            gold = q["answer"]
            opts = "".join(
                f"<div style='margin-left:12px; color:{'#15803d' if letter == gold else '#b91c1c' if letter == chosen.get(key) else '#374151'}'>"
                f"{letter}. {esc(text)}</div>"
                for letter, text in zip(LETTERS, q["options"], strict=False)
            )
            you = chosen.get(key) or "skipped"
            parts.append(
                f"<p style='margin-bottom:2px'><b>{esc(q['question'])}</b></p>{opts}"
                f"<p style='color:#6b7280; margin-top:4px'>You: {esc(you)} · Answer: {gold}</p>"
                f"<p style='margin-top:0'>{esc(q.get('explanation', ''))}</p><hr>"
            )
        return "".join(parts)

    def review_missed(self) -> None:
        result = getattr(self, "result", None)
        if result is None or not result.missed or self.session is None:
            return
        self.dataset.select(self.session.dataset)
        self.start(keys=list(result.missed))

    def back_to_setup(self) -> None:
        self.session = None
        self._dataset_changed()
        self.stack.setCurrentIndex(0)

    def closing(self) -> None:
        """The window closes: stop the stream; an unfinished session is closed as such."""
        self.timer.stop()
        self._stop_explaining()
        session = self.session
        if session is not None and not session.finished:
            self.ctx.jobs.start(lambda job: session.finish(), pool="session")


# ------------------------------------------------------------------------------------------
# A model's run
# ------------------------------------------------------------------------------------------


class EvalPanel(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.job: Any = None
        self.answers: list[dict[str, Any]] = []
        self.items: dict[str, dict[str, Any]] = {}
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(16)

        card = Card("Settings")
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        self.dataset = DatasetPicker(ctx, "exam")
        self.dataset.import_clicked.connect(lambda: ctx.window.open_import("exam"))
        self.model = ModelCombo(ctx)
        self.method = QComboBox()
        self.method.addItem("Write an answer and explanation", "generate")
        self.method.addItem("Read the letter probabilities (fast)", "logprob")
        self.shots = QComboBox()
        for n in (0, 1, 4, 8):
            self.shots.addItem("No examples" if n == 0 else f"{n} solved example(s)", n)
        self.lang = QComboBox()
        self.lang.addItem("Chinese (as published)", "zh")
        self.lang.addItem("English", "en")
        self.instruction = QCheckBox("Start with the instruction")
        self.instruction.setChecked(True)
        self.limit = QSpinBox()
        self.limit.setSpecialValueText("All")
        self.limit.setRange(0, 100000)
        self.at_once = QSpinBox()
        self.at_once.setRange(0, 64)
        self.at_once.setSpecialValueText("Automatic")
        self.at_once.setToolTip("Questions in flight at once (automatic: 8 for a served model)")
        rows = [
            ("Questions", self.dataset), ("Model", self.model), ("Method", self.method),
            ("Examples", self.shots), ("Prompt language", self.lang), ("", self.instruction),
            ("How many", self.limit), ("At once", self.at_once),
        ]  # fmt: skip
        for i, (label, w) in enumerate(rows):
            grid.addWidget(QLabel(label), i, 0)
            grid.addWidget(w, i, 1)
        grid.setColumnStretch(1, 1)
        card.add_layout(grid)
        self._restore()
        run_row = QHBoxLayout()
        run_row.addStretch(1)
        self.run_button = primary(QPushButton("Run"))
        self.run_button.setMinimumWidth(110)
        self.run_button.clicked.connect(lambda: self.run())
        run_row.addWidget(self.run_button)
        card.add_layout(run_row)
        card.layout_.addSpacing(8)
        resume_title = QLabel("Resume a stopped run")
        resume_title.setObjectName("cardTitle")
        card.add(resume_title)
        rrow = QHBoxLayout()
        self.resumable = QComboBox()
        self.resume_button = QPushButton("Resume")
        self.resume_button.clicked.connect(self.resume)
        rrow.addWidget(self.resumable, 1)
        rrow.addWidget(self.resume_button)
        card.add_layout(rrow)
        card.layout_.addSpacing(8)
        help_text = muted(
            QLabel(
                "<b>Write an answer</b>: the model answers and explains; the letter is read "
                "from its reply and the explanation is compared with the published one "
                "(ROUGE).<br><b>Letter probabilities</b>: one pass per question reads how "
                "likely each letter is — much faster, and it shows how sure the model was."
                "<br><b>Examples</b>: solved questions shown before each one (few-shot)."
            )
        )
        help_text.setWordWrap(True)
        help_text.setTextFormat(Qt.TextFormat.RichText)
        card.add(help_text)
        card.layout_.addStretch(1)
        card.setMaximumWidth(460)
        lay.addWidget(card, 2)

        right = Card("Progress")
        self.progress = ProgressRow()
        self.progress.stop_clicked.connect(self.stop)
        right.add(self.progress)
        self.live = QLabel("Not started")
        self.live.setObjectName("bigNumber")
        right.add(self.live)
        self.live_note = muted(QLabel("Accuracy so far"))
        right.add(self.live_note)
        self.rows = RowsModel(
            [
                ("", lambda r: {True: "✓", False: "✗"}.get(r.get("correct"), "·")),
                ("#", lambda r: r["item"]),
                ("Question", lambda r: r.get("question", "")),
                ("Chose", lambda r: r.get("chosen") or "—"),
                ("Answer", lambda r: r.get("gold") or ""),
            ],
            self,
        )
        self.rows.colour = lambda r: {True: "#15803d", False: "#b91c1c"}.get(r.get("correct"))
        table = _table(self.rows)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        right.add(table, 1)
        self.summary = muted(QLabel(""))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        right.add(self.summary)
        lay.addWidget(right, 3)
        ctx.runs_changed.append(self._load_resumable)
        self._load_resumable()

    def _restore(self) -> None:
        for combo, key in ((self.method, "method"), (self.shots, "shots"), (self.lang, "lang")):
            i = combo.findData(setting(f"exam_eval/{key}", combo.currentData()))
            if i >= 0:
                combo.setCurrentIndex(i)
        self.instruction.setChecked(setting("exam_eval/instruction", True, bool))
        self.limit.setValue(setting("exam_eval/limit", 0, int))

    def _save(self) -> None:
        set_setting("exam_eval/method", self.method.currentData())
        set_setting("exam_eval/shots", self.shots.currentData())
        set_setting("exam_eval/lang", self.lang.currentData())
        set_setting("exam_eval/instruction", self.instruction.isChecked())
        set_setting("exam_eval/limit", self.limit.value())

    def _load_resumable(self) -> None:
        runs = [r for r in self.ctx.store.runs("exam")
                if r["runner"] == "model" and r["status"] in ("cancelled", "failed")
                and not (self.job is not None and r["status"] == "running")]  # fmt: skip
        self.resumable.clear()
        for r in runs:
            self.resumable.addItem(
                f"#{r['id']} {r['model']} · {r['dataset']} · {r['n_done']}/{r['n_total']}", r["id"]
            )
        self.resume_button.setEnabled(bool(runs) and self.job is None)
        self.resumable.setEnabled(bool(runs))
        if not runs:
            self.resumable.addItem("No stopped runs")

    def run(self, resume: int | None = None) -> None:
        """Start a run with the chosen settings (or continue run ``resume``)."""
        from engine.exam.runner import ExamSettings
        from engine.runs import run as run_activity

        if self.job is not None:
            return
        host = self.ctx.host
        if resume is None:
            dataset = self.dataset.name
            model_name = self.model.name
            if not dataset or not model_name:
                show_error(self, "Choose a question set and a model.", self.ctx)
                return
            self._save()
            try:
                settings = ExamSettings(
                    model=model_name,
                    shots=self.shots.currentData(),
                    instruction=self.instruction.isChecked(),
                    lang=self.lang.currentData(),
                    method=self.method.currentData(),
                    limit=self.limit.value() or None,
                )
            except ValueError as exc:
                show_error(self, exc, self.ctx)
                return
        else:
            run = self.ctx.store.run(resume)
            dataset, model_name, settings = None, run["model"], None

        items_of = dataset or self.ctx.store.run(resume)["dataset"]
        self.items = {str(i["id"]): i for i in self.ctx.store.items(items_of)}

        at_once = self.at_once.value() or None

        def job(job: Any) -> dict[str, Any]:
            return run_activity(
                job.store,
                "exam",
                dataset,
                settings.as_dict() if settings is not None else {},
                resume=resume,
                pool=host.pool,
                progress=job.progress,
                cancel=job.cancel,
                concurrency=at_once,
            )

        self.answers = []
        self.rows.set_rows([])
        self.summary.setText("")
        self.live.setText("—")
        self.progress.started(0, "Starting…")
        self.run_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        self.job = self.ctx.jobs.start(
            job, on_progress=self._progress, on_done=self._done,
            on_error=lambda e: show_error(self, e, self.ctx, "The run failed"),
            on_ended=self._ended,
        )  # fmt: skip

    def resume(self) -> None:
        run_id = self.resumable.currentData()
        if run_id is not None:
            self.run(resume=int(run_id))

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText("Stopping after this question…")

    def _progress(self, p: Any) -> None:
        info = p.info or {}
        if info.get("run_id") and not getattr(self, "_announced", False):
            self._announced = True
            self.ctx.notify_runs()
        if "item" in info:
            item = self.items.get(str(info["item"]), {})
            question = " ".join(str(item.get("question", "")).split())
            self.answers.append(
                {"item": info["item"], "chosen": info.get("chosen"),
                 "correct": info.get("correct"), "gold": item.get("answer"),
                 "question": question[:80] + ("…" if len(question) > 80 else "")}
            )  # fmt: skip
            self.rows.set_rows(list(reversed(self.answers)))
            right = sum(1 for a in self.answers if a["correct"])
            n = len(self.answers)
            self.live.setText(f"{100 * right / n:.0f}%")
            self.live_note.setText(f"Accuracy so far: {right} of {n} right")
        msg = p.message if p.total else p.message
        self.progress.update(p, msg if p.total else "Loading the model…")

    def _done(self, summary: dict[str, Any]) -> None:
        self._announced = False
        self.ctx.notify_runs()
        if check_crash(self.ctx, summary):
            pass
        keys = ["accuracy", "answered", "rouge1", "rougeL", "seconds_per_question"]
        parts = [
            f"{esc(metric_label(k, 'exam'))}: <b>{esc(format_value(summary.get(k)))}</b>"
            for k in keys
            if summary.get(k) is not None
        ]
        status = summary.get("status", "")
        self.summary.setText(f"Run #{summary.get('run_id')} {esc(status)} · " + " · ".join(parts))
        self.live.setText(f"{summary.get('accuracy', 0):.0f}%")
        self.live_note.setText(
            f"Accuracy over {summary.get('n')} questions (unanswered count as wrong)"
        )

    def _ended(self) -> None:
        self.job = None
        self.progress.ended(self.progress.label.text().replace("Stopping after this question…",
                                                                "Stopped"))  # fmt: skip
        self.run_button.setEnabled(True)
        self._load_resumable()


def _progress(done: int, total: int, message: str) -> Any:
    from engine.progress import Progress

    return Progress(done, total, message)
