"""The one run loop: a model, a baseline or a person answers every item of a data set.

Every activity's run goes through :func:`run` (a person's with a solver of its own,
:class:`engine.core.solvers.PersonSolver`, and a deadline when timed): it checks the data set is
of the activity's kind before anything is created, starts the run (or resumes one, refusing
settings that differ from the run's own), skips the items already answered, asks the
activity's job to answer each remaining item, stores each answer as soon as it is produced,
reports progress, honours cancel, and always ends the run: ``finished``, ``cancelled``
(a :class:`~engine.core.progress.Cancel`, Stop, Ctrl-C) or ``failed`` (with the error). A run
whose process died (kill -9) is read back as ``interrupted`` and can be resumed.

An activity supplies a :class:`RunSpec` (its ``Activity.spec``): its settings with their
defaults, its items, how to open a :class:`Job` for a run (leasing its models from the pool)
and its summary. The job is the solver: it produces each item's answer (the letters, text,
log-probabilities, turns). The loop then applies the activity's scorers
(:mod:`engine.core.scoring`) and stores the answer with their scores in one transaction, so a
stored run can be scored again without its model.

>>> from engine.core.runs import run                                         # doctest: +SKIP
>>> run(store, "exam", "explaincpe-sample", {"model": "smollm2", "limit": 3})  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from engine.activities import Activity, RunSpec, activity
from engine.core.job import Answered, Job, Solver, timed
from engine.core.progress import (
    Cancel,
    Cancelled,
    Deadline,
    ProgressCallback,
    TimeUp,
    in_flight,
    report,
)
from engine.core.run_checks import (
    TAGS,
    RunError,
    check_dataset,
    check_settings,
    resumable,
    spec_for,
    stored_load,
    stored_settings,
)
from engine.core.scoring import (
    Context,
    Scored,
    failed,
    merged,
    run_scorers,
    score_answer,
    summarize,
)
from engine.errors import UserError
from engine.models.load import LoadSettings
from engine.models.pool import Lending, ModelPool, default_pool
from engine.models.usage import run_usage
from engine.store.store import Store
from engine.types import JSONDict

OnAnswer = Callable[[Any, JSONDict], None]


class NoRoom(RunError):
    """A run its model cannot play: not even its shortest prompt and reply fit the model's
    context (an exam's 8-shot setting on a small model). An experiment shows the reason in
    its tables instead of a failed run."""


@dataclass(frozen=True)
class Spec:
    """A :class:`RunSpec` made of an activity's parts: ``check`` fills in and checks the
    settings, ``job`` opens a run's job (``job(store, dataset, settings, pool)``),
    ``summary`` gives the activity's own sections of a stored run's summary (none: its counts
    and its scorers' metrics are all of it, :func:`engine.core.scoring.summarize`); items are the
    data set's, keyed by their ``id`` unless ``load``/``item_key`` say otherwise; ``derived``
    names what the job adds to the settings stored on a run."""

    activity: Activity
    check: Callable[[JSONDict], JSONDict]
    job: Callable[[Store, str, JSONDict, ModelPool], Job]
    summary: Callable[[Store, int], JSONDict] | None = None
    load: Callable[[Store, str], Sequence[Any]] | None = None
    item_key: Callable[[Any], str] | None = None
    derived: tuple[str, ...] = ()

    def settings(self, given: JSONDict) -> JSONDict:
        return self.check(given)

    def items(self, store: Store, dataset: str) -> Sequence[Any]:
        return self.load(store, dataset) if self.load else store.items(dataset)

    def key(self, item: Any) -> str:
        return self.item_key(item) if self.item_key else str(item["id"])

    def open(self, store: Store, dataset: str, settings: JSONDict, pool: ModelPool) -> Job:
        return self.job(store, dataset, settings, pool)

    def sections(self, store: Store, run_id: int) -> JSONDict:
        return self.summary(store, run_id) if self.summary else {}


def run(
    store: Store,
    activity_id: str,
    dataset: str | None = None,
    settings: JSONDict | None = None,
    *,
    resume: int | None = None,
    pool: ModelPool | Lending | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    on_answer: OnAnswer | None = None,
    on_start: Callable[[int], None] | None = None,
    concurrency: int | None = None,
    tags: JSONDict | None = None,
    load: LoadSettings | None = None,
    solver: Solver | None = None,
    deadline: Deadline | None = None,
) -> JSONDict:
    """Run the activity over ``dataset`` with ``settings`` (see each activity's spec for the
    keys; ``model`` names the model) and return the summary, also stored with the run
    (``run_id``, ``status`` and, when it failed, ``error`` in it). ``tags`` are stored with
    the run's settings as they are (a trial's number and set: :mod:`engine.core.trials`); a
    resumed run keeps its own. Its models are leased from ``pool`` loaded with ``load``
    (:class:`~engine.models.load.LoadSettings`), stored with the run as its ``load``
    setting (those set, when any is); a resumed run loads them with its own, ``load`` laid
    over them.

    With ``resume`` the run continues with its own data set and settings; ``settings`` then
    holds only what the caller asked for explicitly, and anything that differs from the
    run's own is refused. ``on_start(run_id)`` is called once the run exists;
    ``on_answer(item, answer)`` after each stored answer. Ctrl-C (KeyboardInterrupt) ends
    the run as cancelled and is raised again. ``concurrency`` items are answered at once
    (default: the job's, a local model's slots); it is recorded on the run with the slots
    of its local models (``slots``, by model, so that a re-run can match them), and a
    resume may change it.

    ``solver`` answers instead of the activity's model job (a person: its settings are the
    solver's, and only its own runs are resumed); ``deadline`` ends the run ``finished`` once
    it passes, the items left unanswered (a timed exam). ``on_answer`` is then the tutor's
    feedback hook.
    """
    spec = spec_for(activity_id)
    opener: Solver | RunSpec = solver or spec
    pool = pool or default_pool()
    given = dict(settings or {})
    if solver is None:
        check_settings(activity_id, given)
    if resume is not None:
        row = resumable(store, spec, resume, given, solver.runner if solver else None)
        stored = stored_settings(row) if solver is None else dict(row["settings"] or {})
        dataset, full = row["dataset"], opener.settings(stored)
        load = stored_load(row["settings"] or {}, load)
    else:
        if dataset is None:
            raise RunError("no data set given")
        check_dataset(store, activity_id, dataset)
        try:
            full = opener.settings(given)
        except ValueError as exc:
            raise RunError(str(exc)) from None
    report(progress, 0, 0, "loading the model")
    if concurrency is not None and concurrency < 1:
        raise RunError("concurrency must be at least 1")
    lent = pool.lending(load)
    job = opener.open(store, dataset, full, cast("ModelPool", lent))  # lends as a pool
    job.deadline = deadline
    n = concurrency or (1 if solver else job.default_concurrency())
    stored_tags = (row["settings"] or {}) if resume is not None else {}
    kept = {k: v for k, v in stored_tags.items() if k in TAGS}
    if solver is None:  # what a model run stores of how its models ran
        loaded = (job.load or lent.load).as_dict()
        job.settings = {**job.settings, "concurrency": n, **_decoding(job)}
        job.settings |= {"load": loaded} if loaded else {}
    job.settings = {**job.settings, **kept, **(tags or {})}
    try:
        if resume is not None:
            store.claim_run(resume)
            run_id = resume
            store.update_run(run_id, settings=job.settings, n_total=len(job.items))
        else:
            run_id = store.start_run(
                activity_id, dataset, job.model_label, job.settings, job.runner, len(job.items)
            )
        if on_start is not None:
            on_start(run_id)
        return _loop(store, spec, job, run_id, progress, cancel, on_answer, n)
    finally:
        job.close()


def _decoding(job: Job) -> JSONDict:
    """``{"slots": {model: n}, "flash_attn": {model: bool}}`` for the job's local models as
    their load decided (:mod:`engine.models.slots`; flash attention changes greedy answers
    slightly, so a re-run can match it); empty where none says."""
    found: JSONDict = {}
    for key, kind in (("slots", int), ("flash_attn", bool)):
        got = {m.name: kind(m.info[key]) for m in job.leases if m.info.get(key) is not None}
        if got:
            found[key] = got
    return found


def models_concurrency(
    store: Store,
    activity_id: str,
    dataset: str | None,
    settings: JSONDict,
    pool: ModelPool,
    load: LoadSettings | None = None,
) -> int:
    """Items in flight a run of ``settings`` takes by default (:meth:`Job.default_concurrency`:
    its models' slots, loaded with ``load``), its job opened and closed again (its models
    stay in ``pool``)."""
    spec = spec_for(activity_id)
    try:
        full = spec.settings(settings)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    job = spec.open(store, dataset or "", full, cast("ModelPool", pool.lending(load)))
    try:
        return job.default_concurrency()
    finally:
        job.close()


#: The keywords of :func:`run` beside the settings (what :func:`run_settings` passes on).
LOOP_OPTIONS = (
    "resume", "pool", "progress", "cancel", "on_answer", "on_start", "concurrency", "tags",
    "load",
)  # fmt: skip


def run_settings(store: Store, activity_id: str, dataset: str | None, given: JSONDict) -> JSONDict:
    """:func:`run` for the activities' shorthands (``run_exam``, ``run_french``,
    ``run_consult``): ``given["settings"]`` is the activity's settings object (missing or
    None: the defaults), with the other settings in ``given`` laid over it; the rest of
    ``given`` are :func:`run`'s own keywords (:data:`LOOP_OPTIONS`). On resume only the
    run's own settings count."""
    given = dict(given)
    settings = given.pop("settings", None)
    options = {k: given.pop(k) for k in LOOP_OPTIONS if k in given}
    cls = activity(activity_id).settings_class()
    check_settings(activity_id, given)
    chosen = {**(settings or cls()).as_dict(), **given}
    typed = {} if options.get("resume") is not None else cls(**chosen).as_dict()
    return run(store, activity_id, dataset or None, typed, **options)


def _loop(
    store: Store,
    spec: RunSpec,
    job: Job,
    run_id: int,
    progress: ProgressCallback | None,
    cancel: Cancel | None,
    on_answer: OnAnswer | None,
    concurrency: int = 1,
) -> JSONDict:
    job.run_id, job.cancel = run_id, cancel
    done_keys = store.answered_keys(run_id)
    todo = [(p, item) for p, item in enumerate(job.items) if spec.key(item) not in done_keys]
    total = len(job.items)
    done = total - len(todo)
    report(progress, done, total, "starting", run_id=run_id, **_earlier(store, run_id, done_keys))

    def step(message: str, **info: Any) -> None:
        report(progress, done, total, message, run_id=run_id, **info)

    job.on_step = step
    started = time.perf_counter()
    context = Context(store, store.run(run_id), None, cancel)
    scorers = run_scorers(spec.activity.id, context)
    status, error = "finished", None
    again: BaseException | None = None
    errors: list[str] = []  # the items the model could not take, this time
    try:
        for position, item, answer in _answers(job, todo, cancel, concurrency):
            key = spec.key(item)
            if failed(answer):
                errors.append(f"{key}: {answer['extra']['error']}")
            scored = score_answer(scorers, answer, item, context)
            store.add_answer(run_id, key, position=position, scores=scored, **answer)
            done += 1
            shown = _with_scores(answer, scored)
            if on_answer is not None:
                on_answer(item, shown)
            info = {k: shown.get(k) for k in ("chosen", "gold", "correct", "scores")}
            info["turns"] = (answer.get("extra") or {}).get("turns")
            info["note"] = (answer.get("extra") or {}).get("note")  # the activity's word on it
            report(progress, done, total, key, run_id=run_id, item=key, **info)
    except TimeUp:
        status = "finished"
    except Cancelled:
        status = "cancelled"
    except KeyboardInterrupt as exc:
        status, again = "cancelled", exc
    except Exception as exc:  # noqa: BLE001 - the run must end, whatever stopped it
        status, error = "failed", _describe(exc)
        if not _expected(exc):
            again = exc
    if status == "finished" and errors and 2 * len(errors) > len(todo):
        status = "failed"
        error = f"{len(errors)} of {len(todo)} items failed; the first: {errors[0]}"
    usage = _usage(store, job, run_id, time.perf_counter() - started)
    return _close(store, spec, run_id, status, error, again, usage, job.summary_extra())


def _usage(store: Store, job: Job, run_id: int, seconds: float) -> JSONDict:
    """What the job's models cost this run (:mod:`engine.models.usage`: tokens per second,
    time to first token, load time, peak memory), its earlier sessions' added; empty when
    it cannot be read (the run still ends)."""
    try:
        earlier = (store.run(run_id).get("summary") or {}).get("usage")
        return run_usage(job.leases, seconds, earlier if isinstance(earlier, dict) else None)
    except Exception:  # noqa: BLE001 - measuring must never keep a run from ending
        return {}


def _earlier(store: Store, run_id: int, keys: set[str]) -> JSONDict:
    """What a resumed run's earlier sessions did, for its progress: the answers ``keys``
    that were scored right or wrong (``scored``) and how many of them right (``right``)."""
    if not keys:
        return {}
    marks = [a["correct"] for a in store.answers(run_id) if str(a["item_key"]) in keys]
    scored = [m for m in marks if m is not None]
    return {"scored": len(scored), "right": sum(scored)}


def _with_scores(answer: JSONDict, scored: Sequence[Scored]) -> JSONDict:
    """The answer as a run reports it: its scores by key, ``correct`` among them."""
    values = merged(scored)
    right = values.pop("correct", None)
    return {**answer, "scores": values, "correct": None if right is None else bool(right)}


def _close(
    store: Store,
    spec: RunSpec,
    run_id: int,
    status: str,
    error: str | None,
    again: BaseException | None,
    usage: JSONDict | None = None,
    extra: JSONDict | None = None,
) -> JSONDict:
    """End the run whatever happens: a summary that cannot be computed fails the run with
    that error instead of leaving it running. ``usage`` (what its models cost) and the job's
    ``extra`` are kept in the summary."""
    try:
        store.update_run(run_id, status=status)  # what a summary may read (a quit sitting)
        summary = {**summarize(store, run_id), **(extra or {})}
        summary |= {"run_id": run_id, "status": status}
    except Exception as exc:  # noqa: BLE001 - the run must still be closed
        if status != "failed":
            status, error = "failed", f"its summary could not be computed: {_describe(exc)}"
        summary = {"run_id": run_id, "status": status}
    if usage:
        summary["usage"] = usage
    if error:
        summary["error"] = error
    try:
        store.finish_run(run_id, summary, status=status, error=error)
    except ValueError as exc:  # a summary that cannot be stored (a non-finite number…)
        error = f"its summary could not be stored: {exc}"
        summary = {"run_id": run_id, "status": "failed", "error": error}
        store.finish_run(run_id, summary, status="failed", error=error)
    if again is not None:
        raise again
    return summary


def _answers(
    job: Job, todo: Sequence[tuple[int, Any]], cancel: Cancel | None, concurrency: int
) -> Iterator[Answered]:
    """``(position, item, answer)`` for each item to do, one at a time (the job's
    :meth:`~engine.core.job.Job.in_turn`: a person chooses the order), or with up to
    ``concurrency`` items in flight (in the order they finish:
    :func:`engine.core.progress.in_flight`). When one fails, no more are started and those in flight
    finish and are given first. Cancel reaches the requests in flight at once
    (:func:`_stopping_models`); an answer that comes back after it, cut short, is not given."""

    def answer(task: tuple[int, Any]) -> JSONDict:
        return timed(job, task[1], task[0])

    def stop() -> None:
        for model in list(job.leases):
            model.cancel()

    with _stopping_models(job, cancel):
        if concurrency <= 1:
            yield from job.in_turn(todo, cancel)
            return
        for (position, item), answered in in_flight(
            answer, todo, concurrency, cancel, stop, "medexam-run"
        ):
            yield position, item, answered


def answer_items(
    job: Job, todo: Sequence[tuple[int, Any]], cancel: Cancel | None = None, concurrency: int = 1
) -> Iterator[Answered]:
    """The run loop's scheduling for a job whose answers are not a run's (converting a data
    set into cases): ``(position, item, answer)`` of each of ``todo`` as it finishes, up to
    ``concurrency`` in flight, Cancel reaching the models at once (see :func:`_answers`)."""
    return _answers(job, todo, cancel, concurrency)


@contextlib.contextmanager
def _stopping_models(job: Job, cancel: Cancel | None) -> Iterator[None]:
    """While the block runs, a watcher stops the job's models' requests in flight as soon as
    ``cancel`` is set (Stop in the app, Ctrl-C), instead of waiting for them to end."""
    if cancel is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            if cancel.is_set():
                for model in list(job.leases):
                    model.cancel()
                return

    watcher = threading.Thread(target=watch, name="medexam-stop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _expected(exc: BaseException) -> bool:
    """Failures a run reports as its error (the model's, the store's, bad input) rather
    than a fault of medexam's own, which is raised again after the run is closed."""
    return isinstance(exc, UserError | ValueError | OSError)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if _expected(exc) else f"{type(exc).__name__}: {text}"
