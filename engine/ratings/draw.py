"""The answers of a run drawn at random for people to rate, so that a judge's ratings can be
corrected by theirs (:mod:`engine.reports.ppi`): a correction holds only when the answers
people rated are a random sample of those the judge rated, not the ones a rater chose.

The draw is a fixed function of the run and its answers' item keys (each key's place in an
order hashed from the run's id; the first :func:`draw_size` of them), so every rater and
every session of any rater is offered the same answers, and a report knows them again
without anything stored beside the ratings.

>>> draw_size(20), draw_size(600), draw_size(1000)
(20, 30, 50)
>>> drawn(7, ["a", "b", "c"], size=2) == drawn(7, ["c", "b", "a"], size=2)
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

#: The share of a run's answers drawn, and the fewest drawn (all, when a run has fewer).
SHARE = 0.05
FEWEST = 30


def draw_size(answers: int) -> int:
    """How many of ``answers`` are drawn: :data:`SHARE` of them, at least :data:`FEWEST`
    (30 people's ratings already narrow a judge's interval by about a fifth)."""
    return min(answers, max(FEWEST, math.ceil(SHARE * answers)))


def _place(run_id: int, key: str) -> str:
    return hashlib.sha256(f"medexam-draw/{run_id}/{key}".encode()).hexdigest()


def drawn(run_id: int, keys: Iterable[str], size: int | None = None) -> set[str]:
    """The item keys of run ``run_id`` drawn for people to rate among ``keys`` (its answers
    with an explanation): ``size`` of them, :func:`draw_size` by default."""
    found = sorted(set(keys), key=lambda k: _place(run_id, k))
    return set(found[: draw_size(len(found)) if size is None else size])
