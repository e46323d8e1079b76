"""How far two sources of ratings agree: a judge model and people, or one person and another.

Explanations are rated 1 to 5 on several perspectives. For one perspective, :func:`agreement`
takes the two sources' ratings of the same items, in the same order (None where a source gave
none), keeps the items both rated, and gives three measures with bootstrap 95% intervals:

* ``spearman``: Spearman's rank correlation (do both sources order the items alike?);
* ``kappa``: Cohen's kappa with quadratic weights over the labels 1 to 5 (do they give the
  same ratings, beyond chance, a near miss counting less than a wide one?);
* ``bias``: the mean of the second source's rating minus the first's (above zero: the second
  is the more generous).

The intervals are percentile intervals over resamples of the items, or of whole clusters of
items when ``clusters`` is given (one question rated in several runs is one cluster: its
ratings are not independent of each other). A fixed ``seed`` gives the same intervals every
time. :func:`compare` does this for every perspective of two ``{item id: {key: rating}}``
mappings.

>>> from engine.ratings.agreement import agreement
>>> people = [1, 2, 3, 4, 5, None, 2]
>>> judge = [2, 2, 4, 5, 5, 3, 1]
>>> found = agreement(people, judge, resamples=200)
>>> found.n, round(found.spearman, 2), round(found.kappa, 2), round(found.bias, 2)
(6, 0.85, 0.85, 0.33)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

#: The rating labels kappa is computed over.
LABELS = (1, 2, 3, 4, 5)
#: The share of resamples left out at each end of an interval (0.025 each: a 95% interval).
TAIL = 0.025
#: The fewest items for which Spearman's correlation or an interval is given.
MIN_ITEMS = 3


@dataclass(frozen=True)
class Interval:
    """A range of values: a bootstrap interval around a measure."""

    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"low": self.low, "high": self.high}


@dataclass(frozen=True)
class Agreement:
    """How far two sources agree on the ``n`` items both rated. A measure is None where it is
    not defined (no items, fewer than three for Spearman, a source that gave every item the
    same rating for Spearman, both sources giving one and the same rating for kappa, ratings
    other than the labels 1 to 5 for kappa); an interval is None where its measure is, with
    fewer than three items, or with fewer than two resamples where the measure is defined."""

    n: int
    spearman: float | None
    spearman_ci: Interval | None
    kappa: float | None
    kappa_ci: Interval | None
    bias: float | None
    bias_ci: Interval | None

    def as_dict(self) -> dict[str, int | float | dict[str, float] | None]:
        """The measures as plain JSON values (an interval as ``{"low": …, "high": …}``)."""
        found: dict[str, int | float | dict[str, float] | None] = {"n": self.n}
        for name in ("spearman", "kappa", "bias"):
            interval: Interval | None = getattr(self, f"{name}_ci")
            found[name] = getattr(self, name)
            found[f"{name}_ci"] = interval.as_dict() if interval else None
        return found


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _pairs(
    first: Sequence[float | None],
    second: Sequence[float | None],
    clusters: Sequence[Hashable] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ratings of the items both sources rated (None or NaN on either side: left out),
    and each kept item's cluster as a number from 0 (each item its own without clusters)."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first ratings but {len(second)} second ones")
    if clusters is not None and len(clusters) != len(first):
        raise ValueError(f"{len(clusters)} clusters for {len(first)} ratings")
    kept = [i for i in range(len(first)) if not (_missing(first[i]) or _missing(second[i]))]
    x = np.array([first[i] for i in kept], dtype=float)
    y = np.array([second[i] for i in kept], dtype=float)
    if clusters is None:
        return x, y, np.arange(len(kept))
    numbers: dict[Hashable, int] = {}
    codes = [numbers.setdefault(clusters[i], len(numbers)) for i in kept]
    return x, y, np.array(codes, dtype=int)


def resample_weights(clusters: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """How many times each item is drawn in each resample, shape ``(resamples, items)``:
    as many clusters as there are are drawn with replacement, an item counting once each
    time its cluster is drawn (``clusters``: each item's cluster, numbered from 0)."""
    size = int(clusters.max()) + 1 if len(clusters) else 0
    drawn = np.random.default_rng(seed).integers(0, max(size, 1), size=(resamples, size))
    offsets = (np.arange(resamples) * size)[:, None]
    counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * size)
    return counts.reshape(resamples, size)[:, clusters].astype(float)


def _ranks(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's average rank in each weighted sample (an item of weight w counting as w
    copies of it, ties sharing their mean rank), and how many distinct values each has."""
    rows = weights.shape[0]
    distinct, codes = np.unique(values, return_inverse=True)
    places = (np.arange(rows) * len(distinct))[:, None] + codes[None, :]
    counts = np.bincount(places.ravel(), weights.ravel(), minlength=rows * len(distinct))
    counts = counts.reshape(rows, len(distinct))
    below = np.cumsum(counts, axis=1) - counts
    return (below + (counts + 1) / 2)[:, codes], (counts > 0).sum(axis=1)


def spearman_rows(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman's correlation in each weighted sample (one row of ``weights`` each); NaN
    where it is not defined (fewer than three items, or a side with one value only)."""
    rx, x_values = _ranks(x, weights)
    ry, y_values = _ranks(y, weights)
    total = weights.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)[:, None]
    dx = rx - (weights * rx).sum(axis=1, keepdims=True) / safe
    dy = ry - (weights * ry).sum(axis=1, keepdims=True) / safe
    covariance = (weights * dx * dy).sum(axis=1)
    spread = np.sqrt((weights * dx * dx).sum(axis=1) * (weights * dy * dy).sum(axis=1))
    defined = (total >= MIN_ITEMS) & (x_values > 1) & (y_values > 1)
    return np.where(defined, covariance / np.where(defined, spread, 1.0), np.nan)


def _labelled(values: np.ndarray) -> bool:
    return bool(np.isin(values, LABELS).all())


def kappa_rows(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Quadratic-weighted Cohen's kappa over :data:`LABELS` in each weighted sample (``x``
    and ``y`` must be labels); NaN where it is not defined (no disagreement to expect)."""
    k = len(LABELS)
    rows = weights.shape[0]
    pairs = (x.astype(int) - LABELS[0]) * k + (y.astype(int) - LABELS[0])
    places = (np.arange(rows) * k * k)[:, None] + pairs[None, :]
    observed = np.bincount(places.ravel(), weights.ravel(), minlength=rows * k * k)
    observed = observed.reshape(rows, k, k)
    total = observed.sum(axis=(1, 2))
    expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
    expected /= np.where(total > 0, total, 1.0)[:, None, None]
    labels = np.arange(k)
    penalty = (labels[:, None] - labels[None, :]) ** 2 / (k - 1) ** 2
    disagreement = (penalty * observed).sum(axis=(1, 2))
    chance = (penalty * expected).sum(axis=(1, 2))
    defined = chance > 1e-12
    return np.where(defined, 1 - disagreement / np.where(defined, chance, 1.0), np.nan)


def bias_rows(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean of ``y - x`` in each weighted sample (NaN in an empty one)."""
    total = weights.sum(axis=1)
    sums = weights @ (y - x)
    return np.where(total > 0, sums / np.where(total > 0, total, 1.0), np.nan)


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < MIN_ITEMS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def _kappa(x: np.ndarray, y: np.ndarray) -> float | None:
    if not len(x) or not (_labelled(x) and _labelled(y)):
        return None
    if np.isnan(kappa_rows(x, y, np.ones((1, len(x))))[0]):
        return None
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(x, y, labels=list(LABELS), weights="quadratic"))


def _bias(x: np.ndarray, y: np.ndarray) -> float | None:
    return float(np.mean(y - x)) if len(x) else None


def _interval(values: np.ndarray) -> Interval | None:
    """The percentile interval of the resamples' values where the measure is defined."""
    defined = values[~np.isnan(values)]
    if len(defined) < 2:
        return None
    low, high = np.quantile(defined, [TAIL, 1 - TAIL])
    return Interval(float(low), float(high))


def agreement(
    first: Sequence[float | None],
    second: Sequence[float | None],
    *,
    resamples: int = 2000,
    seed: int = 0,
    clusters: Sequence[Hashable] | None = None,
) -> Agreement:
    """How far ``second``'s ratings agree with ``first``'s, item by item (the same order in
    both): items where either rating is None (or NaN) are left out. The intervals come from
    ``resamples`` bootstrap resamples of the items, or of whole clusters (``clusters``: each
    item's cluster, e.g. its question when one question was rated in several runs), drawn
    from ``seed``; resamples where a measure is not defined are left out of its interval."""
    x, y, codes = _pairs(first, second, clusters)
    spearman, kappa, bias = _spearman(x, y), _kappa(x, y), _bias(x, y)
    intervals: dict[str, Interval | None] = {"spearman": None, "kappa": None, "bias": None}
    if len(x) >= MIN_ITEMS and resamples > 0:
        weights = resample_weights(codes, resamples, seed)
        if spearman is not None:
            intervals["spearman"] = _interval(spearman_rows(x, y, weights))
        if kappa is not None:
            intervals["kappa"] = _interval(kappa_rows(x, y, weights))
        intervals["bias"] = _interval(bias_rows(x, y, weights))
    return Agreement(
        n=len(x),
        spearman=spearman,
        spearman_ci=intervals["spearman"],
        kappa=kappa,
        kappa_ci=intervals["kappa"],
        bias=bias,
        bias_ci=intervals["bias"],
    )


_Id = TypeVar("_Id", bound=Hashable)


def compare(
    first: Mapping[_Id, Mapping[str, float | None]],
    second: Mapping[_Id, Mapping[str, float | None]],
    keys: Sequence[str],
    *,
    resamples: int = 2000,
    seed: int = 0,
    clusters: Mapping[_Id, Hashable] | None = None,
) -> dict[str, Agreement]:
    """For each of ``keys`` (the perspectives), :func:`agreement` of ``first``'s ratings and
    ``second``'s (each ``{item id: {key: rating}}``, a missing key a None rating) over the
    item ids both have. ``clusters`` gives each item id its cluster (every shared id must be
    in it); ``resamples`` and ``seed`` are passed on."""
    shared = [item for item in first if item in second]
    groups = [clusters[item] for item in shared] if clusters is not None else None
    return {
        key: agreement(
            [first[item].get(key) for item in shared],
            [second[item].get(key) for item in shared],
            resamples=resamples,
            seed=seed,
            clusters=groups,
        )
        for key in keys
    }
