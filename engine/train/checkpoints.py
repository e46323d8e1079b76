"""A training's checkpoints: everything needed to go on exactly where it stopped.

``checkpoint.pt`` in the training's work folder holds the trained weights (those that take
a gradient: :func:`trained_state`), the optimizer's and the
schedule's state, torch's random state (dropout), where the loop is (step, epoch, batch)
and what it has recorded so far (loss curve, evaluations, best epoch); ``best.pt`` holds
the weights of the best epoch so far. Each is written to a temporary file and renamed over
the old one, so a kill -9 at any moment leaves the last whole checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from engine.types import JSONDict

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"


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
    missing = set(trained_state(model)) - set(state)
    unexpected = model.load_state_dict(state, strict=False).unexpected_keys
    if missing or unexpected:
        raise ValueError("the checkpoint does not hold this model's trained weights")


def _atomic_save(value: Any, path: Path) -> None:
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(value, tmp)
    os.replace(tmp, path)


def save(
    folder: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: Any,
    at: Position,
) -> None:
    """Write the checkpoint of ``model`` and the loop's state ``at`` into ``folder``."""
    import torch

    state = {
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


def load(
    folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, schedule: Any
) -> Position | None:
    """Restore the checkpoint in ``folder`` into the model, optimizer and schedule (and
    torch's random state); return where the loop was, or None when there is none."""
    import torch

    path = folder / CHECKPOINT
    if not path.is_file():
        return None
    state = torch.load(path, map_location="cpu", weights_only=False)
    _restore(model, state["model"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    torch.set_rng_state(state["rng"])
    if state.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    return Position(**state["position"])


def load_best(folder: Path, model: torch.nn.Module) -> bool:
    """Put the best epoch's weights into ``model``; False when none were kept."""
    import torch

    path = folder / BEST
    if not path.is_file():
        return False
    _restore(model, torch.load(path, map_location="cpu", weights_only=True))
    return True
