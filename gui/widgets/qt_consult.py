"""Consultation: interview a simulated patient as the doctor, then answer the case's task;
see which facts you uncovered, the consultation's metrics and the transcript. A second tab
runs a model doctor against the model patient, the transcript shown as it happens.

The patient, the fact matching, the scoring and the metrics are :mod:`engine.consult`'s.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import metric_label
from gui.models import StoreTap, set_setting, setting
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

ROLE_STYLE = {
    # role: (label, background, text colour, align)
    "doctor": ("You", "#dbeafe", "#1e3a8a", "right"),
    "patient": ("Patient", "#f1f3f6", "#111827", "left"),
}


def transcript_html(turns: list[dict[str, Any]], doctor_label: str = "You") -> str:
    """Chat bubbles for a list of ``{role, text}`` turns."""
    rows = []
    for t in turns:
        label, bg, fg, align = ROLE_STYLE.get(t["role"], ROLE_STYLE["patient"])
        if t["role"] == "doctor":
            label = doctor_label
        kind = (t.get("extra") or {}).get("kind")
        if kind == "conclusion":
            label += " (concludes)"
        text = esc(t["text"]).replace("\n", "<br>") or "<span style='color:#9ca3af'>…</span>"
        pad_l, pad_r = ("18%", "0") if align == "right" else ("0", "18%")
        rows.append(
            f"<table width='100%' cellspacing='0' cellpadding='0' style='margin:4px 0'>"
            f"<tr><td style='padding-left:{pad_l}; padding-right:{pad_r}' align='{align}'>"
            f"<div style='color:#6b7280; font-size:8.5pt'>{esc(label)}</div>"
            f"<table cellpadding='9' cellspacing='0' style='background:{bg}'>"
            f"<tr><td style='color:{fg}'>{text}</td></tr></table></td></tr></table>"
        )
    return "".join(rows)


def _table(model: Any) -> QTableView:
    t = QTableView()
    t.setModel(model)
    t.verticalHeader().setVisible(False)
    t.setShowGrid(False)
    t.setAlternatingRowColors(True)
    t.setWordWrap(True)
    t.horizontalHeader().setHighlightSections(False)
    return t


def _session() -> Any:
    """The consultation engine's session module (imported when first needed)."""
    from engine.consult import session

    return session


class ConsultScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        from engine.consult.cases import ensure_sample

        try:
            ensure_sample(ctx.store)
        except Exception as exc:  # noqa: BLE001
            ctx.status(f"The sample cases could not be loaded: {exc}")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(28, 22, 28, 20)
        outer.setSpacing(12)
        outer.addWidget(
            Header(
                "Consultation",
                "Interview a simulated patient, then make your diagnosis. The patient only "
                "tells what you ask about.",
            )
        )
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.person = PersonPanel(ctx)
        self.models = ModelRunPanel(ctx)
        self.tabs.addTab(self.person, "See a patient")
        self.tabs.addTab(self.models, "Model vs model")
        outer.addWidget(self.tabs, 1)

    def closing(self) -> None:
        self.person.stop_reply()
        self.person.abandon()


class PersonPanel(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.consultation: Any = None
        self.case: Any = None
        self.turns: list[dict[str, Any]] = []
        self.reply_job: Any = None
        self.busy = False
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        lay.addWidget(split)

        # -- cases -------------------------------------------------------------------------
        cases = Card("Patients")
        self.dataset = DatasetPicker(ctx, "consult", compact=True)
        self.dataset.import_clicked.connect(lambda: ctx.window.open_import("consult"))
        self.dataset.changed.connect(lambda _n: self._load_cases())
        cases.add(self.dataset)
        self.case_list = QListWidget()
        self.case_list.setObjectName("plain")
        self.case_list.setWordWrap(True)
        self.case_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.case_list.currentItemChanged.connect(lambda *_: self._case_selected())
        self.case_list.itemDoubleClicked.connect(lambda *_: self.start())
        cases.add(self.case_list, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Questions allowed"))
        self.max_turns = QSpinBox()
        self.max_turns.setRange(1, 50)
        self.max_turns.setValue(setting("consult/max_turns", 10, int))
        row.addWidget(self.max_turns)
        cases.add_layout(row)
        self.start_button = primary(QPushButton("Start consultation"))
        self.start_button.clicked.connect(lambda: self.start())
        cases.add(self.start_button)
        cases.setMinimumWidth(260)
        split.addWidget(cases)

        # -- the dialogue --------------------------------------------------------------------
        chat = Card("Consultation")
        self.chat = text_view()
        self.chat.setPlaceholderText("Choose a patient and start the consultation.")
        chat.add(self.chat, 1)
        ask = QHBoxLayout()
        self.question = QLineEdit()
        self.question.setPlaceholderText("Ask the patient a question, e.g. “Where does it hurt?”")
        self.question.returnPressed.connect(lambda: self.ask())
        self.ask_button = primary(QPushButton("Ask"))
        self.ask_button.clicked.connect(lambda: self.ask())
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop_reply)
        self.stop_button.setVisible(False)
        ask.addWidget(self.question, 1)
        ask.addWidget(self.ask_button)
        ask.addWidget(self.stop_button)
        chat.add_layout(ask)
        foot = QHBoxLayout()
        self.left_label = muted(QLabel(""))
        self.end_button = QPushButton("End consultation")
        self.end_button.setToolTip("Stop asking and answer the case's question")
        self.end_button.clicked.connect(self.end)
        foot.addWidget(self.left_label, 1)
        foot.addWidget(self.end_button)
        chat.add_layout(foot)
        chat.setMinimumWidth(380)
        split.addWidget(chat)

        # -- task and results -----------------------------------------------------------------
        self.side = QStackedWidget()
        self.side.setMinimumWidth(320)
        brief = Card("The case")
        self.brief = QLabel("")
        self.brief.setWordWrap(True)
        self.brief.setTextFormat(Qt.TextFormat.RichText)
        self.brief.setAlignment(Qt.AlignmentFlag.AlignTop)
        brief.add(self.brief, 1)
        self.side.addWidget(brief)

        task = Card("Your answer")
        self.task_text = QLabel("")
        self.task_text.setObjectName("question")
        self.task_text.setWordWrap(True)
        task.add(self.task_text)
        self.task_options = OptionList(multi=False)
        task.add(self.task_options)
        self.diagnosis = QLineEdit()
        self.diagnosis.setPlaceholderText("Type the most likely diagnosis")
        self.diagnosis.returnPressed.connect(self.submit)
        task.add(self.diagnosis)
        task.layout_.addStretch(1)
        self.submit_button = primary(QPushButton("Submit answer"))
        self.submit_button.clicked.connect(self.submit)
        task.add(self.submit_button)
        self.side.addWidget(task)

        result = Card("How it went")
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        result.add(self.verdict)
        self.metrics = RowsModel([("Metric", lambda r: r[0]), ("", lambda r: r[1])], self)
        mt = _table(self.metrics)
        mt.horizontalHeader().setVisible(False)
        mt.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        mt.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        mt.verticalHeader().setDefaultSectionSize(24)
        mt.setFixedHeight(7 * 24 + 4)
        mt.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        result.add(mt)
        facts_title = QLabel("What the patient knew")
        facts_title.setObjectName("cardTitle")
        result.add(facts_title)
        self.facts = RowsModel(
            [("", lambda f: {"revealed": "✓", "given": "~", "never_asked": "·"}[f["status"]]),
             ("Fact", lambda f: f"{f['key']}: {f['value']}")], self)  # fmt: skip
        self.facts.colour = lambda f: {"revealed": "#15803d", "given": "#b45309",
                                       "never_asked": "#6b7280"}[f["status"]]  # fmt: skip
        self.facts.tooltip = lambda f: {
            "revealed": f"Revealed (turn {f['turn']})",
            "given": f"Asked about (turn {f['turn']}) but not said in the reply",
            "never_asked": "Never asked about",
        }[f["status"]]
        ft = _table(self.facts)
        ft.horizontalHeader().setVisible(False)
        ft.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        ft.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        ft.horizontalHeader().sectionResized.connect(lambda *_: ft.resizeRowsToContents())
        self.facts_table = ft
        result.add(ft, 1)
        self.facts_note = muted(QLabel("✓ revealed · ~ asked about, not said · never asked"))
        self.facts_note.setWordWrap(True)
        result.add(self.facts_note)
        again = QPushButton("Another patient")
        again.clicked.connect(self.reset)
        result.add(again)
        self.side.addWidget(result)
        split.addWidget(self.side)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 5)
        split.setStretchFactor(2, 3)
        split.setSizes([280, 620, 380])
        self._load_cases()
        self._enable()

    # -- cases -----------------------------------------------------------------------------

    def _load_cases(self) -> None:
        from engine.consult.cases import load_cases

        self.case_list.clear()
        name = self.dataset.name
        if not name:
            return
        try:
            cases = load_cases(self.ctx.store, name)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx)
            return
        for i, case in enumerate(cases, 1):
            opening = case.initial_request
            short = opening if len(opening) < 70 else opening[:67].rstrip() + "…"
            item = QListWidgetItem(f"Patient {i}\n{short}")
            item.setData(Qt.ItemDataRole.UserRole, case)
            item.setToolTip(opening)
            self.case_list.addItem(item)
        if self.case_list.count():
            self.case_list.setCurrentRow(0)

    def _case_selected(self) -> None:
        item = self.case_list.currentItem()
        if item is None or self.consultation is not None:
            return
        case = item.data(Qt.ItemDataRole.UserRole)
        kind = "a multiple-choice question" if case.task.kind == "mcq" else "naming the diagnosis"
        self.brief.setText(
            f"<p><b>The patient says:</b><br>“{esc(case.initial_request)}”</p>"
            f"<p style='color:#4b5563'>Ask questions to learn what you need. When you have "
            f"enough, end the consultation: the case ends with {kind}.</p>"
            f"<p style='color:#6b7280'><small>The patient knows {len(case.facts)} facts "
            f"about their health; they answer only what you ask.</small></p>"
        )

    # -- the dialogue ------------------------------------------------------------------------

    def _enable(self) -> None:
        active = self.consultation is not None and not self.consultation.finished
        asking = active and self.side.currentIndex() == 0
        self.question.setEnabled(asking and not self.busy)
        self.ask_button.setEnabled(asking and not self.busy)
        self.end_button.setEnabled(asking and not self.busy)
        self.start_button.setEnabled(self.consultation is None and not self.busy)
        self.case_list.setEnabled(self.consultation is None)
        self.dataset.setEnabled(self.consultation is None)
        self.stop_button.setVisible(self.reply_job is not None)
        if active:
            left = self.consultation.questions_left
            self.left_label.setText(f"{left} question(s) left")
        elif self.consultation is None:
            self.left_label.setText("")
        else:
            self.left_label.setText("Consultation over")

    def start(self) -> None:
        item = self.case_list.currentItem()
        dataset = self.dataset.name
        if item is None or not dataset or self.consultation is not None:
            return
        case = item.data(Qt.ItemDataRole.UserRole)
        max_turns = self.max_turns.value()
        set_setting("consult/max_turns", max_turns)
        host = self.ctx.host

        def job(job: Any) -> Any:
            from engine.consult.session import start_person_consultation

            return start_person_consultation(job.store, dataset, case, host.get(), max_turns)

        self.busy = True
        self.case = case
        self.chat.setHtml("<p style='color:#6b7280'>Calling the patient in…</p>")
        self._enable()
        self.ctx.jobs.start(job, pool="session", on_done=self._started,
                            on_error=self._failed, on_ended=self._idle)  # fmt: skip

    def _started(self, consultation: Any) -> None:
        self.consultation = consultation
        self.turns = list(consultation.turns)
        self._render()
        self.ctx.notify_runs()
        self._enable()
        self.question.setFocus()

    def _failed(self, exc: BaseException) -> None:
        show_error(self, exc, self.ctx)

    def _idle(self) -> None:
        self.busy = False
        self._enable()

    def _render(self) -> None:
        self.chat.setHtml(transcript_html(self.turns))
        bar = self.chat.verticalScrollBar()
        bar.setValue(bar.maximum())

    def ask(self, text: str | None = None) -> None:
        """Put a question to the patient; the reply streams into the dialogue."""
        question = (text if text is not None else self.question.text()).strip()
        c = self.consultation
        if not question or c is None or self.busy or c.questions_left <= 0:
            return
        self.question.clear()
        self.turns.append({"role": "doctor", "text": question})
        self.turns.append({"role": "patient", "text": ""})
        self._render()

        def job(job: Any) -> Any:
            stream = c.ask_stream(question)
            for piece in stream:
                job.piece(piece)
                if job.cancelled:
                    stream.cancel()
            return stream.turn

        self.busy = True
        self.reply_job = self.ctx.jobs.start(
            job, pool="session", on_piece=self._piece, on_done=self._replied,
            on_error=self._failed, on_ended=self._reply_ended,
        )  # fmt: skip
        self._enable()

    def _piece(self, text: str) -> None:
        self.turns[-1]["text"] += text
        self._render()

    def _replied(self, turn: dict[str, Any] | None) -> None:
        self.turns = list(self.consultation.turns)
        self._render()

    def _reply_ended(self) -> None:
        self.reply_job = None
        self.busy = False
        self._enable()
        if self.consultation is not None and self.consultation.questions_left == 0:
            self.left_label.setText("No questions left: time to answer.")
            self.end()
        else:
            self.question.setFocus()

    def stop_reply(self) -> None:
        if self.reply_job is not None:
            self.reply_job.stop()
            if self.ctx.host.model is not None:
                self.ctx.host.model.cancel()

    def end(self) -> None:
        """Stop asking: show the case's task."""
        c = self.consultation
        if c is None or self.busy:
            return
        task = c.case.task
        if task.kind == "mcq":
            self.task_text.setText(task.question)
            self.task_options.set_options(list(task.options.items()))
            self.task_options.setVisible(True)
            self.diagnosis.setVisible(False)
        else:
            self.task_text.setText(task.question or "What is the most likely diagnosis?")
            self.task_options.setVisible(False)
            self.diagnosis.setVisible(True)
            self.diagnosis.setFocus()
        self.side.setCurrentIndex(1)
        self._enable()

    def submit(self) -> None:
        c = self.consultation
        if c is None or self.busy or c.finished:
            return
        if c.case.task.kind == "mcq":
            chosen = self.task_options.selected()
            if not chosen:
                return
            answer = chosen[0]
        else:
            answer = self.diagnosis.text().strip()
            if not answer:
                return
        self.busy = True
        self.submit_button.setEnabled(False)
        self.ctx.jobs.start(lambda job: _session().finish_person_consultation(c, answer), pool="session",
                            on_done=self._finished, on_error=self._failed,
                            on_ended=self._idle)  # fmt: skip

    def _finished(self, result: Any) -> None:
        from engine.consult.metrics import fact_view

        c = self.consultation
        self.ctx.notify_runs()
        task = result.task
        if c.case.task.kind == "mcq":
            self.task_options.reveal([task.gold], [task.chosen] if task.chosen else [])
            gold_text = f"{task.gold}. {c.case.task.options.get(task.gold, '')}"
        else:
            gold_text = task.gold
        colour = "#15803d" if result.correct else "#b91c1c"
        headline = "Right diagnosis" if result.correct else "Not this time"
        extra = ""
        if task.similarity is not None:
            extra = f"<br><small>Similarity to the right diagnosis: {100 * task.similarity:.0f}%</small>"
        said = task.chosen or task.response or "—"
        self.verdict.setText(
            f"<p style='color:{colour}; font-size:13pt'><b>{headline}</b></p>"
            f"<p>You said: {esc(said)}<br>The answer: <b>{esc(gold_text)}</b>{extra}</p>"
        )
        m = result.metrics
        keys = ["turns", "revealed", "patient_recall", "doctor_recall", "doctor_f1", "diversity",
                "leaked"]  # fmt: skip
        rows = []
        for k in keys:
            v = m.get(k)
            if isinstance(v, float) and k not in ("turns", "revealed", "leaked"):
                v = f"{100 * v:.0f}%"
            rows.append((_label(k), format_value(v)))
        self.metrics.set_rows(rows)
        self.facts.set_rows(fact_view(c.case, c.turns))
        self.side.setCurrentIndex(2)
        QTimer.singleShot(0, self.facts_table.resizeRowsToContents)
        self._enable()

    def abandon(self) -> None:
        """Close an unfinished consultation's run as cancelled (its turns are kept)."""
        c = self.consultation
        if c is not None and not c.finished:
            self.ctx.jobs.start(
                lambda job: _session().abandon_person_consultation(c), pool="session"
            )

    def reset(self) -> None:
        """Back to choosing a patient."""
        self.abandon()
        self.consultation = None
        self.turns = []
        self.chat.clear()
        self.side.setCurrentIndex(0)
        self.submit_button.setEnabled(True)
        self.diagnosis.clear()
        self._case_selected()
        self._enable()


def _label(key: str) -> str:
    return {
        "turns": "Questions asked",
        "revealed": "Facts revealed",
        "patient_recall": "Facts in the replies (recall)",
        "doctor_recall": "Topics you covered (recall)",
        "doctor_f1": "Doctor F1",
        "diversity": "Question overlap",
        "leaked": "Facts told unasked",
    }.get(key, metric_label(key, "consult"))


# ------------------------------------------------------------------------------------------
# A model doctor against the model patient
# ------------------------------------------------------------------------------------------


class ModelRunPanel(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.job: Any = None
        self.turns: list[dict[str, Any]] = []
        self.case_key: str | None = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(16)
        card = Card("Settings")
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        self.dataset = DatasetPicker(ctx, "consult")
        self.dataset.import_clicked.connect(lambda: ctx.window.open_import("consult"))
        self.doctor = QComboBox()
        self.doctor_model = ModelCombo(ctx)
        self.patient_model = ModelCombo(ctx)
        self.doctor.addItem("A model", "model")
        self.doctor.addItem("Oracle: asks about every fact in order", "oracle-direct")
        self.doctor.addItem("Oracle: every fact, random order", "oracle-random")
        self.doctor.addItem("No consultation, all facts (upper bound)", "upper")
        self.doctor.addItem("No consultation, opening only (lower bound)", "lower")
        self.doctor.currentIndexChanged.connect(self._doctor_changed)
        self.prompt_style = QComboBox()
        self.prompt_style.addItem("Detailed doctor prompt", "long")
        self.prompt_style.addItem("Short doctor prompt", "short")
        self.patient_mode = QComboBox()
        self.patient_mode.addItem("As in the paper", "paper")
        self.patient_mode.addItem("Grounded in the asked facts", "grounded")
        self.patient_mode_note = muted(QLabel(""))
        self.patient_mode_note.setWordWrap(True)
        self.patient_mode.currentIndexChanged.connect(self._patient_mode_changed)
        self.turns_spin = QSpinBox()
        self.turns_spin.setRange(1, 50)
        self.turns_spin.setValue(setting("consult_run/max_turns", 5, int))
        self.limit = QSpinBox()
        self.limit.setRange(0, 100000)
        self.limit.setSpecialValueText("All")
        self.limit.setValue(setting("consult_run/limit", 1, int))
        rows = [("Cases", self.dataset), ("Doctor", self.doctor), ("Doctor model", self.doctor_model),
                ("Prompt", self.prompt_style), ("Patient model", self.patient_model),
                ("Patient", self.patient_mode), ("", self.patient_mode_note),
                ("Questions per case", self.turns_spin), ("How many cases", self.limit)]  # fmt: skip
        for i, (label, w) in enumerate(rows):
            grid.addWidget(QLabel(label), i, 0)
            grid.addWidget(w, i, 1)
        grid.setColumnStretch(1, 1)
        card.add_layout(grid)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.run_button = primary(QPushButton("Run"))
        self.run_button.setMinimumWidth(110)
        self.run_button.clicked.connect(self.run)
        buttons.addWidget(self.run_button)
        card.add_layout(buttons)
        card.layout_.addStretch(1)
        card.setMaximumWidth(470)
        lay.addWidget(card, 2)

        live = Card("Live transcript")
        self.progress = ProgressRow()
        self.progress.stop_clicked.connect(self.stop)
        live.add(self.progress)
        self.case_label = muted(QLabel(""))
        live.add(self.case_label)
        self.transcript = text_view()
        self.transcript.setPlaceholderText("The doctor's questions and the patient's replies "
                                           "appear here as they are made.")  # fmt: skip
        live.add(self.transcript, 1)
        self.summary = muted(QLabel(""))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        live.add(self.summary)
        lay.addWidget(live, 3)
        self._doctor_changed()
        self._patient_mode_changed()

    def _patient_mode_changed(self) -> None:
        notes = {
            "paper": "Sees every fact and the dialogue; what it reveals is measured.",
            "grounded": "Sees only the facts a question asks about; for tiny models, students.",
        }
        self.patient_mode_note.setText(notes[self.patient_mode.currentData()])

    def _doctor_changed(self) -> None:
        is_model = self.doctor.currentData() == "model"
        self.doctor_model.setEnabled(is_model)
        self.prompt_style.setEnabled(is_model)
        self.patient_model.setEnabled(self.doctor.currentData() not in ("upper", "lower"))
        self.patient_mode.setEnabled(self.doctor.currentData() not in ("upper", "lower"))

    def run(self) -> None:
        from engine.consult.run import run_consult

        dataset = self.dataset.name
        if not dataset or self.job is not None:
            return
        set_setting("consult_run/max_turns", self.turns_spin.value())
        set_setting("consult_run/limit", self.limit.value())
        doctor = self.doctor.currentData()
        if doctor == "model":
            doctor = self.doctor_model.name or "model"
        patient = self.patient_model.name
        host = self.ctx.host
        kwargs = {"patient": patient, "style": self.prompt_style.currentData(),
                  "patient_mode": self.patient_mode.currentData(),
                  "max_turns": self.turns_spin.value(), "limit": self.limit.value() or None}  # fmt: skip

        def job(job: Any) -> dict[str, Any]:
            store = StoreTap(job.store, lambda kind, data: job.emit((kind, data)))
            return run_consult(
                store,
                dataset,
                doctor,
                pool=host.pool,
                progress=job.progress,
                cancel=job.cancel,
                **kwargs,
            )

        self.turns = []
        self.case_key = None
        self.transcript.clear()
        self.summary.setText("")
        self.case_label.setText("Loading the models…")
        self.progress.started(0, "Starting…")
        self.run_button.setEnabled(False)
        self.job = self.ctx.jobs.start(
            job, on_event=self._event, on_progress=self._progress, on_done=self._done,
            on_error=lambda e: show_error(self, e, self.ctx, "The run failed"),
            on_ended=self._ended,
        )  # fmt: skip

    def _event(self, event: tuple[str, dict[str, Any]]) -> None:
        kind, data = event
        if kind == "run":
            self.ctx.notify_runs()
        elif kind in ("turn", "reset"):
            if data["item_key"] != self.case_key or kind == "reset":
                self.case_key = data["item_key"]
                self.turns = []
                self.case_label.setText(f"Case {self.case_key}")
            if kind == "turn":
                self.turns.append(data)
                self.transcript.setHtml(transcript_html(self.turns, doctor_label="Doctor"))
                bar = self.transcript.verticalScrollBar()
                bar.setValue(bar.maximum())
        elif kind == "answer":
            ok = data.get("correct")
            verdict = "right" if ok else "wrong"
            self.case_label.setText(
                f"Case {data['item_key']}: answered {data.get('chosen') or '—'} "
                f"(right answer {data.get('gold')}) — {verdict}"
            )

    def _progress(self, p: Any) -> None:
        self.progress.update(p, f"{p.done} of {p.total} cases")

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText("Stopping after this turn…")

    def _done(self, summary: dict[str, Any]) -> None:
        self.ctx.notify_runs()
        check_crash(self.ctx, summary)
        keys = ["accuracy", "patient_f1", "doctor_f1", "avg_turns", "leakage"]
        parts = [f"{esc(metric_label(k, 'consult'))}: <b>{esc(format_value(summary.get(k)))}</b>"
                 for k in keys if k in summary]  # fmt: skip
        self.summary.setText(f"Run #{summary.get('run_id')} {esc(summary.get('status'))} · "
                             + " · ".join(parts))  # fmt: skip

    def _ended(self) -> None:
        self.job = None
        self.progress.ended("")
        self.run_button.setEnabled(True)
