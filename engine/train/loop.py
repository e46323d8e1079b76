"""The one training loop: a kind's model trained on a data set, as a job like a run.

:func:`train` checks the data set is of the kind's activity and the settings before anything
is created, has the kind prepare its :class:`Task` (the model, the examples, how a batch is
made), records the training (:mod:`engine.train.records`), then trains: AdamW with a linear
warm-up and decay, the examples in a seeded order per epoch, progress after each step (step,
loss, examples/s, tokens/s, time left), a checkpoint every ``checkpoint_every`` steps and at
each epoch's end (:mod:`engine.train.checkpoints`), an evaluation after each epoch when the
task has one (the best epoch's weights kept). It always ends the training the way a run
ends: ``finished`` (the artefact published, :mod:`engine.train.artefacts`), ``cancelled``
(a :class:`~engine.core.progress.Cancel`, Ctrl-C; a checkpoint is written first) or ``failed``
(with the error: a loss or gradients that are not finite numbers fail it before the step
changes anything, and weights that are not finite are never written in a checkpoint or
published, :mod:`engine.train.finite`). A training whose process died reads
``interrupted``; ``resume=ID`` goes on from its last checkpoint to the very weights an
uninterrupted training would have made, with the very data (a data file's SHA-256 is
recorded, and a changed file refused). A checkpoint that is missing, damaged, not this
training's or holding numbers that are not finite ends the resumed training ``failed`` with
one line: it never silently starts again from step 0.

>>> train(store, "french-reader", "train", {"epochs": 1}, name="demo")   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.progress import Cancel, Cancelled, ProgressCallback, report
from engine.core.runs import _describe, _expected
from engine.errors import UserError
from engine.fields import SettingError
from engine.train import artefacts, checkpoints, records
from engine.train.checkpoints import CheckpointError, Position, trained_state
from engine.train.finite import non_finite
from engine.train.kinds import TrainingKind, get_kind
from engine.train.threads import CpuThreads

if TYPE_CHECKING:
    import torch

    from engine.store.store import Store
    from engine.types import JSONDict

Batch = dict[str, Any]


class TrainError(UserError):
    """A training that cannot start or resume: one line for the user."""


@dataclass
class Task:
    """What a kind prepares for the loop. ``examples`` are the training examples as
    ``collate`` takes them (a list of them → a batch of tensors on the task's device);
    ``loss(model, batch)`` defaults to ``model(**batch).loss``; ``evaluate(model)`` returns
    the epoch's measures with a ``score`` (higher is better) that picks the best epoch;
    ``save(model, folder)`` writes the artefact's files and returns what its manifest adds;
    ``parameters`` are those trained (default: every one that needs a gradient); ``data``
    describes the data (stored with the training)."""

    model: torch.nn.Module
    examples: Sequence[Any]
    collate: Callable[[list[Any]], Batch]
    save: Callable[[torch.nn.Module, Path], JSONDict]
    data: JSONDict = field(default_factory=dict)
    evaluate: Callable[[torch.nn.Module], JSONDict] | None = None
    loss: Callable[[torch.nn.Module, Batch], torch.Tensor] | None = None
    parameters: Iterable[torch.nn.Parameter] | None = None


def pick_device(wanted: str = "auto") -> str:
    """``cuda`` when asked or when torch sees a GPU (``auto``), else ``cpu``."""
    import torch

    if wanted == "cuda" and not torch.cuda.is_available():
        raise TrainError("--device cuda: torch sees no GPU here")
    if wanted == "cuda" or (wanted == "auto" and torch.cuda.is_available()):
        return "cuda"
    return "cpu"


def device_label(device: str) -> str:
    """The device in words: ``CPU (up to 2 threads)`` or ``CUDA (NVIDIA H200)``."""
    import torch

    if device == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(0)})"
    from engine.models.cores import counts_load
    from engine.models.hardware import physical_cores

    if counts_load():  # threads follow the load (engine.train.threads)
        return f"CPU (up to {physical_cores()} threads)"
    return f"CPU ({torch.get_num_threads()} threads)"


def check_memory(needed: int, smaller: str) -> None:
    """Refuse, in one line, a training that needs more than the free memory (``needed``
    bytes, roughly); ``smaller`` says what to choose instead."""
    import psutil

    free = psutil.virtual_memory().available
    if needed > free:
        raise TrainError(
            f"training needs about {needed / 2**30:.1f} GiB of memory and "
            f"{free / 2**30:.1f} GiB is free: choose {smaller}"
        )


def steps_per_epoch(n_examples: int, batch_size: int) -> int:
    return math.ceil(n_examples / batch_size)


def total_steps(n_examples: int, settings: JSONDict) -> int:
    """The steps of a training: every epoch's, or ``max_steps`` when that is fewer."""
    n = settings["epochs"] * steps_per_epoch(n_examples, settings["batch_size"])
    return min(n, settings.get("max_steps") or n)


def epoch_order(seed: int, epoch: int, n: int) -> list[int]:
    """The examples' order in ``epoch``: the same for a seed, whenever it is asked."""
    import numpy as np

    return [int(i) for i in np.random.default_rng([seed, epoch]).permutation(n)]


def _typed(kind: TrainingKind, given: JSONDict) -> JSONDict:
    try:
        return kind.settings_class().from_dict(given).as_dict()  # type: ignore[attr-defined]
    except SettingError as exc:
        raise TrainError(str(exc)) from None


def _check_new(store: Store, name: str, replace: bool) -> None:
    artefacts.check_name(name)
    if artefacts.exists(name) and not replace:
        raise TrainError(f"a trained artefact named {name!r} already exists (give --replace)")
    for row in records.by_name(store, name):
        if row["status"] == "running":
            raise TrainError(f"training {row['id']} is making {name!r} right now")


def _published(store: Store, row: JSONDict) -> bool:
    """Whether the training's artefact is out already (its process died between publishing
    it and closing the training): the training is closed as finished then."""
    if not artefacts.exists(row["name"]):
        return False
    found = artefacts.find(row["name"])
    # the training's id alone is not enough: another database's training may have that id
    if found.get("training") != row["id"] or found.get("work") != _owner(row)["work"]:
        return False
    result = {"artefact": row["name"], "path": found["path"], "best_epoch": found["best_epoch"]}
    records.finish(store, row["id"], "finished", result)
    return True


def _owner(row: JSONDict) -> JSONDict:
    """What a training's checkpoints name as theirs: its id and its work folder's token."""
    return {"training": row["id"], "work": (row["data"] or {}).get("work")}


def _same_source(row: JSONDict, source: JSONDict) -> None:
    """Refuse to resume a training on a data file that changed since it started."""
    recorded = (row["data"] or {}).get("source") or {}
    if recorded.get("sha256") and recorded["sha256"] != source.get("sha256"):
        raise TrainError(
            f"{recorded['path']} changed since training {row['id']} started (its SHA-256 "
            "differs): a resume goes on only with the very data it began with"
        )


def _resumable(store: Store, kind: TrainingKind, row: JSONDict) -> bool:
    """Whether training ``row`` has anything left to do (False: its process died just
    after publishing its artefact, and it is closed finished now); a training that cannot
    be resumed is a :class:`TrainError`."""
    resume, name = row["id"], row["name"]
    if row["status"] == "finished":
        raise TrainError(f"training {resume} finished: there is nothing to resume")
    if row["status"] == "running":
        raise TrainError(f"training {resume} is still running (pid {row['owner_pid']})")
    if _published(store, row):
        return False
    if artefacts.exists(name) and not (row["data"] or {}).get("replace"):
        raise TrainError(
            f"a trained artefact named {name!r} already exists (another training made "
            f"it): training {resume} cannot be published under that name"
        )
    _same_source(row, kind.check_data(store, row["dataset"]))
    return True


def _saved(row: JSONDict) -> JSONDict | None:
    """The last checkpoint of training ``row`` to resume from (None: it stopped at step 0,
    before its first); one that is missing, damaged, another training's or older than the
    training's record is a :class:`CheckpointError`."""
    folder = artefacts.work_dir(row)
    state = checkpoints.read(folder, _owner(row))
    if state is None:
        if row["step"]:
            raise CheckpointError(
                f"the checkpoint of training {row['id']} at step {row['step']} is missing "
                f"({folder / checkpoints.CHECKPOINT}): it cannot go on from there"
            )
        return None
    at, curve = state["position"], row["loss_curve"] or []
    # the training's record is written just after each checkpoint: the checkpoint has
    # at least its steps, and the same losses
    if at["step"] < row["step"] or at["loss_curve"][: len(curve)] != curve:
        raise CheckpointError(f"{state['path']} is not the last checkpoint of training {row['id']}")
    return state


def train(
    store: Store,
    kind_id: str,
    dataset: str | None = None,
    settings: JSONDict | None = None,
    *,
    name: str | None = None,
    replace: bool = False,
    resume: int | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    on_start: Callable[[int], None] | None = None,
) -> JSONDict:
    """Train a model of kind ``kind_id`` on ``dataset`` with ``settings`` (the kind's
    settings dataclass's fields), publish it as ``name`` and return the training (its row:
    ``id``, ``status``, ``result``, ``error``…). With ``resume`` the training ``resume``
    goes on with its own data set, settings and name. ``on_start(id)`` is called once the
    training is recorded. Ctrl-C ends it as cancelled and is raised again; a
    :class:`~engine.core.progress.Cancel` set while the kind prepares raises
    :class:`~engine.core.progress.Cancelled` before anything is recorded."""
    import torch

    saved = None
    if resume is not None:
        row = records.get(store, resume)
        kind, dataset, name = get_kind(row["kind"]), row["dataset"], row["name"]
        replace = bool((row["data"] or {}).get("replace"))
        if not _resumable(store, kind, row):
            return records.get(store, resume)
        full = _typed(kind, row["settings"] or {})
        try:
            saved = _saved(row)
        except CheckpointError as exc:  # nothing to go on from: the training fails, said why
            records.claim(store, resume)
            records.finish(store, resume, "failed", {"step": row["step"]}, str(exc))
            return records.get(store, resume)
    else:
        kind = get_kind(kind_id)
        if not dataset or not name:
            raise TrainError("give a data set and a name")
        source = kind.check_data(store, dataset)
        dataset = source.get("path", dataset)
        full = _typed(kind, settings or {})
        _check_new(store, name, replace)
    device = pick_device(full.get("device", "auto"))
    torch.manual_seed(full["seed"])
    prepare = kind.prepare_function()
    task: Task = prepare(store, dataset, full, device, cancel=cancel)
    if cancel is not None:  # stopped while the model loaded: nothing is recorded
        cancel.check()
    n_steps = total_steps(len(task.examples), full)
    if resume is not None:
        records.claim(store, resume)
        training_id = resume
    else:
        work = artefacts.new_work_token()
        data = {**task.data, "replace": replace, "work": work, "source": source}
        training_id = records.start(
            store, name, kind.id, dataset, data, full, device_label(device), n_steps
        )
    if on_start is not None:
        on_start(training_id)
    row = records.get(store, training_id)
    return _run(store, kind, row, task, full, progress, cancel, saved)


def _optimizer(task: Task, settings: JSONDict, n_steps: int) -> tuple[Any, Any]:
    import torch

    params = list(task.parameters or (p for p in task.model.parameters() if p.requires_grad))
    # fused: one kernel for every parameter (what transformers' Trainer uses by default);
    # on the CPU the per-tensor update is some 50 times slower.
    optimizer = torch.optim.AdamW(
        params, lr=settings["learning_rate"], weight_decay=settings["weight_decay"], fused=True
    )
    warm = max(1, round(settings["warmup"] * n_steps))

    def rate(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (n_steps - step) / max(1, n_steps - warm))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, rate)


@dataclass
class _State:
    """One training under way: the task, its optimizer and schedule, where it is."""

    store: Store
    training_id: int
    owner: JSONDict
    task: Task
    settings: JSONDict
    folder: Path
    optimizer: Any
    schedule: Any
    at: Position
    n_steps: int
    progress: ProgressCallback | None
    started: float = field(default_factory=time.perf_counter)
    saved_step: int = 0  # the step of the last checkpoint (where a resume goes on from)
    steps_here: int = 0  # steps done in this process (for the speed)
    examples_here: int = 0
    tokens_here: int = 0
    threads: CpuThreads | None = None  # on the CPU: torch's threads, with the machine's load

    def finite(self, kept: str) -> None:
        """Refuse to keep (``kept``: what would be written) trained weights that are not
        finite numbers: a :class:`TrainError` naming the likely cause."""
        bad = non_finite(trained_state(self.task.model))
        if bad:
            raise TrainError(
                f"after step {self.at.step} the trained weights hold {bad}: the learning "
                f"rate ({self.settings['learning_rate']:g}) may be too high for these data "
                f"({kept} was not written)"
            )

    def checkpoint(self) -> None:
        self.finite("its checkpoint")
        checkpoints.save(
            self.folder, self.owner, self.task.model, self.optimizer, self.schedule, self.at
        )
        self.saved_step = self.at.step
        records.update(
            self.store,
            self.training_id,
            step=self.at.step,
            epoch=self.at.epoch,
            loss_curve=self.at.loss_curve,
            evals=self.at.evals,
        )

    def speed(self) -> JSONDict:
        seconds = max(time.perf_counter() - self.started, 1e-9)
        per_step = seconds / max(self.steps_here, 1)
        return {
            "examples_per_s": round(self.examples_here / seconds, 2),
            "tokens_per_s": round(self.tokens_here / seconds, 1),
            "eta_s": round(per_step * (self.n_steps - self.at.step), 1),
        }


def _run(
    store: Store,
    kind: TrainingKind,
    row: JSONDict,
    task: Task,
    settings: JSONDict,
    progress: ProgressCallback | None,
    cancel: Cancel | None,
    saved: JSONDict | None,
) -> JSONDict:
    """Train from the checkpoint ``saved`` (:func:`engine.train.checkpoints.read`; None: from
    step 0) to the end, and close the training."""
    training_id = row["id"]
    folder = artefacts.work_dir(row)
    per_epoch = steps_per_epoch(len(task.examples), settings["batch_size"])
    n_steps = total_steps(len(task.examples), settings)
    task.model.train()
    optimizer, schedule = _optimizer(task, settings, n_steps)
    state = _State(
        store, training_id, _owner(row), task, settings, folder, optimizer, schedule,
        Position(), n_steps, progress,
    )  # fmt: skip
    if next(task.model.parameters()).device.type == "cpu":
        state.threads = CpuThreads()
    status, error, result = "finished", None, {}
    again: BaseException | None = None
    try:
        if saved is not None:
            state.at = checkpoints.restore(saved, task.model, optimizer, schedule)
            state.saved_step = state.at.step
        _epochs(state, per_epoch, cancel)
        result = _publish(state, kind)
    except CheckpointError as exc:  # nothing to resume from: said, not started again
        status, error = "failed", str(exc)
        result = {"step": max(state.saved_step, row["step"])}
    except Cancelled:  # between two steps: where it is can be written
        status = "cancelled"
        _keep_checkpoint(state)
    except KeyboardInterrupt as exc:  # perhaps mid-step: the last checkpoint stands
        status, again = "cancelled", exc
    except Exception as exc:  # noqa: BLE001 - the training must end, whatever stopped it
        status, error = "failed", _describe(exc)
        if not _expected(exc):
            again = exc
    if state.threads is not None:
        state.threads.restore()
    if status != "finished" and not result:
        result = {"resume": training_id, "step": state.saved_step}
    records.finish(store, training_id, status, result, error)
    if again is not None:
        raise again
    return records.get(store, training_id)


def _keep_checkpoint(state: _State) -> None:
    """A training that stops writes where it is, to be resumed from there."""
    with contextlib.suppress(Exception):  # else the last periodic checkpoint stands
        state.checkpoint()


def _epochs(state: _State, per_epoch: int, cancel: Cancel | None) -> None:
    settings, task, at = state.settings, state.task, state.at
    n, size = len(task.examples), settings["batch_size"]
    while at.epoch < settings["epochs"] and at.step < state.n_steps:
        order = epoch_order(settings["seed"], at.epoch, n)
        while at.batch < per_epoch and at.step < state.n_steps:
            if cancel is not None:
                cancel.check()
            if state.threads is not None:
                state.threads.settle()
            chosen = [task.examples[i] for i in order[at.batch * size : (at.batch + 1) * size]]
            loss = _step(state, chosen)
            at.step += 1
            at.batch += 1
            at.loss_curve.append([at.step, round(loss, 5)])
            report(
                state.progress, at.step, state.n_steps, f"epoch {at.epoch + 1}/{settings['epochs']}",
                training_id=state.training_id, epoch=at.epoch + 1, loss=round(loss, 4),
                **state.speed(),
            )  # fmt: skip
            more = at.batch < per_epoch and at.step < state.n_steps
            if at.step % settings["checkpoint_every"] == 0 and more:
                state.checkpoint()
        _end_epoch(state)


def _step(state: _State, chosen: list[Any]) -> float:
    """One step on the examples ``chosen``; its loss. A loss or gradients that are not
    finite numbers end the training before the weights change (:func:`_not_finite`)."""
    import torch

    task = state.task
    batch = task.collate(chosen)
    loss = task.loss(task.model, batch) if task.loss else task.model(**batch).loss
    value = float(loss.detach())
    if not math.isfinite(value):
        raise TrainError(_not_finite(state, f"the loss of step {state.at.step + 1} is {value}"))
    loss.backward()
    grads = {n: p.grad for n, p in task.model.named_parameters() if p.grad is not None}
    if not math.isfinite(float(torch.nn.utils.get_total_norm(list(grads.values())))):
        state.optimizer.zero_grad(set_to_none=True)
        bad = non_finite(grads) or "values too large to add up"
        raise TrainError(
            _not_finite(state, f"the gradients of step {state.at.step + 1} hold {bad}")
        )
    state.optimizer.step()
    state.schedule.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.steps_here += 1
    state.examples_here += len(chosen)
    mask = batch.get("attention_mask")
    state.tokens_here += int(mask.sum()) if mask is not None else 0
    return value


def _not_finite(state: _State, what: str) -> str:
    """The one line of a step whose loss or gradients are not finite numbers: ``what``, and
    its likely cause (weights that are not finite already, else the learning rate)."""
    weights = non_finite(state.task.model.state_dict())
    if weights:
        cause = f"the model's weights hold {weights}: the model it starts from is damaged"
    else:
        rate = state.settings["learning_rate"]
        cause = f"the learning rate ({rate:g}) may be too high for these data"
    return f"{what}, and nothing of that step was kept: {cause}"


def _end_epoch(state: _State) -> None:
    """Evaluate the epoch (keeping the best one's weights), then move on and checkpoint."""
    task, at = state.task, state.at
    if task.evaluate is not None:
        report(state.progress, at.step, state.n_steps, f"evaluating epoch {at.epoch + 1}")
        task.model.eval()
        measured = {"epoch": at.epoch + 1, "step": at.step, **task.evaluate(task.model)}
        task.model.train()
        at.evals.append(measured)
        if at.best is None or measured["score"] > at.best["score"]:
            at.best = {"epoch": at.epoch + 1, "score": measured["score"]}
            state.finite("the best epoch's weights")
            checkpoints.save_best(state.folder, task.model)
        report(
            state.progress, at.step, state.n_steps, f"epoch {at.epoch + 1} evaluated",
            training_id=state.training_id, evaluation=measured,
        )  # fmt: skip
    at.epoch += 1
    at.batch = 0
    state.checkpoint()


def _publish(state: _State, kind: TrainingKind) -> JSONDict:
    """Put the best epoch's weights (the last's without evaluations) into the artefact."""
    row = records.get(state.store, state.training_id)
    task, at = state.task, state.at
    checkpoints.load_best(state.folder, task.model)
    state.finite(f"the {kind.artefact} {row['name']!r}")
    built = state.folder / "artefact"
    built.mkdir(exist_ok=True)
    task.model.eval()
    extra = task.save(task.model, built)
    best_epoch = at.best["epoch"] if at.best else at.epoch
    manifest = {
        "kind": kind.id,
        "artefact": kind.artefact,
        "training": state.training_id,
        "work": state.owner["work"],
        "dataset": row["dataset"],
        "settings": state.settings,
        "best_epoch": best_epoch,
        "evals": at.evals,
        **extra,
    }
    path = artefacts.publish(built, row["name"], manifest, bool((row["data"] or {}).get("replace")))
    artefacts.remove_work(row)
    last = [loss for _, loss in at.loss_curve[-10:]]
    return {
        "artefact": row["name"],
        "path": str(path),
        "best_epoch": best_epoch,
        "best": next((e for e in at.evals if e["epoch"] == best_epoch), None),
        "final_loss": round(sum(last) / len(last), 4) if last else None,
        **state.speed(),
    }
