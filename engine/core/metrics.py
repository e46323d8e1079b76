"""Metrics: what a run's summary says of its answers' scores. A scorer
(:func:`engine.core.scoring.scorer`) names the summary entries it gives, each a :class:`Metric`:
a reducer over the values of one of its keys in the run's answers, and a label. A run's
summary holds every metric of the scorers it applies (:func:`metric_values`) beside the
counts every summary shares (:func:`engine.core.scoring.counts`).

>>> m = Metric("correct", share_of_all(1), "Right (%)")
>>> m.reduce([True, False, True], 4)
50.0
>>> metric_values([], [{"correct": True}], 1)
{}
>>> mean([0.5, None, 1.0]), proportion([True, False, True, True])
(0.75, 0.75)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from engine.types import JSONDict, JSONValue, Row, Scalar, ScoreValue


def numbers(values: Iterable[Scalar | object]) -> list[float]:
    """The values that are numbers (booleans count 1 and 0), Nones and others left out."""
    return [float(v) for v in values if isinstance(v, int | float)]


def mean(values: Iterable[Scalar | object]) -> float | None:
    """The mean of the numeric values (None when there is none)."""
    found = numbers(values)
    return sum(found) / len(found) if found else None


def proportion(values: Iterable[Scalar | object]) -> float | None:
    """The share of true values among the given ones (None when there is none)."""
    found = [bool(v) for v in values if v is not None]
    return sum(found) / len(found) if found else None


def percent_mean(values: Iterable[Scalar | object], digits: int = 2) -> float | None:
    """The mean of the numeric values in percent, rounded (None when there is none)."""
    found = numbers(values)
    return round(100 * sum(found) / len(found), digits) if found else None


#: A metric's reducer: the values of its key in the run's answers that carry it, and the
#: run's number of items (answered or not) → the summary entry.
Reducer: TypeAlias = Callable[[list[ScoreValue], int], JSONValue]
#: A reducer over whole answers (a metric with ``rows``): the values by key of the answers
#: that carry its key, and the run's number of items → the summary entry.
RowReducer: TypeAlias = Callable[[list[Mapping[str, ScoreValue]], int], JSONValue]


def percent(digits: int = 2, empty: float | None = None) -> Reducer:
    """The mean of the numeric values in percent, rounded; ``empty`` when there is none."""

    def reduce(values: list[ScoreValue], n: int) -> JSONValue:
        found = percent_mean(values, digits)
        return empty if found is None else found

    return reduce


def percent_of_mean(digits: int = 2, empty: float | None = None) -> Reducer:
    """100 times the mean of the numeric values, rounded (the mean taken first, as the
    consultation paper's scores are); ``empty`` when there is none."""

    def reduce(values: list[ScoreValue], n: int) -> JSONValue:
        found = mean(values)
        return empty if found is None else round(100 * found, digits)

    return reduce


def rounded_mean(digits: int = 2, empty: float | None = None) -> Reducer:
    """The mean of the numeric values, rounded; ``empty`` when there is none."""

    def reduce(values: list[ScoreValue], n: int) -> JSONValue:
        found = mean(values)
        return empty if found is None else round(found, digits)

    return reduce


def share_of_all(digits: int = 2) -> Reducer:
    """The percent of the run's items whose value is true, rounded: an item not answered
    counts as false (0 for a run of no item)."""

    def reduce(values: list[ScoreValue], n: int) -> JSONValue:
        n = max(n, len(values))
        return round(100 * sum(1 for v in values if v) / n, digits) if n else 0.0

    return reduce


@dataclass(frozen=True)
class Metric:
    """A summary entry a scorer gives: ``reduce`` over the values of its key ``of`` in the
    run's answers (:data:`Reducer`), named ``label`` (the activity's label for its summary
    key when empty: :func:`engine.activities.metric_label`); ``optional`` leaves it out of a
    summary where no answer carries the key, ``valued`` where none carries a value for it
    (not None). ``short`` is its header where columns are narrow (a trials table,
    :func:`engine.core.trials.table_keys`): a metric with one is among the scores a trial set is
    summed up by, in its activity's order. With ``rows`` it reduces whole answers (their
    values by key, those that carry ``of``: :data:`RowReducer`), for an entry made of
    several keys (a ratio of two counts, a table by group)."""

    of: str
    reduce: Reducer | RowReducer = field(default_factory=percent)
    label: str = ""
    optional: bool = False
    valued: bool = False
    short: str = ""
    rows: bool = False


def answer_values(answer: Row) -> dict[str, ScoreValue]:
    """A stored answer's scores with its ``correct`` among them (what metrics reduce)."""
    found = answer.get("scores")
    values: dict[str, ScoreValue] = dict(found) if isinstance(found, dict) else {}
    if answer.get("correct") is not None:
        values["correct"] = answer["correct"]
    return values


class Measures(Protocol):
    """What has metrics: a scorer (:class:`engine.core.scoring.Scorer`)."""

    @property
    def metrics(self) -> Mapping[str, Metric]: ...


def metric_values(
    chosen: Iterable[Measures], rows: Sequence[Mapping[str, ScoreValue]], n: int
) -> JSONDict:
    """Every metric of the ``chosen`` scorers over ``rows`` (an answer's values by key,
    :func:`answer_values`) of a run of ``n`` items: its summary entries, the first scorer
    to name one giving it."""
    out: JSONDict = {}
    for s in chosen:
        for key, m in s.metrics.items():
            if key in out:
                continue
            carrying = [row for row in rows if m.of in row]
            values = [row[m.of] for row in carrying]
            if m.valued and all(v is None for v in values):
                continue
            if values or not m.optional:
                out[key] = m.reduce(carrying if m.rows else values, n)  # type: ignore[arg-type]
    return out
