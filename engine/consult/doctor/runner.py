"""Run a doctor (or a baseline) over a set of cases and store everything as it happens.

Doctors (``doctor=``):

* ``model`` — the default chat model; any other name — that catalog model, as a
  :class:`~engine.consult.doctor.doctors.ModelDoctor` (prompt ``style`` long or short);
* ``oracle-direct`` / ``oracle-random`` / ``oracle-reverse`` — asks about every key of M
  in that order (random is seeded);
* ``upper`` — no consultation: the solver answers T with all of M;
* ``lower`` — no consultation: the solver answers T from the opening request alone.

The patient model defaults to the default chat model and plays the patient as the paper
does (``patient_mode`` ``paper``; ``grounded`` is the fact selector and guard of
:mod:`engine.consult.patient.simulated`). The solver (who answers T) is one fixed model for every
doctor: the ``solver`` of medexam's settings (:mod:`engine.settings`, the default chat model unless
set), so doctors are compared on the same footing; the run records the model it was
(``solver_model``). Models with the same name are opened once.

Other settings: ``style`` (long or short prompt), ``max_turns`` (a safety cap on a model
doctor's questions; oracles always ask every key), ``doctor_max_tokens`` (the length cap of a
doctor turn, 128), ``keep_conclusions`` (the doctor's closing words stay in the solver's
context; false drops them), ``limit``, ``seed``, ``answer_method``, ``answer_at`` (the solver
also answers after each share of the consultation: :mod:`engine.consult.scoring.shares`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.consult.activity import CONSULT
from engine.consult.cases.cases import Case, load_cases
from engine.consult.doctor.dialogue import Consultation
from engine.consult.doctor.doctors import ModelDoctor, OracleDoctor
from engine.consult.doctor.final_task import Solver
from engine.consult.doctor.written import WrittenDoctor
from engine.consult.scoring.judging import judged_summary
from engine.consult.scoring.metrics import ASKED_NOTHING
from engine.consult.scoring.shares import answers_along, parse_shares, run_shares, share_curve
from engine.consult.settings import (
    BASELINES,
    DEFAULT_MODEL,
    ORACLES,
    ConsultSettings,
    consult_settings,
)
from engine.core.chance import single_answer_chance
from engine.core.progress import Cancel
from engine.core.runs import Job, Spec
from engine.core.scoring import (
    items_by_key,
)
from engine.models.protocol import ChatModel
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.models.pool import ModelPool, PooledModel
    from engine.types import JSONDict, Row


def runner_for(doctor: str) -> str:
    """The run's ``runner``: ``model`` for model doctors, else the baseline's name."""
    return doctor if doctor in BASELINES + ORACLES else "model"


def _bound_answer(case: Case, doctor: str, solver: Solver) -> dict[str, Any]:
    """A case answered without a consultation: from every fact (``upper``), the opening
    request (``lower``) or the written case (``vignette``)."""
    context = {"upper": "all", "lower": "opening"}.get(doctor, doctor)
    task = solver.answer(case, context=context)
    return {
        "response": task.response,
        "chosen": task.chosen,
        "gold": task.gold,
        "extra": {"task_kind": case.task.kind, "turns": 0, **task.extra},
        "latency_s": task.latency_s,
        "prompt_tokens": task.prompt_tokens,
        "completion_tokens": task.completion_tokens,
    }


def consult_one(
    case: Case,
    settings: ConsultSettings,
    *,
    patient_model: ChatModel | None,
    solver: Solver,
    doctor_model: ChatModel | None = None,
    writer_model: ChatModel | None = None,
    store: Store | None = None,
    run_id: int | None = None,
    position: int | None = None,
    cancel: Cancel | None = None,
    on_turn: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """One case with the doctor (or baseline) of ``settings``, with its prompt style, turn
    caps, seed and patient mode; returns the case's answer (the fields of
    :meth:`engine.store.store.Store.add_answer`, the consultation's metrics as ``scores``). With a
    store and a run id each turn is stored as it happens; the answer is the caller's to
    store. ``on_turn(turn)`` is called with each turn once it is recorded (``turn``, ``role``,
    ``text``, ``extra``…; the opening request is turn 0). An oracle asks every key of the case
    whatever ``max_turns`` says; with ``writer_model`` (the ``writer`` setting) its questions
    and closing are written by that model (:mod:`engine.consult.doctor.written`)."""
    doctor, max_turns, seed = settings.doctor, settings.max_turns, settings.seed
    if doctor in BASELINES:
        return _bound_answer(case, doctor, solver)
    if settings.format == "vignette":
        return _bound_answer(case, "vignette", solver)
    if doctor in ORACLES:
        agent: OracleDoctor | ModelDoctor | WrittenDoctor
        agent = OracleDoctor(doctor.split("-", 1)[1], seed=seed)
        if writer_model is not None:
            agent = WrittenDoctor(agent, writer_model, seed, settings.temperature)
        max_turns = max(max_turns, len(set(case.keys)))
    else:
        agent = ModelDoctor(
            doctor_model,
            style=settings.style,
            max_turns=max_turns,
            max_tokens=settings.doctor_max_tokens,
            seed=seed,
            temperature=settings.temperature,
            stop_on_repeat=settings.stop_on_repeat,
        )
    consultation = Consultation(
        case,
        patient_model,
        store=store,
        run_id=run_id,
        max_turns=max_turns,
        solver=solver,
        position=position,
        patient_mode=settings.patient_mode,
        keep_conclusions=settings.keep_conclusions,
        seed=seed,
        temperature=settings.temperature,
        solve_from="summary" if settings.format == "summary" else "dialogue",
    )
    told = 0

    def tell() -> None:  # the turns recorded since the last call
        nonlocal told
        if on_turn is not None:
            for turn in consultation.turns[told:]:
                on_turn(dict(turn))
        told = len(consultation.turns)

    consultation.start()
    tell()
    while True:
        if cancel is not None:
            cancel.check()
        move = agent.next(case, consultation.turns)
        if move.question is None:  # the doctor stops
            consultation.conclude(move.raw, move.reason, move.extra)
            tell()
            break
        extra: JSONDict = {"raw": move.raw} if move.raw and move.raw != move.question else {}
        if move.latency_s:
            extra |= {"latency_s": move.latency_s, "completion_tokens": move.completion_tokens}
        consultation.ask(move.question, extra | move.extra)
        tell()
        if consultation.questions_left == 0 and not isinstance(agent, WrittenDoctor):
            break  # a written golden dialogue still closes with its analysis
    answer = consultation.finish().answer_fields(consultation.questions_asked)
    if consultation.questions_asked == 0 and isinstance(agent, ModelDoctor):
        answer["extra"]["note"] = ASKED_NOTHING
    if settings.answer_at:
        answer["extra"]["answer_at"] = answers_along(
            case,
            consultation.turns,
            parse_shares(settings.answer_at),
            solver,
            context=consultation.solve_from,
            conclusions=settings.keep_conclusions,
            cancel=cancel,
        )
    return answer


class _WorkerStore(Store):
    """A worker thread's own store on the run's database: its turn writes take the write
    lock first, waiting their turn (a deferred transaction would fail at once if another
    thread wrote after it read)."""

    def add_turn(self, *args: Any, **kwargs: Any) -> None:
        with self.transaction(immediate=True):
            super().add_turn(*args, **kwargs)

    def delete_turns(self, run_id: int, item_key: str) -> None:
        with self.transaction(immediate=True):
            super().delete_turns(run_id, item_key)


class ConsultJob(Job):
    """A doctor's (or a baseline's) run over a case data set. Doctor, patient and solver are
    leased from the pool: one model or three different ones, all loaded at once."""

    def __init__(self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool):
        super().__init__()
        self.store, self.settings = store, settings
        self.chosen = ConsultSettings.from_dict(settings)
        self._home, self._stores = threading.get_ident(), threading.local()
        self.doctor = settings["doctor"]
        self.runner = runner_for(self.doctor)
        self.items = load_cases(store, dataset, limit=settings["limit"])
        try:
            solver = self._lease(pool, settings["solver"])
            self.solver = Solver(
                solver,
                method=settings["answer_method"],
                seed=settings["seed"],
                form=settings.get("answer_form") or "mcq",
            )
            needs_patient = self.doctor not in BASELINES
            self.patient = self._lease(pool, settings["patient"]) if needs_patient else None
            model_doctor = self.runner == "model"
            self.doctor_model = self._lease(pool, self.doctor) if model_doctor else None
            writer = settings.get("writer")
            self.writer = self._lease(pool, writer) if writer and needs_patient else None
        except BaseException:
            self.close()
            raise
        self.model_label = (self.doctor_model or solver).name
        self.settings = {**settings, "solver_model": solver.name}
        if self.patient is not None:
            self.settings["patient_model"] = self.patient.name

    def _lease(self, pool: ModelPool, name: str) -> PooledModel:
        return self.lease(pool, None if name == DEFAULT_MODEL else name)

    def default_concurrency(self) -> int:
        """Cases in flight, each case's doctor, patient and solver turns interleaving with
        the others' on the same models: as many as the models take (a local model's slots),
        one on an in-memory database (its connection serves one thread)."""
        return 1 if self.store.path == ":memory:" else super().default_concurrency()

    def _thread_store(self) -> Store:
        """The store turns are written through from this thread: the run's own in the thread
        that opened the job, else this worker thread's own store on the same database (a
        sqlite connection serves only the thread that made it; it closes with the thread)."""
        if threading.get_ident() == self._home:
            return self.store
        store = getattr(self._stores, "store", None)
        if store is None:
            if self.store.path == ":memory:":
                raise ValueError("an in-memory database takes one consultation at a time")
            store = self._stores.store = _WorkerStore(self.store.path)
        return store

    def answer(self, case: Case, position: int) -> dict[str, Any]:
        """Consult ``case``, its turns stored as they come and each reported as a step of
        the run's progress ("case 3/10, turn 4", with ``case`` and the ``turn`` in its info)."""
        run_id = self.run_id
        store = self._thread_store()
        if run_id is not None:  # an interrupted consultation starts again
            store.delete_turns(run_id, case.id)
        where = f"case {position + 1}/{len(self.items)}"

        def on_turn(turn: dict[str, Any]) -> None:
            said = f"turn {turn['turn']}" if turn["turn"] else "opening"
            self.step(f"{where}, {said}", case=case.id, turn=turn)

        return consult_one(
            case,
            self.chosen,
            patient_model=self.patient,
            solver=self.solver,
            doctor_model=self.doctor_model,
            writer_model=self.writer,
            store=store if run_id is not None else None,
            run_id=run_id,
            position=position,
            cancel=self.cancel,
            on_turn=on_turn,
        )


def run_consult(
    store: Store,
    cases: str,
    doctor: str | None = None,
    *,
    settings: ConsultSettings | None = None,
    **given: Any,
) -> dict[str, Any]:
    """Run ``doctor`` over the cases of data set ``cases``; return the summary (with
    ``run_id`` and ``status``), which is also stored with the run. The settings are
    ``settings`` with the :class:`~engine.consult.settings.ConsultSettings` fields given as
    keywords over them (``max_turns=1``…); ``solver`` defaults to the fixed solver of
    medexam's settings. The other keywords are :func:`engine.core.runs.run`'s: ``resume``
    continues a run with its own settings (answered cases are skipped, an interrupted
    consultation starts again), ``pool``, ``progress``, ``cancel``, ``on_start``…"""
    from engine.core.runs import run_settings

    chosen = {**given, "settings": settings} | ({"doctor": doctor} if doctor is not None else {})
    return run_settings(store, CONSULT.id, cases, chosen)


def consult_sections(store: Store, run_id: int) -> dict[str, Any]:
    """The consultation's own entries of a run's summary, laid over its counts and its
    scorers' metrics (:func:`engine.core.scoring.summarize`: every metric of
    :data:`engine.consult.scoring.metrics.SUMMARY_KEYS`, lengths, leakage, by complexity,
    similarity; ``accuracy`` over all the run's cases, one not consulted yet counting
    wrong): who played the patient and the solver, the chance accuracy, the cases with no
    question asked, the answers after each share of the consultations, the judge's scores."""
    answers = store.answers(run_id)
    run = store.run(run_id)
    settings = run.get("settings") or {}
    out: dict[str, Any] = {
        key: settings[key]
        for key in ("patient_mode", "solver", "solver_model")
        if settings.get(key) is not None
    }
    out["chance"] = {"accuracy": _chance(store, run, answers)}
    asked_nothing = sum((a.get("extra") or {}).get("note") == ASKED_NOTHING for a in answers)
    if asked_nothing:
        out["asked_nothing"] = asked_nothing
    shares = run_shares(settings)
    if shares:  # the solver's answers after each share of the consultations
        out["by_share"] = share_curve(answers, shares)
    judged = judged_summary(store, run_id)
    if judged:  # the run's own judge, else the last to judge it
        who = str(settings.get("judge") or "")
        who = who if who in judged else list(judged)[-1]
        out["judged"] = {"judge": who, **judged[who]}
    return out


def _chance(store: Store, run: Row, answers: Sequence[Row]) -> float | None:
    """Expected accuracy of uniform guessing (percent) over the run's multiple-choice cases
    answered with a letter (:mod:`engine.core.chance`); None when none is (diagnoses in words)."""
    if (run.get("settings") or {}).get("answer") == "free" or not store.has_dataset(
        str(run["dataset"])
    ):
        return None
    cases = items_by_key(store, run)
    tasks = [cases[k].task for a in answers if (k := str(a["item_key"])) in cases]
    return single_answer_chance({"options": t.options} for t in tasks if t.kind == "mcq")


#: Consultations for :func:`engine.core.runs.run`: the settings are :class:`ConsultSettings`'
#: (``doctor`` is ``model``, a model's name, an oracle or a baseline; see the module
#: docstring); the items are the data set's cases.
SPEC = Spec(
    CONSULT, consult_settings, ConsultJob, consult_sections, load_cases, lambda case: case.id,
    derived=("solver_model", "patient_model"),
)  # fmt: skip
