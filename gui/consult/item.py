"""The consultation's item widget in the one practice panel
(:class:`gui.widgets.practice.PracticePanel`): a person chooses a patient (a case),
interviews it (the replies stream in), ends the consultation and answers the case's task (its
options, on the panel's question card, or a diagnosis typed in), then sees how it went
(:mod:`gui.consult.result`) beside the dialogue. A session is one case: a person's run of one
item, which Go on takes up where it stopped (its dialogue so far, the questions left) and End
session leaves for later.

The patient, the fact matching, the scoring and the metrics are :mod:`engine.consult`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidgetItem, QStackedWidget, QWidget

from engine.consult.settings import ConsultSettings
from gui.consult.result import ResultCard
from gui.consult.transcript import transcript_html
from gui.models import set_setting, setting
from gui.widgets.bank_marks import NoteEdit
from gui.widgets.common import (
    Card,
    SendRow,
    button,
    esc,
    muted,
    plain_list,
    show_error,
    spin_box,
    text_view,
)
from gui.widgets.practice import ItemWidget, Make, PracticePanel
from gui.widgets.screen import VerticalScroll, under_way

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.consult.doctor.dialogue import Consultation, ConsultResult
    from engine.types import Turn
    from gui.workers import Job, Worker

ASKING, ANSWERING = 0, 1  # the pages beside the dialogue: the case, then its task


def brief_html(case: Case) -> str:
    """What a person is told of ``case`` before and while consulting."""
    kind = "a multiple-choice question" if case.task.kind == "mcq" else "naming the diagnosis"
    return (
        f"<p><b>The patient says:</b><br>“{esc(case.initial_request)}”</p>"
        f"<p style='color:#4b5563'>Ask questions to learn what you need. When you have "
        f"enough, end the consultation: the case ends with {kind}.</p>"
        f"<p style='color:#6b7280'><small>The patient knows {len(case.facts)} facts "
        f"about their health; they answer only what you ask.</small></p>"
    )


class ConsultItem(ItemWidget):
    """The consultation's part of the practice panel (see the module)."""

    single = True
    ends_at_last = True
    remember = "consult"

    def __init__(self, panel: PracticePanel) -> None:
        super().__init__(panel)
        # the turns shown: the consultation's, then a question and its reply as it streams
        self.turns: list[Any] = []
        self.reply_job: Worker | None = None
        panel.dataset.changed.connect(self._load_cases)
        panel.start_button.setText("Start consultation")

    # -- the setup page: the patients and the one chosen -------------------------------------

    def setup_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(16)
        cases = Card("Patients")
        cases.add(self.panel.dataset)
        self.case_list = plain_list(self._case_selected)
        self.case_list.setWordWrap(True)
        self.case_list.itemDoubleClicked.connect(lambda _item: self.panel.start())
        cases.add(self.case_list, 1)
        turns = QHBoxLayout()
        turns.addWidget(QLabel("Questions allowed"))
        self.max_turns = spin_box(
            1, 50, setting("consult/max_turns", ConsultSettings.max_turns, int)
        )
        turns.addWidget(self.max_turns)
        cases.add_layout(turns)
        cases.add(self.panel.start_button)
        self.go_button = button("Go on", self.go_on, "Go on with this patient's consultation")
        cases.add(self.go_button)
        row.addWidget(cases, 2)
        brief = Card("The case")
        self.brief = self._rich_label()
        brief.add(self.brief, 1)
        row.addWidget(brief, 3)
        return page

    @staticmethod
    def _rich_label() -> QLabel:
        label = QLabel("")
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setAlignment(Qt.AlignmentFlag.AlignTop)
        return label

    def _load_cases(self, _name: str = "") -> None:
        from engine.consult.cases.cases import load_cases

        chosen = self.chosen_case()
        self.case_list.clear()
        name = self.panel.dataset.name
        if not name:
            return
        try:
            cases = load_cases(self.ctx.store, name)
        except Exception as exc:  # noqa: BLE001 - a case set that does not load says why
            show_error(self.panel, exc, self.ctx)
            return
        for i, case in enumerate(cases, 1):
            opening = case.initial_request
            short = opening if len(opening) < 70 else opening[:67].rstrip() + "…"
            item = QListWidgetItem(f"Patient {i}\n{short}")
            item.setData(Qt.ItemDataRole.UserRole, case)
            item.setToolTip(opening)
            self.case_list.addItem(item)
        ids = [c.id for c in cases]
        if ids:  # the patient chosen stays chosen (a data set read again)
            self.case_list.setCurrentRow(ids.index(chosen.id) if chosen and chosen.id in ids else 0)

    def chosen_case(self) -> Case | None:
        item = self.case_list.currentItem()
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def _case_selected(self, *_: object) -> None:
        case = self.chosen_case()
        self.brief.setText(brief_html(case) if case is not None else "")
        self.enable(self.panel.busy)  # Go on: this patient's consultation left before its end

    # -- the question page: the dialogue beside the case, then the task ----------------------

    def body(self) -> QWidget:
        chat = Card("Consultation")
        self.chat = text_view()
        chat.add(self.chat, 1)
        self.ask_line = NoteEdit()  # its Enter asks
        self.ask_line.setPlaceholderText("Ask the patient a question, e.g. “Where does it hurt?”")
        ask = SendRow(self.ask_line, "Ask", lambda: self.ask(), self.stop_reply)
        self.ask_button, self.stop_button = ask.send, ask.stop
        self.stop_button.setVisible(False)
        chat.add_layout(ask)
        foot = QHBoxLayout()
        self.left_label = muted(QLabel(""))
        self.to_task_button = button(
            "End consultation", self.to_task, "Stop asking and answer the case's question"
        )
        foot.addWidget(self.left_label, 1)
        foot.addWidget(self.to_task_button)
        chat.add_layout(foot)
        chat.setMinimumWidth(380)
        return chat

    def beside(self) -> QWidget:
        self.side = QStackedWidget()
        self.side.setMinimumWidth(320)
        case = Card("The case")
        self.case_note = self._rich_label()
        case.add(self.case_note, 1)
        self.side.addWidget(case)
        task = Card("Your answer")
        task.add(self.panel.question_card)
        self.diagnosis = NoteEdit()  # its Enter submits
        self.diagnosis.setPlaceholderText("Type the most likely diagnosis")
        self.diagnosis.returnPressed.connect(lambda: self.panel.submit())
        task.add(self.diagnosis)
        task.layout_.addStretch(1)
        self.side.addWidget(task)
        return self.side

    def results_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(12)
        dialogue = Card("The consultation")
        self.transcript = text_view()
        dialogue.add(self.transcript, 1)
        row.addWidget(dialogue, 5)
        self.result_card = ResultCard()
        self.result_card.add(button("Another patient", self.panel.back_to_setup))
        row.addWidget(VerticalScroll(self.result_card), 4)  # scrolls in a short window
        return page

    # -- the session ---------------------------------------------------------------------------

    def make(self, keys: list[str] | None) -> Make | None:
        case, dataset = self.chosen_case(), self.panel.dataset.name
        if case is None or not dataset:
            show_error(
                self.panel, "Choose a patient first (import cases, or the sample).", self.ctx
            )
            return None
        max_turns = self.max_turns.value()
        set_setting("consult/max_turns", max_turns)
        self.panel.dataset.remember_choice()
        host = self.ctx.host

        def make(job: Job) -> tuple[Consultation, Case]:
            from engine.consult.doctor.person import start_person_consultation

            consultation = start_person_consultation(
                job.store, dataset, case, host.get(), max_turns
            )
            return consultation, case

        self.chat.setHtml("<p style='color:#6b7280'>Calling the patient in…</p>")
        return make

    def _left(self) -> int | None:
        """The run of the chosen patient's last consultation if it was left before its
        answer (ended early, or the app killed): what Go on goes on with."""
        from engine.bank.pools import left_session
        from engine.review.profiles import DEFAULT_PROFILE

        case, name = self.chosen_case(), self.panel.dataset.name
        if case is None or not name:
            return None
        return left_session(
            self.ctx.store, "consult", DEFAULT_PROFILE, name,
            lambda run: (run["settings"] or {}).get("case") == case.id,
        )  # fmt: skip

    def go_on(self) -> None:
        """Go on with :meth:`_left` where it stopped: its dialogue so far, the questions left."""
        run_id, host, case = self._left(), self.ctx.host, self.chosen_case()
        if run_id is None or case is None:
            return

        def make(job: Job) -> tuple[Consultation, Case]:
            from engine.consult.doctor.person import resume_person_consultation

            return resume_person_consultation(job.store, run_id, host.get()), case

        self.panel.begin(make)

    def started(self, session: Any) -> None:
        self.turns = list(session.turns)

    def _mcq(self) -> bool:
        """The task of the case under way is a multiple-choice question."""
        return bool(under_way(self.panel.session).case.task.kind == "mcq")

    def text(self, item: Any) -> str:
        task = item.task
        return str(task.question or "What is the most likely diagnosis?")

    def options(self, item: Any) -> list[tuple[str, str]]:
        return list(item.task.options.items()) if item.task.kind == "mcq" else []

    def key(self, item: Any) -> str:
        return str(item.id)

    def keys(self, session: Any) -> list[str]:
        return [str(session.case.id)]

    def reach(self, session: Any) -> int:
        return 0

    def said(self, session: Any, place: int) -> ConsultResult | None:
        return session.result

    def place(self, session: Any, item: Any) -> int:
        return 0

    def progress(self, session: Any) -> tuple[int, int]:
        return 1, int(session.finished)

    def after(self, session: Any, place: int) -> int | None:
        return None

    def show(self, item: Any, answered: bool) -> None:
        mcq = item.task.kind == "mcq"
        self.panel.options.setVisible(mcq)
        self.diagnosis.setVisible(not mcq)
        self.case_note.setText(brief_html(item))
        self.side.setCurrentIndex(ASKING)
        self._render()
        self.ask_line.setFocus()

    def chosen(self) -> list[str]:
        if self._mcq():
            return self.panel.options.selected()
        return [text] if (text := self.diagnosis.text().strip()) else []

    def unanswered(self) -> str:
        if self._mcq():
            return "Choose an option first (keys a–e or 1–5)."
        return "Type the diagnosis first."

    def give(self, session: Any, place: int, chosen: list[str]) -> ConsultResult:
        from engine.consult.doctor.person import finish_person_consultation

        return finish_person_consultation(session, chosen[0])

    def revealed(self, feedback: Any) -> tuple[list[str], list[str]]:
        task = feedback.task
        if feedback.task_kind != "mcq":
            return [], []
        return [task.gold], [task.chosen] if task.chosen else []

    def right(self, feedback: Any) -> bool:
        return bool(feedback.correct)

    def finish(self, session: Any) -> ConsultResult | None:
        """The result once the task is answered; before, the consultation is left for later
        (its run cancelled, its turns kept)."""
        from engine.consult.doctor.person import abandon_person_consultation

        if not session.finished:
            abandon_person_consultation(session)
        return session.result

    def lost(self, session: Any, chosen: bool) -> str:
        if session.finished:
            return ""
        return (
            "The case's question is not answered yet: the dialogue so far is kept, and Go on "
            "takes it up again.\n\nEnd the consultation now?"
        )

    def ended(self, result: Any) -> None:
        if result is None:
            self.ctx.status("Consultation left before its answer: Go on takes it up again.")
        else:
            self.transcript.setHtml(transcript_html(result.turns))
            case = under_way(self.panel.session).case
            self.result_card.show_result(result, case, result.turns)
            self.ctx.status("Consultation over. See Results for the details.")

    def ending(self) -> None:
        self.stop_reply()

    def closing(self) -> None:
        self.stop_reply()

    def refresh(self) -> None:
        if self.case_list.count() == 0:
            self._load_cases()  # the first time (later: as the data set changes)
        self._case_selected()

    # -- the dialogue --------------------------------------------------------------------------

    def _render(self) -> None:
        self.chat.setHtml(transcript_html(self.turns))
        bar = self.chat.verticalScrollBar()
        bar.setValue(bar.maximum())

    def ask(self, text: str | None = None) -> None:
        """Put a question to the patient; the reply streams into the dialogue."""
        question = (text if text is not None else self.ask_line.text()).strip()
        c, panel = self.panel.session, self.panel
        if not question or c is None or panel.busy or c.questions_left <= 0:
            return
        self.ask_line.clear()
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

        panel.busy = True
        self.reply_job = panel.stream(
            job, self._piece, on_done=self._replied, on_error=self._failed,
            on_ended=self._reply_ended,
        )  # fmt: skip
        panel._enable()

    def _piece(self, text: str) -> None:
        self.turns[-1]["text"] += text
        self._render()

    def _replied(self, turn: Turn | None) -> None:
        self.turns = list(under_way(self.panel.session).turns)
        self._render()

    def _failed(self, exc: BaseException) -> None:
        show_error(self.panel, exc, self.ctx)

    def _reply_ended(self) -> None:
        self.reply_job = None
        self.panel.busy = False
        self.panel._enable()
        c = self.panel.session
        if c is not None and c.questions_left == 0:
            self.to_task()
            self.left_label.setText("No questions left: time to answer.")
        else:
            self.ask_line.setFocus()

    def stop_reply(self) -> None:
        self.panel.stop_stream(self.reply_job)

    def to_task(self) -> None:
        """Stop asking: show the case's task."""
        if self.panel.session is None or self.panel.busy:
            return
        self.side.setCurrentIndex(ANSWERING)
        self.panel._enable()
        if not self._mcq():
            self.diagnosis.setFocus()

    def enable(self, busy: bool) -> None:
        panel, c = self.panel, self.panel.session
        active = c is not None and not c.finished
        asking = active and self.side.currentIndex() == ASKING
        self.ask_line.setEnabled(asking and not busy)
        self.ask_button.setEnabled(asking and not busy)
        self.to_task_button.setEnabled(asking and not busy)
        self.stop_button.setVisible(self.reply_job is not None)
        panel.submit_button.setText("Submit answer")
        panel.submit_button.setEnabled(active and not asking and not busy)
        panel.start_button.setEnabled(not busy and self.chosen_case() is not None)
        self.go_button.setEnabled(not busy and self._left() is not None)
        if asking:
            self.left_label.setText(f"{under_way(c).questions_left} question(s) left")
        elif active:
            self.left_label.setText("Now give your answer")
        else:
            self.left_label.setText("")
