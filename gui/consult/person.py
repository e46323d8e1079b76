"""Consultation with a simulated patient, for a person: choose a case, interview the patient
(the replies stream in), end the consultation and answer the case's task, then see the
facts uncovered and the consultation's metrics.

The patient, the fact matching, the scoring and the metrics are :mod:`engine.consult`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidgetItem,
    QSplitter,
    QStackedWidget,
    QWidget,
)

from engine.activities import metric_label
from engine.consult.settings import ConsultSettings
from gui.models import set_setting, setting
from gui.tables import RowsModel, format_value, table_view
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    SendRow,
    button,
    esc,
    muted,
    plain_list,
    primary,
    show_error,
    spin_box,
    text_view,
)
from gui.widgets.question import OptionList
from gui.widgets.screen import SessionCalls, VerticalScroll, under_way

if TYPE_CHECKING:
    from types import ModuleType

    from engine.consult.cases.cases import Case
    from engine.consult.doctor.dialogue import Consultation, ConsultResult
    from engine.consult.scoring.metrics import CaseMetrics
    from engine.types import JSONDict, Row, Turn
    from gui.workers import Job, Worker

ROLE_STYLE = {
    # role: (label, background, text colour, align)
    "doctor": ("You", "#dbeafe", "#1e3a8a", "right"),
    "patient": ("Patient", "#f1f3f6", "#111827", "left"),
}


def transcript_html(turns: Sequence[Row], doctor_label: str = "You") -> str:
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


def _session() -> ModuleType:
    """The engine's module of a person's consultation (imported when first needed)."""
    from engine.consult.doctor import person

    return person


class PersonPanel(QWidget, SessionCalls):
    """A person consults a simulated patient: the cases, the dialogue, the task and result."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.consultation: Consultation | None = None
        self.case: Case | None = None
        # the turns shown: the consultation's, then a question and its reply as it streams
        self.turns: list[Any] = []
        self.reply_job: Worker | None = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        lay.addWidget(split)
        self.cases_card = self._cases_card()
        self.chat_card = self._chat_card()
        split.addWidget(self.cases_card)
        split.addWidget(self.chat_card)
        self.side = QStackedWidget()
        self.side.setMinimumWidth(320)
        self.side.addWidget(self._brief_card())
        self.side.addWidget(self._task_card())
        self.side.addWidget(VerticalScroll(self._result_card()))  # scrolls in a short window
        split.addWidget(self.side)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 5)
        split.setStretchFactor(2, 3)
        split.setSizes([280, 620, 380])
        self._load_cases()
        self._enable()

    # -- building ----------------------------------------------------------------------------

    def _cases_card(self) -> Card:
        cases = Card("Patients")
        self.dataset = DatasetPicker(self.ctx, "consult", compact=True, remember="consult")
        self.dataset.import_clicked.connect(self._open_import)
        self.dataset.changed.connect(self._load_cases)
        cases.add(self.dataset)
        self.case_list = plain_list(self._case_selected)
        self.case_list.setWordWrap(True)
        self.case_list.itemDoubleClicked.connect(self.start)
        cases.add(self.case_list, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Questions allowed"))
        self.max_turns = spin_box(
            1, 50, setting("consult/max_turns", ConsultSettings.max_turns, int)
        )
        row.addWidget(self.max_turns)
        cases.add_layout(row)
        self.start_button = primary(button("Start consultation", self.start))
        cases.add(self.start_button)
        self.go_button = button("Go on", self.go_on, "Go on with this patient's consultation")
        cases.add(self.go_button)
        cases.setMinimumWidth(260)
        return cases

    def _chat_card(self) -> Card:
        chat = Card("Consultation")
        self.chat = text_view()
        self.chat.setPlaceholderText("Choose a patient and start the consultation.")
        chat.add(self.chat, 1)
        self.question = QLineEdit()
        self.question.setPlaceholderText("Ask the patient a question, e.g. “Where does it hurt?”")
        ask = SendRow(self.question, "Ask", self._ask_clicked, self.stop_reply)
        self.ask_button, self.stop_button = ask.send, ask.stop
        self.stop_button.setVisible(False)
        chat.add_layout(ask)
        foot = QHBoxLayout()
        self.left_label = muted(QLabel(""))
        self.end_button = button(
            "End consultation", self.end, "Stop asking and answer the case's question"
        )
        foot.addWidget(self.left_label, 1)
        foot.addWidget(self.end_button)
        chat.add_layout(foot)
        chat.setMinimumWidth(380)
        return chat

    def _brief_card(self) -> Card:
        brief = Card("The case")
        self.brief = QLabel("")
        self.brief.setWordWrap(True)
        self.brief.setTextFormat(Qt.TextFormat.RichText)
        self.brief.setAlignment(Qt.AlignmentFlag.AlignTop)
        brief.add(self.brief, 1)
        return brief

    def _task_card(self) -> Card:
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
        self.submit_button = primary(button("Submit answer", self.submit))
        task.add(self.submit_button)
        return task

    def _result_card(self) -> Card:
        result = Card("How it went")
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        result.add(self.verdict)
        self.facts_title = QLabel("Facts the patient told you")
        self.facts_title.setObjectName("cardTitle")
        self.facts_title.setWordWrap(True)
        result.add(self.facts_title)
        self.facts = RowsModel([("", _fact_mark), ("Fact", _fact_text)], self)
        self.facts.colour = _fact_colour
        self.facts.tooltip = _fact_tip
        self.facts_table = table_view(self.facts, stretch=1, fit=[0], header=False, wrap=True)
        self.facts_table.horizontalHeader().sectionResized.connect(self._fit_fact_rows)
        self.facts_table.setMinimumHeight(110)  # the card fits the window; the list scrolls
        result.add(self.facts_table, 1)
        self.facts_note = muted(QLabel(FACTS_LEGEND))
        self.facts_note.setWordWrap(True)
        result.add(self.facts_note)
        audit_title = QLabel("The patient audited")
        audit_title.setObjectName("cardTitle")
        result.add(audit_title)
        self.audit = QLabel("")
        self.audit.setWordWrap(True)
        self.audit.setTextFormat(Qt.TextFormat.RichText)
        result.add(self.audit)
        overlap_title = QLabel("Word overlap with the case")
        overlap_title.setObjectName("cardTitle")
        result.add(overlap_title)
        self.metrics: list[tuple[str, str]] = []  # (the engine's label, the value)
        self.overlap = QLabel("")
        self.overlap.setWordWrap(True)
        self.overlap.setTextFormat(Qt.TextFormat.RichText)
        result.add(self.overlap)
        overlap_note = muted(
            QLabel("Shared words, not facts: the research measure of the consultation paper.")
        )
        overlap_note.setWordWrap(True)
        result.add(overlap_note)
        result.add(button("Another patient", self.reset))
        return result

    def _open_import(self) -> None:
        if self.ctx.window is not None:
            self.ctx.window.open_import("consult")

    def _fit_fact_rows(self) -> None:
        self.facts_table.resizeRowsToContents()

    def _ask_clicked(self) -> None:
        self.ask()

    # -- cases -----------------------------------------------------------------------------

    def _load_cases(self, _name: str = "") -> None:
        from engine.consult.cases.cases import load_cases

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

    def _case_selected(self, *_: object) -> None:
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
        self._enable()  # Go on: this patient's consultation left before its end

    # -- the dialogue ------------------------------------------------------------------------

    def _enable(self) -> None:
        # The patients beside the case before a consultation, the dialogue during and after
        # it: two cards at a time, which fit a narrow window.
        consulting = self.consultation is not None or self.busy
        self.cases_card.setVisible(not consulting)
        self.chat_card.setVisible(consulting)
        active = self.consultation is not None and not self.consultation.finished
        asking = active and self.side.currentIndex() == 0
        self.question.setEnabled(asking and not self.busy)
        self.ask_button.setEnabled(asking and not self.busy)
        self.end_button.setEnabled(asking and not self.busy)
        self.start_button.setEnabled(self.consultation is None and not self.busy)
        self.go_button.setEnabled(
            self.consultation is None and not self.busy and bool(self._left())
        )
        self.case_list.setEnabled(self.consultation is None)
        self.dataset.setEnabled(self.consultation is None)
        self.stop_button.setVisible(self.reply_job is not None)
        if asking:
            left = under_way(self.consultation).questions_left
            self.left_label.setText(f"{left} question(s) left")
        elif active:
            self.left_label.setText("Now give your answer")
        elif self.consultation is None:
            self.left_label.setText("")
        else:
            self.left_label.setText("Consultation over")

    def start(self, *_: object) -> None:
        item = self.case_list.currentItem()
        dataset = self.dataset.name
        if item is None or not dataset or self.consultation is not None:
            return
        case = item.data(Qt.ItemDataRole.UserRole)
        max_turns = self.max_turns.value()
        set_setting("consult/max_turns", max_turns)
        self.dataset.remember_choice()
        host = self.ctx.host

        def job(job: Job) -> Consultation:
            from engine.consult.doctor.person import start_person_consultation

            return start_person_consultation(job.store, dataset, case, host.get(), max_turns)

        self.case = case
        self.chat.setHtml("<p style='color:#6b7280'>Calling the patient in…</p>")
        self.call(job, self._started)

    def _left(self) -> int | None:
        """The run of the chosen patient's last consultation if it was left before its
        answer (quit, or the app killed): what Go on goes on with."""
        from engine.bank.pools import left_session
        from engine.review.profiles import DEFAULT_PROFILE

        item, name = self.case_list.currentItem(), self.dataset.name
        if item is None or not name:
            return None
        case = item.data(Qt.ItemDataRole.UserRole).id
        return left_session(
            self.ctx.store, "consult", DEFAULT_PROFILE, name,
            lambda run: (run["settings"] or {}).get("case") == case,
        )  # fmt: skip

    def go_on(self) -> None:
        """Go on with :meth:`_left` where it stopped: its dialogue so far, the questions left."""
        run_id, host = self._left(), self.ctx.host
        if run_id is None or self.consultation is not None:
            return

        def job(job: Job) -> Consultation:
            from engine.consult.doctor.person import resume_person_consultation

            return resume_person_consultation(job.store, run_id, host.get())

        self.case = self.case_list.currentItem().data(Qt.ItemDataRole.UserRole)
        self.call(job, self._started)

    def _started(self, consultation: Consultation) -> None:
        self.consultation = consultation
        self.turns = list(consultation.turns)
        self._render()
        self.ctx.notify_runs()
        self._enable()
        self.question.setFocus()

    def _failed(self, exc: BaseException) -> None:
        show_error(self, exc, self.ctx)

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

        def job(job: Job) -> Turn | None:
            stream = c.ask_stream(question)
            for piece in stream:
                job.piece(piece)
                if job.cancelled:
                    stream.cancel()
            return stream.turn

        self.busy = True
        self.reply_job = self.stream(
            job,
            self._piece,
            on_done=self._replied,
            on_error=self._failed,
            on_ended=self._reply_ended,
        )
        self._enable()

    def _piece(self, text: str) -> None:
        self.turns[-1]["text"] += text
        self._render()

    def _replied(self, turn: Turn | None) -> None:
        self.turns = list(under_way(self.consultation).turns)
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
        self.stop_stream(self.reply_job)

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
        self.submit_button.setEnabled(False)
        self.call(lambda job: _session().finish_person_consultation(c, answer), self._finished)

    def _finished(self, result: ConsultResult) -> None:
        c = under_way(self.consultation)
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
        self._show_facts(c.case, c.turns, result.metrics)
        self._show_audit(c.case, c.turns)
        self.side.setCurrentIndex(2)
        QTimer.singleShot(0, self.facts_table.resizeRowsToContents)
        self._enable()

    def _show_facts(self, case: Case, turns: list[Turn], metrics: CaseMetrics) -> None:
        """The facts the patient told (in the order they came out), then the others; and the
        consultation's word-overlap metrics, labelled by the engine."""
        from engine.consult.scoring.metrics import uncovered_facts

        told = [{**f, "status": "told"} for f in uncovered_facts(case, turns)]
        seen = {f["index"] for f in told}
        rest = [
            {"index": i, "key": f.key, "value": f.value, "status": "not_told", "leaked": False}
            for i, f in enumerate(case.facts)
            if i not in seen
        ]
        asked = int(metrics.get("turns") or 0)
        self.facts_title.setText(
            f"Facts the patient told you: {len(told)} of {len(case.facts)}"
            f" ({asked} question{'' if asked == 1 else 's'} asked)"
        )
        self.facts.set_rows(told + rest)
        rows = []
        for key in OVERLAP_KEYS:
            value = metrics.get(key)
            shown = f"{100 * value:.0f}" if isinstance(value, float) else format_value(value)
            rows.append((metric_label(key, "consult"), shown))
        self.metrics = rows
        self.overlap.setText(
            "<table width='100%' cellpadding='3'>"
            + "".join(
                f"<tr><td>{_unbroken_end(esc(label))}</td>"
                f"<td align='right' width='1%' nowrap><b>{esc(value)}</b></td></tr>"
                for label, value in rows
            )
            + "</table>"
        )

    def _show_audit(self, case: Case, turns: list[Turn]) -> None:
        """What the patient said checked against the case's facts (the engine's patient
        audit): replies contradicting a fact, each requirement's share with an example reply,
        and replies the patient's check replaced."""
        from engine.consult.scoring.audit import audit_lines, person_audit

        lines = audit_lines(person_audit(case, turns))
        self.audit.setText("<br>".join(esc(line).replace("  ", "&nbsp;&nbsp;") for line in lines))

    def abandon(self) -> None:
        """Close an unfinished consultation's run as cancelled (its turns are kept)."""
        c = self.consultation
        if c is not None and not c.finished:
            self.ctx.jobs.start(
                lambda job: _session().abandon_person_consultation(c), pool="session"
            )

    def closing(self) -> None:
        """The window closes: stop the patient's reply, close an unfinished consultation."""
        self.stop_reply()
        self.abandon()

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


#: The consultation metrics shown to a person, by their engine labels: ROUGE-1 word overlap
#: of the replies and questions with the case's facts, and how alike the questions were.
OVERLAP_KEYS = ("patient_recall", "doctor_recall", "doctor_f1", "diversity")
FACT_MARKS = {"told": "✓", "not_told": "○"}
FACT_COLOURS = {"told": "#15803d", "not_told": "#6b7280"}
FACTS_LEGEND = "✓ told, in the order it came out;  ! told unasked;  ○ not told"


def _unbroken_end(label: str) -> str:
    """``label`` with its last word kept on the line of the word before it, so a wrapped
    label never leaves a lone "%)" on a line."""
    head, _, last = label.rpartition(" ")
    return f"{head}&nbsp;{last}" if head else label


def _fact_mark(fact: JSONDict) -> str:
    return "!" if fact["leaked"] else FACT_MARKS[fact["status"]]


def _fact_text(fact: JSONDict) -> str:
    return f"{fact['key']}: {fact['value']}"


def _fact_colour(fact: JSONDict) -> str:
    return FACT_COLOURS[fact["status"]]


def _fact_tip(fact: JSONDict) -> str:
    if fact["status"] == "not_told":
        return "Not told: no question brought it out"
    unasked = ", without being asked" if fact["leaked"] else ""
    return f"Told in reply {fact['turn']}{unasked}"
