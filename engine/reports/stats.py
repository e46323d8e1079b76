"""Uncertainty for reports: confidence intervals of one run's score and significance tests
between two runs answering the same items, each a small function named by its method so that
every table can say how its numbers were made (:data:`METHODS`).

* one run's right/wrong score: Wilson's score interval (:func:`wilson_interval`);
* two runs' right/wrong scores on the same items: the difference B − A with Newcombe's
  hybrid score interval for paired proportions (Newcombe 1998, method 10:
  :func:`newcombe_interval`), which is unconditional (it does not hold the number of items
  the runs disagree on fixed) and gives an interval when they never disagree; its p is
  McNemar's exact test (:func:`mcnemar`);
* other scores (ROUGE, the Hamming score, F1): a paired percentile bootstrap of the mean
  difference (:func:`paired_bootstrap`);
* items that come in clusters (a case's repeated trials, the several answers of one
  consultation): a bootstrap that resamples whole clusters (:func:`cluster_bootstrap`);
* several models each compared with the best: Holm's adjustment of their p (:func:`holm`).

How few items is too few: Wilson and Newcombe intervals and McNemar's exact p hold for any
number of items (they are exact or score methods, only wider or larger when items are few).
A bootstrap, though, resamples the items themselves: from fewer than :data:`MIN_ITEMS` it
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
>>> [round(float(x), 4) for x in newcombe_interval(36, 2, 12, 0)]  # Newcombe 1998's example
[0.0569, 0.3404]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from engine.reports.shapes import McNemar, PairedBootstrap, ScoreCell

#: Resamples of every bootstrap (seeded, so a report is the same each time it is made).
RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
#: The fewest items (or cases, for trials) a bootstrap interval or p is given from.
MIN_ITEMS = 10
#: What a table prints where an interval or p would come from fewer than MIN_ITEMS.
TOO_FEW = "too few items"

#: Each method by the name results carry (``test``, ``method``), as a report's notes name it.
METHODS = {
    "wilson": "Wilson's score interval",
    "bootstrap": f"a percentile bootstrap of the mean ({RESAMPLES} resamples, seed {SEED})",
    "newcombe": "Newcombe's hybrid score interval for paired proportions (1998, method 10)",
    "McNemar": "McNemar's exact test (two-sided binomial on the items the runs disagree on)",
    "paired bootstrap": f"a paired percentile bootstrap of the mean difference ({RESAMPLES} "
    f"resamples, seed {SEED})",
    "cluster bootstrap": f"a percentile bootstrap resampling whole cases with all their "
    f"trials or answers ({RESAMPLES} resamples, seed {SEED})",
    "holm": "Holm's step-down adjustment for comparing several models with the best",
}


def enough(n: int) -> bool:
    """Whether ``n`` items are enough for a bootstrap interval or p (:data:`MIN_ITEMS`)."""
    return n >= MIN_ITEMS


def wilson_bounds(
    correct: ArrayLike, n: ArrayLike, level: float = LEVEL
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson's score interval of ``correct`` successes out of ``n`` (fractions 0–1), for
    arrays of counts at once (NaN where ``n`` is 0)."""
    import numpy as np
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    k, m = np.asarray(correct, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / m
        den = 1 + z * z / m
        centre = (p + z * z / (2 * m)) / den
        half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / den
    low = np.where(k <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))  # exactly 0 and 1 at the
    high = np.where(k >= m, 1.0, np.clip(centre + half, 0.0, 1.0))  # ends, not 1e-17 off
    return low, high


def wilson_interval(correct: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of ``correct`` successes out of ``n`` (fractions 0–1);
    None without any item."""
    if n <= 0:
        return None
    low, high = wilson_bounds(correct, n, level)
    return float(low), float(high)


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
    """Scores B − A paired by item (see :func:`paired_difference`): ``test`` names where
    ``p`` comes from and ``method`` where the interval does (keys of :data:`METHODS`)."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    p: float | None
    test: str
    method: str
    too_few: bool
    only_a: int | None
    only_b: int | None


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    right_wrong: bool,
    clusters: Sequence[str] | None = None,
    top: float | None = None,
) -> PairedDifference:
    """B − A over paired items. Scores that are right/wrong (``right_wrong``: each item's
    score ``top`` or 0; by default the highest score given, 1 when none is above 0) get
    Newcombe's interval (:func:`newcombe_interval`) and McNemar's
    exact p, both honest for any number of items; other scores the paired bootstrap's
    interval and p (none below :data:`MIN_ITEMS`). Pairs that come in ``clusters`` (each
    pair's case; some case holding several) get a bootstrap over whole cases instead
    (:func:`cluster_bootstrap`, none below :data:`MIN_ITEMS` cases)."""
    if clusters is not None and len(set(clusters)) < len(clusters):
        boot = cluster_bootstrap(a, b, clusters)
        return {**boot, "test": "cluster bootstrap", "method": "cluster bootstrap",
                "only_a": None, "only_b": None}  # fmt: skip
    if not right_wrong:
        boot = paired_bootstrap(a, b)
        return {**boot, "test": "paired bootstrap", "method": "paired bootstrap",
                "only_a": None, "only_b": None}  # fmt: skip
    n = len(a)
    top = top or max([*a, *b, 0.0]) or 1.0
    pairs = [(x == top and top > 0, y == top and top > 0) for x, y in zip(a, b, strict=True)]
    both = sum(1 for x, y in pairs if x and y)
    only_a = sum(1 for x, y in pairs if x and not y)
    only_b = sum(1 for x, y in pairs if y and not x)
    low = high = None
    if n:
        ci = newcombe_interval(both, only_a, only_b, n - both - only_a - only_b)
        low, high = top * float(ci[0]), top * float(ci[1])
    return {
        "n": n,
        "diff": top * (only_b - only_a) / n if n else None,
        "low": low,
        "high": high,
        "p": mcnemar(only_a, only_b)["p_exact"] if n else None,
        "test": "McNemar",
        "method": "newcombe",
        "too_few": False,
        "only_a": only_a,
        "only_b": only_b,
    }


def newcombe_interval(
    both: ArrayLike, only_a: ArrayLike, only_b: ArrayLike, neither: ArrayLike, level: float = LEVEL
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Newcombe's hybrid score interval (Stat Med 1998;17:2635–50, method 10) of the
    difference B − A of two paired shares, from the items right in both runs, in A only, in
    B only and in neither (arrays of counts at once; fractions of the items, NaN for none).

    Each run's share gets its Wilson interval (:func:`wilson_bounds`); the two distances
    are joined as the square root of a sum of squares, corrected by the correlation φ of
    the runs' right/wrong (0 where a margin is empty). Unlike an interval of the disagreeing
    items' split, it does not hold their number fixed, and it is an interval when the runs
    never disagree."""
    import numpy as np

    a, b, c, d = (np.asarray(x, dtype=float) for x in (both, only_a, only_b, neither))
    n = a + b + c + d
    with np.errstate(divide="ignore", invalid="ignore"):
        share_a, share_b = (a + b) / n, (a + c) / n
        low_a, high_a = wilson_bounds(a + b, n, level)
        low_b, high_b = wilson_bounds(a + c, n, level)
        margins = (a + b) * (c + d) * (a + c) * (b + d)
        phi = np.where(margins > 0, (a * d - b * c) / np.sqrt(np.where(margins > 0, margins, 1)), 0)
        down_b, up_a = share_b - low_b, high_a - share_a
        up_b, down_a = high_b - share_b, share_a - low_a
        below = np.sqrt(np.maximum(0.0, down_b**2 - 2 * phi * down_b * up_a + up_a**2))
        above = np.sqrt(np.maximum(0.0, up_b**2 - 2 * phi * up_b * down_a + down_a**2))
    diff = share_b - share_a
    return diff - below, diff + above


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``pvalues`` (one per comparison; None kept as None):
    the k-th smallest times the comparisons left, never below an earlier one, at most 1.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]
    """
    found = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out = list(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(found):
        running = max(running, min(1.0, (len(found) - rank) * p))
        out[i] = round(running, 12)
    return out


def cluster_means(
    values: Sequence[float], clusters: Sequence[str], resamples: int = RESAMPLES, seed: int = SEED
) -> NDArray[np.float64] | None:
    """The means of ``values`` over ``resamples`` bootstrap samples of whole clusters (each
    value's cluster in ``clusters``: a case, with all its trials; clusters numbered as first
    seen), as a numpy array; None for fewer than two clusters."""
    import numpy as np

    codes = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    index = np.array([codes[c] for c in clusters], dtype=int)
    if len(codes) < 2:
        return None
    data = np.asarray(values, dtype=float)
    sums = np.bincount(index, weights=data, minlength=len(codes))
    counts = np.bincount(index, minlength=len(codes)).astype(float)
    picks = np.random.default_rng(seed).integers(0, len(codes), size=(resamples, len(codes)))
    return sums[picks].sum(axis=1) / counts[picks].sum(axis=1)


def cluster_bootstrap(
    a: Sequence[float], b: Sequence[float], clusters: Sequence[str], level: float = LEVEL
) -> PairedBootstrap:
    """The mean difference B − A of pairs that come in ``clusters`` (each pair's case), with
    the percentile interval and two-sided p of a bootstrap that resamples whole clusters;
    none from fewer than :data:`MIN_ITEMS` clusters. When every difference is the same
    there is no interval, and ``p`` is the exact sign test's over the clusters."""
    import numpy as np

    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    out, done = _bootstrap_start(diffs, len(set(clusters)))
    if done:
        return out
    means = cluster_means(diffs, clusters)
    if means is not None:
        out["low"], out["high"], out["p"] = _percentile_test(means, level)
    return out


def _bootstrap_start(diffs: NDArray[np.float64], units: int) -> tuple[PairedBootstrap, bool]:
    """What a paired bootstrap over ``units`` resampled units (items, or clusters of them)
    says before it resamples, and whether that is all: nothing from no pair, the mean
    difference alone from fewer than :data:`MIN_ITEMS` units, and, when every difference is
    the same, no interval and the exact sign test's p over the units (1 when none differs)."""
    import numpy as np

    out: PairedBootstrap = {"n": int(diffs.size), "diff": None, "low": None, "high": None,
                            "p": None, "too_few": not enough(units)}  # fmt: skip
    if diffs.size == 0:
        return out, True
    out["diff"] = float(diffs.mean())
    if out["too_few"]:
        return out, True
    if np.ptp(diffs) == 0:
        out["p"] = 1.0 if out["diff"] == 0 else min(1.0, 2 * 0.5**units)
        return out, True
    return out, False


def _percentile_test(means: NDArray[np.float64], level: float) -> tuple[float, float, float]:
    """``low``, ``high`` and ``p`` of resampled mean differences: the percentile interval
    and twice the share on the smaller side of zero."""
    import numpy as np

    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    p = 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    return float(low), float(high), min(1.0, p)


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
    out, done = _bootstrap_start(diffs, int(diffs.size))
    if done:
        return out
    out["low"], out["high"], out["p"] = _percentile_test(_resampled_means(diffs, seed), level)
    return out
