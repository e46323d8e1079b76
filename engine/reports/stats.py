"""Uncertainty for reports: confidence intervals of one run's score and significance tests
between two runs answering the same items.

How few items is too few: Wilson intervals, McNemar's exact p and the exact interval of a
paired right/wrong difference hold for any number of items (they are exact or score
methods, only wider or larger when items are few). A
bootstrap, though, resamples the items themselves: from fewer than :data:`MIN_ITEMS` it
has too few distinct resamples to give an honest interval or p (4 items that all moved by
20 points gave "20.0 [20.0, 20.0], p 0"), so below it :func:`bootstrap_interval` and
:func:`paired_bootstrap` give none and say :data:`TOO_FEW` (``too_few``), and every
table prints that instead. When every paired difference is the same the bootstrap has no
spread to show: no interval, and the exact sign test's p.

>>> lo, hi = wilson_interval(2, 4)
>>> round(lo, 3), round(hi, 3)
(0.15, 0.85)
>>> mcnemar(1, 5)["p_exact"]
0.21875
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from engine.reports.shapes import ScoreCell

#: Resamples of every bootstrap (seeded, so a report is the same each time it is made).
RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
#: The fewest items (or cases, for trials) a bootstrap interval or p is given from.
MIN_ITEMS = 10
#: What a table prints where an interval or p would come from fewer than MIN_ITEMS.
TOO_FEW = "too few items"


def enough(n: int) -> bool:
    """Whether ``n`` items are enough for a bootstrap interval or p (:data:`MIN_ITEMS`)."""
    return n >= MIN_ITEMS


class McNemar(TypedDict):
    """McNemar's test of two runs (see :func:`mcnemar`)."""

    only_a: int
    only_b: int
    p_exact: float
    chi2: float | None
    p_chi2: float | None


class PairedBootstrap(TypedDict):
    """The paired bootstrap of two runs' scores (see :func:`paired_bootstrap`);
    ``too_few``: fewer than :data:`MIN_ITEMS` pairs, so no interval nor p."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    p: float | None
    too_few: bool


class ReliabilityBin(TypedDict):
    """One confidence bin of a reliability diagram (:func:`engine.exam.reliability.reliability_bins`)."""

    low: float
    high: float
    n: int
    confidence: float
    accuracy: float


def wilson_interval(correct: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of ``correct`` successes out of ``n`` (fractions 0–1);
    None without any item."""
    if n <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(int(correct), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def bootstrap_interval(
    values: Sequence[float], level: float = LEVEL, seed: int = SEED
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the mean of ``values``; None for fewer than
    :data:`MIN_ITEMS` values (too few to resample honestly) and when they are all equal
    (a bootstrap shows no spread then, which is not certainty)."""
    if not enough(len(values)):
        return None
    import numpy as np

    data = np.asarray(values, dtype=float)
    if np.ptp(data) == 0:
        return None
    means = _resampled_means(data, seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def mean_cell(values: Sequence[float]) -> ScoreCell | None:
    """The mean of ``values`` as a table cell with its bootstrap interval, or marked
    ``too_few`` (fewer than :data:`MIN_ITEMS`); None without any value."""
    if not values:
        return None
    cell: ScoreCell = {"value": math.fsum(values) / len(values)}
    if not enough(len(values)):
        return {**cell, "too_few": True}
    ci = bootstrap_interval(values)
    return {**cell, "low": ci[0], "high": ci[1]} if ci else cell


def share_cell(right: int, n: int) -> ScoreCell | None:
    """``right`` of ``n`` in percent with its Wilson interval (any ``n``: see the module's
    note); None for no item."""
    ci = wilson_interval(right, n)
    if ci is None:
        return None
    return {"value": 100 * right / n, "low": 100 * ci[0], "high": 100 * ci[1]}


class PairedDifference(TypedDict):
    """Scores B − A paired by item (see :func:`paired_difference`)."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    p: float | None
    test: str
    too_few: bool
    only_a: int | None
    only_b: int | None


def paired_difference(
    a: Sequence[float], b: Sequence[float], right_wrong: bool
) -> PairedDifference:
    """B − A over paired items. Scores that are right/wrong (``right_wrong``: each item's
    score the top or 0) get McNemar's exact test and the interval that goes with it
    (:func:`discordant_interval`), both honest for any number of items; other scores the
    paired bootstrap's interval and p (none below :data:`MIN_ITEMS`)."""
    if not right_wrong:
        boot = paired_bootstrap(a, b)
        return {**boot, "test": "paired bootstrap", "only_a": None, "only_b": None}
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x > y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y > x)
    n = len(a)
    top = max([*a, *b, 0.0])
    diff = top * (only_b - only_a) / n if n else None
    ci = discordant_interval(only_a, only_b, n)
    return {
        "n": n,
        "diff": diff,
        "low": top * ci[0] if ci else None,
        "high": top * ci[1] if ci else None,
        "p": mcnemar(only_a, only_b)["p_exact"] if n else None,
        "test": "McNemar",
        "too_few": False,
        "only_a": only_a,
        "only_b": only_b,
    }


def discordant_interval(
    only_a: int, only_b: int, n: int, level: float = LEVEL
) -> tuple[float, float] | None:
    """The 95% interval of B − A (a fraction of ``n`` paired right/wrong items) that goes
    with McNemar's exact test: the exact (Clopper–Pearson) interval of the share of the
    disagreeing items that B got right, times the share that disagree. None when no item
    disagrees (nothing to resample: the difference is 0 on these items)."""
    from scipy.stats import binomtest

    d = only_a + only_b
    if d == 0 or n <= 0:
        return None
    ci = binomtest(only_b, d).proportion_ci(confidence_level=level, method="exact")
    return d / n * (2 * ci.low - 1), d / n * (2 * ci.high - 1)


def _resampled_means(data: NDArray[np.float64], seed: int) -> NDArray[np.float64]:
    import numpy as np
    from scipy.stats import bootstrap

    res = bootstrap(
        (data,),
        lambda x, axis: x.mean(axis=axis),
        n_resamples=RESAMPLES,
        vectorized=True,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return res.bootstrap_distribution


def mcnemar(only_a: int, only_b: int) -> McNemar:
    """McNemar's test on paired right/wrong outcomes: ``only_a`` items right in run A only,
    ``only_b`` right in run B only. ``p_exact`` is the two-sided exact (binomial) p-value,
    ``chi2`` and ``p_chi2`` the χ² statistic with continuity correction and its p-value
    (None when the runs never disagree, and then ``p_exact`` is 1)."""
    from scipy.stats import binomtest, chi2

    discordant = only_a + only_b
    out: McNemar = {
        "only_a": only_a,
        "only_b": only_b,
        "p_exact": 1.0,
        "chi2": None,
        "p_chi2": None,
    }
    if discordant == 0:
        return out
    out["p_exact"] = float(binomtest(only_a, discordant, 0.5).pvalue)
    stat = (abs(only_a - only_b) - 1) ** 2 / discordant
    out["chi2"] = float(stat)
    out["p_chi2"] = float(chi2.sf(stat, 1))
    return out


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], level: float = LEVEL, seed: int = SEED
) -> PairedBootstrap:
    """The mean difference B − A of paired per-item scores with a bootstrap interval and a
    two-sided p-value (how often the resampled difference falls on the other side of zero,
    doubled). ``low``, ``high`` and ``p`` are None for fewer than :data:`MIN_ITEMS` items
    (``too_few``). When every difference is the same there is no interval, and ``p`` is the
    exact sign test's (1 when none differs)."""
    import numpy as np

    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    out: PairedBootstrap = {
        "n": int(diffs.size),
        "diff": None,
        "low": None,
        "high": None,
        "p": None,
        "too_few": not enough(int(diffs.size)),
    }
    if diffs.size == 0:
        return out
    out["diff"] = float(diffs.mean())
    if out["too_few"]:
        return out
    if np.ptp(diffs) == 0:
        out["p"] = 1.0 if out["diff"] == 0 else min(1.0, 2 * 0.5 ** int(diffs.size))
        return out
    means = _resampled_means(diffs, seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    p = 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    out.update(low=float(low), high=float(high), p=min(1.0, p))
    return out
