"""A judge's mean corrected by a few people's ratings: prediction-powered inference
(Angelopoulos et al. 2023, "Prediction-powered inference"), with the power tuning of PPI++
(Angelopoulos, Duchi and Zrnic 2023).

People rate ``n`` answers (``y``, with the judge's ratings ``f`` of the same answers); the
judge alone rates ``N`` more (``f_more``). The corrected mean is

    θ = λ · mean(f_more) + mean(y − λ · f)

with variance ``λ² Var(f_more) / N + Var(y − λ f) / n`` and a normal 95% interval. λ = 0 is
the people-only mean; λ = 1 the plain prediction-powered mean; PPI++ picks the λ of least
variance, ``Cov(y, f) / ((1 + n/N) Var(f))`` over all judge ratings, clipped to [0, 1]. The
interval holds whatever the judge's bias (the people's ratings correct it) and is narrower
than the people-only one as far as the judge agrees with people.

>>> found = ppi_mean([4, 2, 5, 3], [5, 3, 5, 4], [4, 5, 3, 5, 4, 2], lam=1.0)
>>> round(found.mean, 4), round(found.se, 4)
(3.0833, 0.5388)
>>> round(found.people_mean, 2), found.n, found.n_judge_only
(3.5, 4, 6)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
#: The method as a report's notes name it.
METHOD = (
    "prediction-powered inference for a judge's mean corrected by people's ratings "
    "(Angelopoulos et al. 2023; PPI++'s tuned λ), with a normal 95% interval"
)
#: The fewest people's ratings an interval is given from (a variance needs two).
MIN_LABELLED = 2


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered mean: ``mean`` with its standard error ``se`` and interval
    (``low``, ``high``; None from fewer than :data:`MIN_LABELLED` people's ratings), the
    ``lam`` it used, ``n`` people's ratings and ``n_judge_only`` answers the judge alone
    rated; beside it the judge's raw mean over all its ratings and the people-only mean
    with its own interval, as a reader compares them."""

    mean: float | None
    se: float | None
    low: float | None
    high: float | None
    lam: float
    n: int
    n_judge_only: int
    judge_mean: float | None
    people_mean: float | None
    people_low: float | None
    people_high: float | None
    #: The parts of the variance: ``λ² Var(f_more)`` and ``Var(y − λ f)``.
    judge_var: float
    residual_var: float
    #: ``Var(y)``: people's ratings' own variance.
    people_var: float

    def half_width(self) -> float | None:
        return None if self.se is None else _z(LEVEL) * self.se


def _z(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def _var(values: np.ndarray) -> float:
    return float(np.var(values, ddof=1)) if len(values) > 1 else 0.0


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_more: np.ndarray) -> float:
    """PPI++'s λ of least variance for a mean, clipped to [0, 1] (0 when the judge's
    ratings do not vary or too few answers are rated)."""
    n, big_n = len(y), len(f_more)
    every = np.concatenate([f, f_more])
    spread = _var(every)
    if n < MIN_LABELLED or big_n == 0 or spread == 0:
        return 0.0
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    return float(np.clip(cov / ((1 + n / big_n) * spread), 0.0, 1.0))


def ppi_mean(
    y: Sequence[float],
    f: Sequence[float],
    f_more: Sequence[float],
    *,
    lam: float | None = None,
    level: float = LEVEL,
) -> PPIMean:
    """The prediction-powered mean of people's ratings ``y`` (with the judge's ``f`` of the
    same answers, in the same order) and the judge's ratings ``f_more`` of answers people
    did not rate; ``lam`` fixed, or PPI++'s tuned one when None."""
    ys, fs, more = (np.asarray(v, dtype=float) for v in (y, f, f_more))
    if len(ys) != len(fs):
        raise ValueError(f"{len(ys)} people's ratings but {len(fs)} of the judge's")
    n, big_n = len(ys), len(more)
    every = np.concatenate([fs, more])
    judge_mean = float(every.mean()) if len(every) else None
    weight = tuned_lambda(ys, fs, more) if lam is None else float(lam)
    if big_n == 0:
        weight = 0.0
    z = _z(level)
    people_mean = float(ys.mean()) if n else None
    people_se = math.sqrt(_var(ys) / n) if n >= MIN_LABELLED else None
    if n == 0:
        mean = None
    else:
        mean = (weight * float(more.mean()) if big_n else 0.0) + float((ys - weight * fs).mean())
    judge_var = weight**2 * _var(more) if big_n else 0.0
    residual_var = _var(ys - weight * fs)
    people_low, people_high = (
        (people_mean - z * people_se, people_mean + z * people_se)
        if people_se is not None and people_mean is not None
        else (None, None)
    )
    se = math.sqrt(judge_var / max(big_n, 1) + residual_var / n) if n >= MIN_LABELLED else None
    return PPIMean(
        mean=mean,
        se=se,
        low=None if se is None or mean is None else mean - z * se,
        high=None if se is None or mean is None else mean + z * se,
        lam=weight,
        n=n,
        n_judge_only=big_n,
        judge_mean=judge_mean,
        people_mean=people_mean,
        people_low=people_low,
        people_high=people_high,
        judge_var=judge_var,
        residual_var=residual_var,
        people_var=_var(ys),
    )


def more_ratings(found: PPIMean, half_width: float, level: float = LEVEL) -> int | None:
    """How many more answers people must rate (each taken from those the judge alone
    rated) for :func:`ppi_mean`'s interval to be ± ``half_width``, by its variance formula
    with today's λ and variances (all of them rated: the people-only mean); 0 when it already is,
    None when no number of the answers there are would do (or fewer than two are rated yet: no
    variance to go by)."""
    if found.se is None:
        return None
    z = _z(level)
    if z * found.se <= half_width:
        return 0
    if not found.n_judge_only:
        return None
    m = np.arange(1, found.n_judge_only + 1, dtype=float)
    left = found.n_judge_only - m
    judge = found.judge_var / np.maximum(left, 1.0)
    widths = z * np.sqrt(judge + found.residual_var / (found.n + m))
    widths[-1] = z * math.sqrt(found.people_var / (found.n + m[-1]))  # all rated: people only
    enough = np.nonzero(widths <= half_width)[0]
    return int(m[enough[0]]) if len(enough) else None
