"""Run a doctor (or a baseline) over a set of cases and store everything as it happens.

Doctors (``doctor=``):

* ``model`` — the default chat model; any other name — that catalog model, as a
  :class:`~engine.consult.doctor.ModelDoctor` (prompt ``style`` long or short);
* ``oracle-direct`` / ``oracle-random`` / ``oracle-reverse`` — asks about every key of M
  in that order (random is seeded);
* ``upper`` — no consultation: the solver answers T with all of M;
* ``lower`` — no consultation: the solver answers T from the opening request alone.

The patient model defaults to the default chat model; the solver (who answers T) defaults to
the doctor's model, or to the default chat model for oracles and baselines. Models with the
same name are opened once.
"""

from __future__ import annotations

from typing import Any

from engine.consult.cases import ACTIVITY, Case, load_cases
from engine.consult.doctor import ModelDoctor, OracleDoctor
from engine.consult.metrics import consultation_metrics, summarize
from engine.consult.session import Consultation
from engine.consult.solve import Solver
from engine.progress import Cancel, Cancelled, ProgressCallback, report
from engine.store import Store, StoreError

BASELINES = ("upper", "lower")
ORACLES = ("oracle-direct", "oracle-random", "oracle-reverse")
DEFAULT_MODEL = "model"


def runner_for(doctor: str) -> str:
    """The run's ``runner``: ``model`` for model doctors, else the baseline's name."""
    return doctor if doctor in BASELINES + ORACLES else "model"


class _Models:
    """Opens models once per name; closes at the end only those it opened itself (models
    from a caller's ``opener`` belong to the caller)."""

    def __init__(self, opener: Any = None) -> None:
        self.opener = opener
        self.opened: dict[str | None, Any] = {}

    def get(self, name: str | None) -> Any:
        key = None if name in (None, DEFAULT_MODEL) else name
        if key not in self.opened:
            if self.opener is None:
                from engine.catalog import open_model

                self.opened[key] = open_model(key, n_ctx=4096)
            else:
                self.opened[key] = self.opener(key)
        return self.opened[key]

    def close(self) -> None:
        if self.opener is None:
            for model in self.opened.values():
                model.close()
        self.opened.clear()


def _label(name: str, opener: Any) -> str:
    """The catalog name of a model (checks that it exists unless a caller supplies models)."""
    if opener is not None:
        return name
    from engine.catalog import resolve

    return resolve(None if name == DEFAULT_MODEL else name).name


def consult_one(
    case: Case,
    doctor: str,
    *,
    patient_model: Any,
    solver: Solver,
    doctor_model: Any = None,
    style: str = "long",
    max_turns: int = 10,
    seed: int = 0,
    store: Store | None = None,
    run_id: int | None = None,
    position: int | None = None,
    cancel: Cancel | None = None,
) -> dict[str, Any]:
    """One case with one doctor or baseline; returns its metrics (also stored when a store and
    run id are given)."""
    if doctor in BASELINES:
        context = "all" if doctor == "upper" else "opening"
        task = solver.answer(case, context=context)
        metrics = consultation_metrics(case, [], task.correct)
        metrics["similarity"] = task.similarity
        if store is not None and run_id is not None:
            store.add_answer(
                run_id,
                case.id,
                response=task.response,
                chosen=task.chosen,
                gold=task.gold,
                correct=task.correct,
                scores=metrics,
                extra={"task_kind": case.task.kind, "turns": 0, **task.extra},
                latency_s=task.latency_s,
                prompt_tokens=task.prompt_tokens,
                completion_tokens=task.completion_tokens,
                position=position,
            )
        return metrics
    if doctor in ORACLES:
        agent: Any = OracleDoctor(doctor.split("-", 1)[1], max_turns=max_turns, seed=seed)
    else:
        agent = ModelDoctor(doctor_model, style=style, max_turns=max_turns, seed=seed)
    consultation = Consultation(
        case,
        patient_model,
        store=store,
        run_id=run_id,
        max_turns=max_turns,
        solver=solver,
        position=position,
    )
    consultation.start()
    while True:
        if cancel is not None:
            cancel.check()
        move = agent.next(case, consultation.turns)
        if move.stop:
            consultation.conclude(move.raw, move.reason)
            break
        extra = {"raw": move.raw} if move.raw and move.raw != move.question else {}
        if move.latency_s:
            extra |= {"latency_s": move.latency_s, "completion_tokens": move.completion_tokens}
        consultation.ask(move.question, extra)
        if consultation.questions_left == 0:
            break
    return consultation.finish().metrics


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
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    opener: Any = None,
) -> dict[str, Any]:
    """Run ``doctor`` over the cases of data set ``cases``; return the summary (with
    ``run_id`` and ``status``), which is also stored with the run.

    ``resume`` continues a run: its stored settings are used, answered cases are skipped and
    an interrupted consultation is started again. ``opener(name)`` supplies the model for a
    name (``None`` = the default chat model) and keeps ownership of it; by default models are
    opened with :func:`engine.catalog.open_model` and closed at the end.
    """
    if resume is not None:
        run = store.run(resume)
        if run["activity"] != ACTIVITY:
            raise StoreError(f"run {resume} is not a consultation run")
        settings = run["settings"]
        cases, run_id = run["dataset"], resume
        doctor, patient, solver = settings["doctor"], settings["patient"], settings["solver"]
        style, max_turns = settings["style"], settings["max_turns"]
        limit, seed = settings.get("limit"), settings.get("seed", 0)
        answer_method = settings.get("answer_method", answer_method)
        store.update_run(run_id, status="running", finished=None, error=None)
    all_cases = load_cases(store, cases, limit=limit)
    is_model_doctor = doctor not in BASELINES + ORACLES
    if solver is None:
        solver = doctor if is_model_doctor else DEFAULT_MODEL
    patient = patient or DEFAULT_MODEL
    settings = {
        "doctor": doctor,
        "patient": patient,
        "solver": solver,
        "style": style,
        "max_turns": max_turns,
        "limit": limit,
        "seed": seed,
        "answer_method": answer_method,
    }
    needed = [solver] + ([] if doctor in BASELINES else [patient])
    needed += [doctor] if is_model_doctor else []
    labels = {name: _label(name, opener) for name in needed}  # unknown names fail here
    if resume is None:
        model_name = labels[doctor] if is_model_doctor else labels[solver]
        run_id = store.start_run(
            ACTIVITY,
            cases,
            model_name,
            settings,
            runner=runner_for(doctor),
            n_total=len(all_cases),
        )
    done = store.answered_keys(run_id)
    models = _Models(opener)
    status, error = "finished", None
    try:
        the_solver = Solver(models.get(solver), method=answer_method, seed=seed)
        patient_model = None if doctor in BASELINES else models.get(patient)
        doctor_model = models.get(doctor) if is_model_doctor else None
        todo = [(i, c) for i, c in enumerate(all_cases) if c.id not in done]
        report(progress, len(done), len(all_cases), "starting")
        for n, (position, case) in enumerate(todo, 1):
            if cancel is not None:
                cancel.check()
            store.delete_turns(run_id, case.id)
            metrics = consult_one(
                case,
                doctor,
                patient_model=patient_model,
                solver=the_solver,
                doctor_model=doctor_model,
                style=style,
                max_turns=max_turns,
                seed=seed,
                store=store,
                run_id=run_id,
                position=position,
                cancel=cancel,
            )
            report(
                progress,
                len(done) + n,
                len(all_cases),
                case.id,
                correct=metrics["correct"],
                turns=metrics["turns"],
            )
    except Cancelled:
        status = "cancelled"
    except Exception as exc:
        from engine.runtime import ModelCrashed, ModelError

        if not isinstance(exc, ModelCrashed | ModelError):
            store.finish_run(run_id, run_summary(store, run_id), "failed", repr(exc))
            raise
        status, error = "failed", str(exc)
    finally:
        models.close()
    summary = run_summary(store, run_id)
    store.finish_run(run_id, summary, status, error)
    return {**summary, "run_id": run_id, "status": status, **({"error": error} if error else {})}


def run_summary(store: Store, run_id: int) -> dict[str, Any]:
    """The summary of a run from its stored answers (every metric of
    :data:`engine.consult.metrics.SUMMARY_KEYS`, plus leakage and similarity)."""
    return summarize([a["scores"] for a in store.answers(run_id)])
