"""A training's checkpoints: everything needed to go on exactly where it stopped.

``checkpoint.pt`` in the training's work folder holds the trained weights (those that take
a gradient: :func:`trained_state`), the optimizer's and the
schedule's state, torch's random state (dropout), where the loop is (step, epoch, batch)
and what it has recorded so far (loss curve, evaluations, best epoch); ``best.pt`` holds
the weights of the best epoch so far. Each is written to a temporary file and renamed over
the old one, so a kill -9 at any moment leaves the last whole checkpoint.

A checkpoint holds only tensors, dicts, lists and numbers, and is read back with
``torch.load(..., weights_only=True)``: a file that holds anything else (a pickle that would
run code) is refused, never executed. It names the training it belongs to (``owner``: its id
and its work folder's token), and one of another training is refused too
(:class:`CheckpointError`, one line), as is one whose weights or losses are not finite
numbers (:mod:`engine.train.finite`).
"""

from __future__ import annotations

import math
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, first_line
from engine.train.finite import non_finite

if TYPE_CHECKING:
    import torch

    from engine.types import JSONDict

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"
#: What every checkpoint holds.
KEYS = frozenset({"owner", "model", "optimizer", "schedule", "rng", "position"})


class CheckpointError(UserError):
    """A checkpoint that cannot be used: damaged, not one medexam wrote, or another
    training's."""


@dataclass
class Position:
    """Where a training is and what it has recorded: ``step`` steps done, the next batch is
    number ``batch`` of epoch ``epoch`` (both from 0)."""

    step: int = 0
    epoch: int = 0
    batch: int = 0
    loss_curve: list[list[float]] = field(default_factory=list)  # [step, loss] per step
    evals: list[JSONDict] = field(default_factory=list)  # one per epoch evaluated
    best: JSONDict | None = None  # {"epoch", "score"} of the best evaluation


def trained_state(model: torch.nn.Module) -> dict[str, Any]:
    """The weights a training changes: its parameters that take a gradient (every one of a
    fine-tuned reader, only the adapter's of a LoRA), not the frozen base."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v for k, v in model.state_dict().items() if k in names}


def _restore(model: torch.nn.Module, state: dict[str, Any]) -> None:
    if not isinstance(state, dict):
        raise ValueError("it holds no weights")
    missing = set(trained_state(model)) - set(state)
    unexpected = model.load_state_dict(state, strict=False).unexpected_keys
    if missing or unexpected:
        raise ValueError("it does not hold this model's trained weights")


def _read(path: Path) -> Any:
    """What ``path`` holds, read as tensors, dicts, lists and numbers only (nothing in it
    runs); :class:`CheckpointError` for a file cut short, damaged or holding anything else."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # torch's own message would advise weights_only=False
        why = "it holds more than tensors and numbers"
    except Exception as exc:  # noqa: BLE001 - whatever the file is, it is not used
        why = f"it is cut short or damaged: {first_line(exc)}"
    raise CheckpointError(f"{path} is not a checkpoint medexam can use ({why}); it was not loaded")


def _atomic_save(value: Any, path: Path) -> None:
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(value, tmp)
    os.replace(tmp, path)


def save(
    folder: Path,
    owner: JSONDict,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: Any,
    at: Position,
) -> None:
    """Write the checkpoint of ``model`` and the loop's state ``at`` into ``folder``, as
    the training ``owner`` names (its ``training`` id and ``work`` token)."""
    import torch

    state = {
        "owner": owner,
        "model": trained_state(model),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "position": at.__dict__,
    }
    _atomic_save(state, folder / CHECKPOINT)


def save_best(folder: Path, model: torch.nn.Module) -> None:
    _atomic_save(trained_state(model), folder / BEST)


def read(folder: Path, owner: JSONDict) -> dict[str, Any] | None:
    """The checkpoint in ``folder`` of training ``owner`` (its ``training`` id and ``work``
    token), read but not yet restored (:func:`restore`); None when there is none. A file
    that is damaged, not a checkpoint medexam wrote or another training's is a
    :class:`CheckpointError`."""
    path = folder / CHECKPOINT
    if not path.is_file():
        return None
    state = _read(path)
    if not isinstance(state, dict) or not KEYS - {"owner"} <= state.keys():
        raise CheckpointError(f"{path} is not a checkpoint of a medexam training")
    # a checkpoint written before checkpoints named their training names none: only a
    # training recorded before then (whose work folder has no token) may take it
    mine = state.get("owner") == owner or (state.get("owner") is None and not owner["work"])
    at = state["position"]
    whole = isinstance(at, dict) and isinstance(at.get("step"), int)
    if not mine or not whole or not isinstance(at.get("loss_curve"), list):
        raise CheckpointError(f"{path} is not a checkpoint of training {owner['training']}")
    _finite(path, state["model"], at["loss_curve"])
    state["path"] = str(path)
    return state


def _finite(path: Path, weights: Any, loss_curve: list[Any]) -> None:
    """Refuse a checkpoint whose weights or losses are not finite numbers (one written
    before medexam checked them): a training never goes on from, or publishes, such weights."""
    import torch

    given = weights.items() if isinstance(weights, dict) else ()
    bad = non_finite({k: v for k, v in given if isinstance(v, torch.Tensor)})
    losses = [x[-1] for x in loss_curve if isinstance(x, list) and x]
    if bad is None and not all(math.isfinite(x) for x in losses if isinstance(x, float)):
        bad = "a loss that is not a finite number"
    if bad is not None:
        raise CheckpointError(f"{path} holds {bad}: the training cannot go on from it")


def restore(
    state: dict[str, Any], model: torch.nn.Module, optimizer: torch.optim.Optimizer, schedule: Any
) -> Position:
    """Put checkpoint ``state`` (:func:`read`) into the model, optimizer and schedule (and
    torch's random state); return where the loop was. One that does not fit them is a
    :class:`CheckpointError`."""
    import torch

    try:
        _restore(model, state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        if state.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        return Position(**state["position"])
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise CheckpointError(
            f"{state['path']} does not fit this training ({first_line(exc)})"
        ) from None


def load_best(folder: Path, model: torch.nn.Module) -> bool:
    """Put the best epoch's weights into ``model``; False when none were kept."""
    path = folder / BEST
    if not path.is_file():
        return False
    try:
        _restore(model, _read(path))
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{path} does not fit this training ({first_line(exc)})") from None
    return True
