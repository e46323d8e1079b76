"""A training kind of a test's own activity (``toy-train``), registered when imported: what
an activity from another package brings to medexam's training (see test_train_kinds.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.registry import CLASS, FUNCTION, Lazy, register
from engine.train.kinds import TrainingKind
from engine.train.settings import TrainSettings

if TYPE_CHECKING:
    from engine.types import JSONDict


@dataclass
class ToySettings(TrainSettings):
    """The training settings, nothing of its own."""


def prepare(*_args: object, **_kw: object) -> None:
    raise NotImplementedError("the toy kind is listed, never trained")


def evaluation(row: JSONDict) -> JSONDict:
    """The toy activity's run with what training ``row`` made."""
    return {"model": f"toy:{row['name']}"}


KIND = register(
    "training",
    TrainingKind(
        "toy-trainer",
        "toy trainer",
        "toy-train",
        "toy",
        Lazy("toy_training", "ToySettings", CLASS),
        Lazy("toy_training", "prepare", FUNCTION),
        evaluation=Lazy("toy_training", "evaluation", FUNCTION),
        measures={"right": "Right", "close": "Close"},
    ),
)
