"""The plain data of an experiment's plan: its cells (one run each), each planned (its full
settings, the run it reuses, its time estimate), and the plan of them all
(:mod:`engine.experiments.plan` makes it, :mod:`engine.experiments.records` stores it)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.core.estimate import Estimate
    from engine.types import JSONDict, Row


@dataclass(frozen=True)
class Cell:
    """One run of an experiment: its activity, data set and settings (as given to
    :func:`engine.core.runs.run`, the model among them), a label and its ``coords``, where it sits
    in the paper's tables and figures (``{"model": …, "shots": 4, "instruction": True}``)."""

    activity: str
    dataset: str
    settings: JSONDict
    label: str
    coords: JSONDict = field(default_factory=dict)


@dataclass
class PlannedCell:
    """A cell with its settings as the activity fills them in (``full``: what a stored run
    of it holds), the finished run it reuses (None: to be played) and its time estimate."""

    cell: Cell
    full: JSONDict
    reuse: int | None
    estimate: Estimate
    same_as: int | None = None  # an earlier cell of the plan with these very settings
    rough: bool = False  # timed by a run of its model with other settings
    own: Row | None = None  # its run in the stored experiment of this plan, when there is one
    stale: int | None = None  # its stored run, on items its data set no longer holds

    @property
    def played(self) -> bool:
        """Whether the cell needs a run of its own (not reused, not another cell's run, not
        finished in the stored experiment)."""
        done = self.own is not None and self.own["status"] == "finished"
        return self.reuse is None and self.same_as is None and not done

    def as_json(self) -> JSONDict:
        seconds = self.estimate.seconds if self.played else None
        return {
            "label": self.cell.label,
            "activity": self.cell.activity,
            "dataset": self.cell.dataset,
            "settings": self.cell.settings,
            "coords": self.cell.coords,
            "items": self.estimate.items,
            "reuses": self.reuse,
            "same_as": None if self.same_as is None else self.same_as + 1,
            "seconds": None if seconds is None else round(seconds, 1),
            "paced_by": self.estimate.run_id if self.played else None,
            "rough": self.rough,
            "run_id": None if self.own is None else self.own["id"],
            "status": None if self.own is None else self.own["status"],
            "stale_run": self.stale,
        }


@dataclass
class Plan:
    """An experiment's runs: ``name`` (the preset's or the file's), ``spec`` (what it was
    asked: preset or file, models, data set, limit) and its cells in order."""

    name: str
    title: str
    spec: JSONDict
    cells: list[PlannedCell]
    experiment_id: int | None = None  # the stored experiment of these runs, when there is one

    @property
    def key(self) -> str:
        """What identifies the experiment: its runs' activities, data sets and settings."""
        cells = [[c.cell.activity, c.cell.dataset, c.full] for c in self.cells]
        text = json.dumps(cells, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_play(self) -> list[PlannedCell]:
        return [c for c in self.cells if c.played]

    def seconds(self) -> tuple[float, int]:
        """The estimated seconds of the runs to play and how many of them have no estimate."""
        todo = self.to_play()
        known = [c.estimate.seconds for c in todo if c.estimate.seconds is not None]
        return sum(known), len(todo) - len(known)

    def time_text(self) -> str:
        """``6 runs to play ≈ 14 min (2 not timed: no earlier run of their model); 2 reused``."""
        from engine.core.estimate import duration_text

        todo = self.to_play()
        seconds, untimed = self.seconds()
        items = sum(c.estimate.items for c in todo)
        text = f"{len(todo)} run{'' if len(todo) == 1 else 's'} to play, {items} items"
        if todo and untimed < len(todo):
            text += f" ≈ {duration_text(seconds)}"
        rough = sum(c.rough for c in todo)
        notes = [f"{rough} timed by their model's runs with other settings"] if rough else []
        notes += [f"{untimed} not timed: no earlier run of their model"] if untimed else []
        text += f" ({'; '.join(notes)})" if notes else ""
        reused = sum(c.reuse is not None for c in self.cells)
        shared = sum(c.same_as is not None for c in self.cells)
        text += f"; {reused} reused" if reused else ""
        return text + (f"; {shared} the same run as another" if shared else "")

    def as_json(self) -> JSONDict:
        seconds, untimed = self.seconds()
        return {
            "name": self.name,
            "title": self.title,
            "key": self.key,
            "experiment_id": self.experiment_id,
            **self.spec,
            "runs": [c.as_json() for c in self.cells],
            "to_play": len(self.to_play()),
            "reused": sum(c.reuse is not None for c in self.cells),
            "seconds": round(seconds, 1),
            "untimed": untimed,
        }
