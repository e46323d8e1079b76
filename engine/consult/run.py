"""Run a doctor (or a baseline) over a set of cases and store everything as it happens.

Doctors (``doctor=``):

* ``model`` — the default chat model; any other name — that catalog model, as a
  :class:`~engine.consult.doctor.ModelDoctor` (prompt ``style`` long or short);
* ``oracle-direct`` / ``oracle-random`` / ``oracle-reverse`` — asks about every key of M
  in that order (random is seeded);
* ``upper`` — no consultation: the solver answers T with all of M;
* ``lower`` — no consultation: the solver answers T from the opening request alone.

The patient model defaults to the default chat model and plays the patient as the paper
does (``patient_mode`` ``paper``; ``grounded`` is the fact selector and guard of
:mod:`engine.consult.patient`). The solver (who answers T) is one fixed model for every doctor:
the ``solver`` of medexam's settings (:mod:`engine.settings`, the default chat model unless
set), so doctors are compared on the same footing; the run records the model it was
(``solver_model``). Models with the same name are opened once.

Other settings: ``style`` (long or short prompt), ``max_turns`` (a safety cap on a model
doctor's questions; oracles always ask every key), ``doctor_max_tokens`` (the length cap of a
doctor turn, 128), ``keep_conclusions`` (the doctor's closing words stay in the solver's
context; false drops them), ``limit``, ``seed``, ``answer_method``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.activities import CONSULT
from engine.consult.cases import Case, load_cases
from engine.consult.doctor import ModelDoctor, OracleDoctor
from engine.consult.metrics import bound_metrics, summarize
from engine.consult.patient import MODES
from engine.consult.session import Consultation
from engine.consult.solve import Solver
from engine.models.protocol import ChatModel
from engine.progress import Cancel, ProgressCallback
from engine.runs import Job
from engine.store import Store

if TYPE_CHECKING:
    from engine.models.pool import ModelPool, PooledModel

BASELINES = ("upper", "lower")
ORACLES = ("oracle-direct", "oracle-random", "oracle-reverse")
DEFAULT_MODEL = "model"


def runner_for(doctor: str) -> str:
    """The run's ``runner``: ``model`` for model doctors, else the baseline's name."""
    return doctor if doctor in BASELINES + ORACLES else "model"


def _bound_answer(case: Case, doctor: str, solver: Solver) -> dict[str, Any]:
    context = "all" if doctor == "upper" else "opening"
    task = solver.answer(case, context=context)
    metrics = bound_metrics(case, doctor, task.correct)
    metrics["similarity"] = task.similarity
    return {
        "response": task.response,
        "chosen": task.chosen,
        "gold": task.gold,
        "correct": task.correct,
        "scores": metrics,
        "extra": {"task_kind": case.task.kind, "turns": 0, **task.extra},
        "latency_s": task.latency_s,
        "prompt_tokens": task.prompt_tokens,
        "completion_tokens": task.completion_tokens,
    }


def consult_one(
    case: Case,
    doctor: str,
    *,
    patient_model: ChatModel | None,
    solver: Solver,
    doctor_model: ChatModel | None = None,
    style: str = "long",
    max_turns: int = 10,
    seed: int = 0,
    patient_mode: str = "paper",
    doctor_max_tokens: int = 128,
    keep_conclusions: bool = True,
    store: Store | None = None,
    run_id: int | None = None,
    position: int | None = None,
    cancel: Cancel | None = None,
    on_turn: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """One case with one doctor or baseline; returns the case's answer (the fields of
    :meth:`engine.store.Store.add_answer`, the consultation's metrics as ``scores``). With a
    store and a run id each turn is stored as it happens; the answer is the caller's to
    store. ``on_turn(turn)`` is called with each turn once it is recorded (``turn``, ``role``,
    ``text``, ``extra``…; the opening request is turn 0). An oracle asks every key of the case
    whatever ``max_turns`` says."""
    if doctor in BASELINES:
        return _bound_answer(case, doctor, solver)
    if doctor in ORACLES:
        agent: OracleDoctor | ModelDoctor = OracleDoctor(doctor.split("-", 1)[1], seed=seed)
        max_turns = max(max_turns, len(set(case.keys)))
    else:
        agent = ModelDoctor(
            doctor_model, style=style, max_turns=max_turns, max_tokens=doctor_max_tokens, seed=seed
        )
    consultation = Consultation(
        case,
        patient_model,
        store=store,
        run_id=run_id,
        max_turns=max_turns,
        solver=solver,
        position=position,
        store_answer=False,
        patient_mode=patient_mode,
        keep_conclusions=keep_conclusions,
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
        if move.stop:
            consultation.conclude(move.raw, move.reason)
            tell()
            break
        extra = {"raw": move.raw} if move.raw and move.raw != move.question else {}
        if move.latency_s:
            extra |= {"latency_s": move.latency_s, "completion_tokens": move.completion_tokens}
        consultation.ask(move.question, extra)
        tell()
        if consultation.questions_left == 0:
            break
    return consultation.finish().answer_fields(consultation.questions_asked)


DEFAULTS: dict[str, Any] = {
    "doctor": DEFAULT_MODEL,
    "patient": None,
    "solver": None,
    "style": "long",
    "max_turns": 10,
    "limit": None,
    "seed": 0,
    "answer_method": "logprobs",
    "patient_mode": "paper",
    "doctor_max_tokens": 128,
    "keep_conclusions": True,
}


def default_solver() -> str:
    """The fixed solver of medexam's settings, by name (``model`` there is the default chat
    model, recorded by its name)."""
    from engine import settings
    from engine.catalog import DEFAULT_MODEL as DEFAULT_CHAT_MODEL

    name = str(settings.get("solver") or DEFAULT_MODEL)
    return DEFAULT_CHAT_MODEL if name == DEFAULT_MODEL else name


def consult_settings(given: dict[str, Any]) -> dict[str, Any]:
    """A consultation run's settings with their defaults: the patient is the default chat
    model, the solver the one of medexam's settings (:func:`default_solver`)."""
    out = {key: given.get(key, default) for key, default in DEFAULTS.items()}
    for key in ("patient_mode", "doctor_max_tokens", "keep_conclusions"):
        if out[key] is None:
            out[key] = DEFAULTS[key]
    if out["style"] not in ("long", "short"):
        raise ValueError(f"unknown prompt style {out['style']!r}; choose long or short")
    if out["patient_mode"] not in MODES:
        raise ValueError(f"unknown patient mode {out['patient_mode']!r}; choose paper or grounded")
    if int(out["max_turns"]) < 1:
        raise ValueError("max_turns must be at least 1")
    if int(out["doctor_max_tokens"]) < 16:
        raise ValueError("doctor_max_tokens must be at least 16")
    out["keep_conclusions"] = bool(out["keep_conclusions"])
    out["solver"] = out["solver"] or default_solver()
    out["patient"] = out["patient"] or DEFAULT_MODEL
    return out


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
        self._home, self._stores = threading.get_ident(), threading.local()
        self.doctor = settings["doctor"]
        self.runner = runner_for(self.doctor)
        self.items = load_cases(store, dataset, limit=settings["limit"])
        try:
            solver = self._lease(pool, settings["solver"])
            self.solver = Solver(solver, method=settings["answer_method"], seed=settings["seed"])
            needs_patient = self.doctor not in BASELINES
            self.patient = self._lease(pool, settings["patient"]) if needs_patient else None
            model_doctor = self.runner == "model"
            self.doctor_model = self._lease(pool, self.doctor) if model_doctor else None
        except BaseException:
            self.close()
            raise
        self.model_label = (self.doctor_model or solver).name
        self.settings = {**settings, "solver_model": solver.name}
        if self.patient is not None:
            self.settings["patient_model"] = self.patient.name

    def _lease(self, pool: ModelPool, name: str) -> PooledModel:
        return self.lease(pool, None if name == DEFAULT_MODEL else name)

    def key(self, case: Case) -> str:
        return case.id

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
            self.doctor,
            patient_model=self.patient,
            solver=self.solver,
            doctor_model=self.doctor_model,
            style=self.settings["style"],
            max_turns=self.settings["max_turns"],
            seed=self.settings["seed"],
            patient_mode=self.settings["patient_mode"],
            doctor_max_tokens=self.settings["doctor_max_tokens"],
            keep_conclusions=self.settings["keep_conclusions"],
            store=store if run_id is not None else None,
            run_id=run_id,
            position=position,
            cancel=self.cancel,
            on_turn=on_turn,
        )


class ConsultSpec:
    """Consultations for :func:`engine.runs.run`: settings ``doctor`` (``model``, a model's
    name, an oracle or a baseline), ``patient``, ``solver``, ``style``, ``max_turns``,
    ``limit``, ``seed``, ``answer_method``, ``patient_mode``, ``doctor_max_tokens``,
    ``keep_conclusions`` (see the module docstring)."""

    activity = CONSULT

    def settings(self, given: dict[str, Any]) -> dict[str, Any]:
        return consult_settings(given)

    def open(
        self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool
    ) -> ConsultJob:
        return ConsultJob(store, dataset, settings, pool)

    def summarize(self, store: Store, run_id: int) -> dict[str, Any]:
        return run_summary(store, run_id)


SPEC = ConsultSpec()


def run_consult(
    store: Store,
    cases: str,
    doctor: str = DEFAULT_MODEL,
    *,
    patient: str | None = None,
    solver: str | None = None,
    style: str = "long",
    max_turns: int = 10,
    limit: int | None = None,
    resume: int | None = None,
    seed: int = 0,
    answer_method: str = "logprobs",
    patient_mode: str = "paper",
    doctor_max_tokens: int = 128,
    keep_conclusions: bool = True,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run ``doctor`` over the cases of data set ``cases``; return the summary (with
    ``run_id`` and ``status``), which is also stored with the run. A shorthand for
    :func:`engine.runs.run`; ``resume`` continues a run with its own settings (answered cases
    are skipped, an interrupted consultation starts again). ``solver`` defaults to the fixed
    solver of medexam's settings."""
    from engine.runs import run

    given = {
        "doctor": doctor,
        "patient": patient,
        "solver": solver,
        "style": style,
        "max_turns": max_turns,
        "limit": limit,
        "seed": seed,
        "answer_method": answer_method,
        "patient_mode": patient_mode,
        "doctor_max_tokens": doctor_max_tokens,
        "keep_conclusions": keep_conclusions,
    }
    return run(
        store,
        CONSULT.id,
        cases or None,
        {} if resume is not None else given,
        resume=resume,
        pool=pool,
        progress=progress,
        cancel=cancel,
        on_start=on_start,
    )


def run_summary(store: Store, run_id: int) -> dict[str, Any]:
    """The summary of a run from its stored answers (every metric of
    :data:`engine.consult.metrics.SUMMARY_KEYS`, plus leakage and similarity); ``accuracy``
    is over all the run's cases (one not consulted yet counts wrong), ``answered`` beside it."""
    answers = store.answers(run_id)
    out = summarize([a["scores"] for a in answers])
    settings = store.run(run_id).get("settings") or {}
    for key in ("patient_mode", "solver", "solver_model"):
        if settings.get(key) is not None:
            out[key] = settings[key]
    total = max(int(store.run(run_id).get("n_total") or 0), len(answers))
    right = sum(bool(a["correct"]) for a in answers)
    out.update(
        n=total,
        answered=len(answers),
        accuracy=round(100 * right / total, 2) if total else 0.0,
    )
    return out
