"""A consultation, turn by turn: the object the CLI, the GUI and the model runs all drive.

>>> c = Consultation(case, patient_model, store=store, run_id=run_id)  # doctest: +SKIP
>>> c.start()  # the patient's opening request (turn 0)                 # doctest: +SKIP
>>> c.ask("How long has it hurt?")  # the patient's reply (turn 1)      # doctest: +SKIP
>>> result = c.finish("B")  # a person's answer                         # doctest: +SKIP

:meth:`ask_stream` gives the reply as it comes; ``finish()`` without an answer lets the
solver answer.

Turns are numbered: 0 is the opening request; question *i* and its reply are both turn *i*; a
model doctor's closing words are stored as a doctor turn of kind ``conclusion``. With a store
and a run id every turn is stored as it happens (``Store.add_turn``), beside the case's answer
the run loop stores once :meth:`finish` has given it (a model doctor's run,
:mod:`engine.consult.doctor.runner`; a person's, :mod:`engine.consult.doctor.person`).
The ``extra`` of a patient turn records the facts the question matched (``facts``: index, key,
value, scores; all the grounded patient was given), those the question ``asked`` for, those
``revealed`` in the reply and those ``leaked`` (a fact the reply contradicts is neither: it is
``contradicted``), the ``patient_mode`` and how the reply was made (``source``: model,
unknown, retry or guard; the contradictions ``caught`` in replies not shown; the ``parts`` of
a question that asked several things).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case
from engine.consult.doctor.final_task import Solver, TaskResult, task_result, task_text
from engine.consult.patient.contradict import contradicted
from engine.consult.patient.simulated import Patient, PatientReply, PatientStream, make_patient
from engine.consult.scoring.metrics import consultation_metrics, turn_leakage
from engine.consult.settings import ConsultSettings
from engine.errors import UserError
from engine.models.protocol import ChatModel
from engine.types import Turn

if TYPE_CHECKING:
    from engine.consult.scoring.metrics import CaseMetrics
    from engine.core.solvers import Sitting
    from engine.store.store import Store
    from engine.types import JSONDict


class ConsultationError(UserError):
    """A consultation used out of order (asking before start, after finish or past the limit)."""


@dataclass
class ConsultResult:
    """A finished consultation: the scored task and the consultation's metrics."""

    case_id: str
    task: TaskResult
    metrics: CaseMetrics
    turns: list[Turn]
    conclusion: str = ""
    stop_reason: str | None = None
    task_kind: str = "mcq"

    @property
    def correct(self) -> bool:
        return self.task.correct

    def answer_fields(self, questions: int) -> JSONDict:
        """The case's stored answer (:meth:`engine.store.store.Store.add_answer`'s fields but its
        scores, which the consultation's scorers give it)."""
        task = self.task
        return {
            "response": task.response,
            "chosen": task.chosen,
            "gold": task.gold,
            "extra": {"task_kind": self.task_kind, "turns": questions, **task.extra},
            "latency_s": task.latency_s,
            "prompt_tokens": task.prompt_tokens,
            "completion_tokens": task.completion_tokens,
        }


@dataclass(eq=False)
class Consultation:
    """One consultation of ``case``; ``patient_model`` answers as the patient.

    ``solver`` answers the task when :meth:`finish` gets no answer (model doctors).
    ``max_turns`` caps the questions; ``match`` is the fact-matching method;
    ``patient_mode`` is ``grounded`` (the default: a person's consultation) or ``paper``
    (:mod:`engine.consult.patient.simulated`); ``keep_conclusions`` leaves the doctor's closing
    words in the solver's context (the default) or drops them. With a store and
    a run id every turn is stored (the answer is the run loop's to store).
    """

    case: Case
    patient_model: InitVar[ChatModel | None]
    _: KW_ONLY
    store: Store | None = None
    run_id: int | None = None
    max_turns: int = ConsultSettings.max_turns
    solver: Solver | None = None
    match: InitVar[str | None] = None
    position: int | None = None
    patient_mode: str = "grounded"
    keep_conclusions: bool = True
    seed: int = 0
    temperature: float = 0.0
    solve_from: str = "dialogue"
    patient: Patient = field(init=False)
    turns: list[Turn] = field(default_factory=list, init=False)
    result: ConsultResult | None = field(default=None, init=False)
    #: A person's consultation: the run loop waiting for its answer
    #: (:class:`engine.core.solvers.Sitting`, :mod:`engine.consult.doctor.person`).
    sitting: Sitting | None = field(default=None, init=False, repr=False)
    _started: bool = field(default=False, init=False, repr=False)

    def __post_init__(self, patient_model: ChatModel | None, match: str | None) -> None:
        self.patient = make_patient(
            self.case, patient_model, self.patient_mode, match, self.seed, self.temperature
        )

    # -- state -------------------------------------------------------------------------

    @property
    def questions_asked(self) -> int:
        return sum(
            1 for t in self.turns if t["role"] == "doctor" and t["extra"].get("kind") == "question"
        )

    @property
    def questions_left(self) -> int:
        return max(0, self.max_turns - self.questions_asked)

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def task_text(self) -> str:
        """The final task as shown to the doctor."""
        return task_text(self.case.task)

    def _record(
        self,
        turn: int,
        role: str,
        text: str,
        extra: JSONDict,
        latency_s: float | None = None,
        tokens: int | None = None,
    ) -> Turn:
        row: Turn = {
            "turn": turn,
            "role": role,
            "text": text,
            "extra": extra,
            "latency_s": latency_s,
            "tokens": tokens,
        }
        self.turns.append(row)
        if self.store is not None and self.run_id is not None:
            self.store.add_turn(self.run_id, self.case.id, **row)
        return row

    # -- the dialogue ----------------------------------------------------------------------

    def start(self) -> str:
        """Begin: record and return the patient's opening request."""
        if self._started:
            raise ConsultationError("the consultation has already started")
        self._started = True
        self._record(0, "patient", self.case.initial_request, {"kind": "opening"})
        return self.case.initial_request

    def _check_can_ask(self, question: str) -> None:
        if not self._started:
            raise ConsultationError("start the consultation before asking")
        if self.finished:
            raise ConsultationError("the consultation is finished")
        if self.questions_left <= 0:
            raise ConsultationError(f"no questions left (limit {self.max_turns})")
        if not question.strip():
            raise ConsultationError("empty question")

    def _record_question(self, question: str, extra: JSONDict | None = None) -> int:
        turn = self.questions_asked + 1
        self._record(
            turn,
            "doctor",
            question.strip(),
            {"kind": "question", **(extra or {})},
            latency_s=(extra or {}).get("latency_s"),
            tokens=(extra or {}).get("completion_tokens"),
        )
        return turn

    def _record_reply(self, turn: int, question: str, reply: PatientReply) -> Turn:
        facts = self.case.facts
        if self.patient_mode == "paper":
            top = reply.facts[0].index if reply.facts else None
            leak = turn_leakage(
                question, reply.text, facts, range(len(facts)), self.case.language, top=top
            )
        else:
            leak = turn_leakage(question, reply.text, facts, reply.fact_indices, self.case.language)
        # a fact is told when the reply states it, never when the reply contradicts it
        wrong = contradicted(reply.text, facts, self.case.language, question)
        if wrong:
            leak = {**leak, "contradicted": sorted(wrong)}
            for key in ("revealed", "leaked"):
                leak[key] = [i for i in leak[key] if i not in wrong]
        extra: JSONDict = {
            "kind": "reply",
            "facts": [m.to_dict() for m in reply.facts],
            "source": reply.source,
            "patient_mode": self.patient_mode,
            **leak,
        }
        if reply.raw and reply.raw != reply.text:
            extra["raw"] = reply.raw
        if reply.caught:
            extra["caught"] = reply.caught  # the contradictions of the replies not shown
        if reply.parts:
            extra["parts"] = reply.parts
        return self._record(
            turn,
            "patient",
            reply.text,
            extra,
            latency_s=reply.latency_s,
            tokens=reply.completion_tokens or None,
        )

    def ask(self, question: str, doctor_extra: JSONDict | None = None) -> Turn:
        """Put ``question`` to the patient; return the reply turn (``text``, ``extra``…)."""
        self._check_can_ask(question)
        turn = self._record_question(question, doctor_extra)
        return self._record_reply(turn, question, self.patient.reply(question))

    def ask_stream(self, question: str, doctor_extra: JSONDict | None = None) -> ReplyStream:
        """Like :meth:`ask`, streaming the reply: iterate for pieces, then read ``.turn``."""
        self._check_can_ask(question)
        turn = self._record_question(question, doctor_extra)
        return ReplyStream(self, turn, question, self.patient.stream(question))

    def conclude(self, text: str, reason: str | None = None, extra: JSONDict | None = None) -> None:
        """Record what a model doctor said instead of a question (not a question turn);
        ``extra`` is kept with it (who wrote a golden dialogue's closing)."""
        if text.strip():
            self._record(
                self.questions_asked + 1,
                "doctor",
                text.strip(),
                {"kind": "conclusion", "reason": reason, **(extra or {})},
            )

    def finish(self, answer: str | None = None) -> ConsultResult:
        """Complete the task: score ``answer`` (a person's) or let the solver answer; the
        result's :meth:`ConsultResult.answer_fields` are the answer the run loop stores."""
        if self.finished:
            raise ConsultationError("the consultation is already finished")
        if not self._started:
            raise ConsultationError("start the consultation before finishing it")
        if answer is not None:
            task = task_result(self.case.task, answer)
        elif self.solver is not None:
            task = self.solver.answer(
                self.case, self.turns, context=self.solve_from, conclusions=self.keep_conclusions
            )
        else:
            raise ConsultationError("no answer given and no solver to answer the task")
        metrics = consultation_metrics(self.case, self.turns, task.correct)
        metrics["similarity"] = task.similarity
        conclusion = next(
            (t for t in reversed(self.turns) if t["extra"].get("kind") == "conclusion"), None
        )
        self.result = ConsultResult(
            self.case.id,
            task,
            metrics,
            list(self.turns),
            conclusion=conclusion["text"] if conclusion else "",
            stop_reason=conclusion["extra"].get("reason") if conclusion else None,
            task_kind=self.case.task.kind,
        )
        return self.result


class ReplyStream:
    """A streamed patient reply; the turn is recorded once the stream is exhausted."""

    def __init__(
        self, consultation: Consultation, turn: int, question: str, stream: PatientStream
    ) -> None:
        self.consultation = consultation
        self.turn_number = turn
        self.question = question
        self.stream = stream
        self.turn: Turn | None = None

    def __iter__(self) -> Iterator[str]:
        yield from self.stream
        assert self.stream.result is not None
        self.turn = self.consultation._record_reply(
            self.turn_number, self.question, self.stream.result
        )

    def cancel(self) -> None:
        self.stream.cancel()
