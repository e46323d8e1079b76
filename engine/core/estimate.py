"""How long a model run will take, said before it starts: its items times the seconds an
item took in the newest earlier run of the same activity, model and method (the time its
answers took to come, a pause between a stop and its resume left out, over the answers it
stored).

>>> found = estimate(store, "exam", "explaincpe-test",                        # doctest: +SKIP
...                  {"model": "smollm2", "method": "generate"})
>>> found.text("question")                                                      # doctest: +SKIP
'190 questions × 27 s (as run #12 took) ≈ 86 min'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: Settings that make two runs of one model take different times per item.
PACE_KEYS = ("method", "shots", "max_tokens", "max_turns", "reader", "k")


@dataclass(frozen=True)
class Estimate:
    """``items`` to answer; ``seconds_per_item`` as run ``run_id`` took (None: no run to
    time them by)."""

    items: int
    seconds_per_item: float | None = None
    run_id: int | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.seconds_per_item is None else self.items * self.seconds_per_item

    def text(self, noun: str = "item") -> str:
        """``190 questions × 27 s (as run #12 took) ≈ 86 min``, or why there is no time."""
        counted = f"{self.items} {noun}{'' if self.items == 1 else 's'}"
        if self.seconds is None:
            return f"{counted}; no earlier run of this model and method to time them by"
        return (
            f"{counted} × {self.seconds_per_item:.0f} s (as run #{self.run_id} took) "
            f"≈ {duration_text(self.seconds)}"
        )


def duration_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 5 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _pace(store: Store, run: Row) -> float | None:
    """Seconds per stored answer of ``run``: the time its answers took to come (see
    :func:`_answering`), else its wall time from start to end (None without both times or any
    answer)."""
    if not run.get("started") or not run.get("finished") or not run.get("n_done"):
        return None
    try:
        took = datetime.fromisoformat(run["finished"]) - datetime.fromisoformat(run["started"])
    except (TypeError, ValueError):
        return None
    seconds = took.total_seconds()  # whole seconds: 0 for a run within one second
    answering = _answering(store.answers(int(run["id"])))
    if answering is not None:
        seconds = min(seconds, answering) if seconds > 0 else answering
    seconds /= int(run["n_done"])
    return seconds if seconds > 0 else None


def _answering(answers: Sequence[Row]) -> float | None:
    """The seconds a run spent answering, pauses left out: the first answer's time, then each
    wait for the next answer, at most the time that answer took (a run stopped and resumed
    a day later did not spend the day on its next answer). None unless every answer has its
    time and the moment it was stored."""
    times: list[tuple[datetime, float]] = []
    for a in answers:
        latency, created = a.get("latency_s"), a.get("created")
        if not isinstance(latency, int | float) or not isinstance(created, str):
            return None
        try:
            times.append((datetime.fromisoformat(created), float(latency)))
        except ValueError:
            return None
    if not times:
        return None
    times.sort(key=lambda t: t[0])
    waits = (
        min((at - before).total_seconds(), latency)
        for (before, _), (at, latency) in zip(times, times[1:], strict=False)
    )
    return times[0][1] + sum(waits)


def estimate(
    store: Store, activity_id: str, dataset: str, settings: JSONDict, trials: int = 1
) -> Estimate:
    """The items a new run of ``settings`` over ``dataset`` answers (its ``limit``, times
    ``trials``) and the seconds per item of the newest finished or cancelled run of the same
    activity whose model (``model``, or a consultation's ``doctor``) and pace settings
    (:data:`PACE_KEYS`) are these."""
    n = store.dataset(dataset)["n_items"] or 0
    limit = settings.get("limit")
    items = (min(n, int(limit)) if limit else n) * max(1, trials)
    model = settings.get("model") or settings.get("doctor")
    if not model:
        return Estimate(items)
    for run in store.runs(activity_id):
        stored = run.get("settings") or {}
        same = all(stored.get(k) == settings[k] for k in PACE_KEYS if k in settings)
        if run["status"] not in ("finished", "cancelled") or run["model"] != model or not same:
            continue
        pace = _pace(store, run)
        if pace is not None:
            return Estimate(items, pace, int(run["id"]))
    return Estimate(items)
