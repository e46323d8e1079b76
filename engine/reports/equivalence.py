"""Is one model as good as another on these items? A paired equivalence test with its
power, each a small function (shares and differences in fractions of the items: a margin of
5 points is 0.05), so that "the difference is not significant" is never read as "they are
the same".

Two runs' right/wrong answers on the same n items form a table: b items right in A only, c
in B only, the rest right in both or in neither. The difference is d = (c − b) / n, B's
share right minus A's.

* **Equivalent**: two one-sided tests at 5% (TOST, Schuirmann 1987) reject both d ≤ −margin
  and d ≥ +margin. Each is Tango's score test for paired proportions (Stat Med
  1998;17:891–908, written for this very question; :func:`tango_z`), which keeps its size
  near 5% where the disagreements are few and nearly all one way — there the
  interval-inclusion form with Newcombe's 90% interval called up to 19% of models
  equivalent whose true difference was the margin (60 items, 5.2% of them disagreed on;
  11–12% at 100 items), and even his 95% interval about 10%.
* **Worse**: not equivalent, and B significantly below A: Newcombe's 95% interval of d
  (:func:`engine.reports.stats.newcombe_interval`, the Δ a comparison shows) lies wholly
  below 0. A model worse by less than the margin, and shown to be, is *equivalent*: the
  margin is the difference the reader has said does not matter.
* **Too few items**: neither of the above, and fewer items than would settle it
  (:func:`items_to_settle`).
* **Not equivalent**: otherwise — enough items to show equivalence had the models been
  alike, and they did not: a difference near or past the margin (or B significantly better).

Power comes from the share ψ of items the runs disagree on (Connor 1987, the sample size of
McNemar's test): over n items a two-sided test at 5% detects with 80% power a difference δ
that solves √n·δ = z₀.₉₇₅·√ψ + z₀.₈·√(ψ − δ²) (:func:`detectable_difference`). The items that
show equivalence within a margin m with 80% power when the models are truly alike are
(z₀.₉₅ + z₀.₉)²·ψ / m², and never fewer than the items with no disagreement at all that
would show it, z₀.₉₅²·(1 − m) / m (52 at 5 points). Both are normal approximations, a guide
to how many items to run.

>>> verdict(100, 3, 2, 95, margin=0.05)["verdict"]
'equivalent'
>>> verdict(10, 4, 1, 15, margin=0.05)["verdict"]
'too few items'
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypedDict

from engine.reports.stats import newcombe_interval

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

#: The default margin, in points of accuracy: a difference smaller than it does not matter.
MARGIN = 5.0
#: Each one-sided test's level.
ALPHA = 0.05
#: The power the detectable difference and the items to settle it are given at.
POWER = 0.80
EQUIVALENT, NOT_EQUIVALENT, WORSE, TOO_FEW = (
    "equivalent",
    "not equivalent",
    "worse",
    "too few items",
)
#: The verdicts, as ``runs compare --json`` gives them (``verdict``).
VERDICTS = (EQUIVALENT, NOT_EQUIVALENT, WORSE, TOO_FEW)
#: How the verdicts are made, for a report's notes.
METHOD = (
    "equivalent: a paired equivalence test (two one-sided tests at 5%, each Tango's score "
    "test for paired proportions, 1998) shows the difference inside ± the margin; worse: not "
    "equivalent and Newcombe's 95% interval below 0; too few items: fewer than would show "
    "equivalence with 80% power had the models been alike, from the share of items they "
    "disagree on (Connor 1987); not equivalent: enough items, still not shown inside the margin"
)


class Equivalence(TypedDict):
    """The equivalence test of B against A (see :func:`verdict`), in fractions."""

    verdict: str
    margin: float
    n: int
    p: float | None
    discordant: float
    detectable: float | None
    needed: int


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def tango_z(
    only_a: ArrayLike, only_b: ArrayLike, n: ArrayLike, theta: float
) -> NDArray[np.float64]:
    """Tango's score statistic (1998) of the paired difference d = (only_b − only_a) / n
    against a true difference ``theta``: (only_b − only_a − n·θ) / √(n·(2q + θ(1 − θ))),
    q the restricted maximum-likelihood share of A-only items given d = θ. Arrays at once."""
    import numpy as np

    b, c, m = (np.asarray(x, dtype=float) for x in (only_a, only_b, n))
    quad_a = 2 * m
    quad_b = -c - b + (2 * m - c + b) * theta
    quad_c = -b * theta * (1 - theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (np.sqrt(quad_b**2 - 4 * quad_a * quad_c) - quad_b) / (2 * quad_a)
        return (c - b - m * theta) / np.sqrt(m * (2 * q + theta * (1 - theta)))


def equivalence_p(
    only_a: ArrayLike, only_b: ArrayLike, n: ArrayLike, margin: float
) -> NDArray[np.float64]:
    """The p of the two one-sided tests (the larger of the two): below :data:`ALPHA`, the
    difference is shown inside ± ``margin``."""
    import numpy as np
    from scipy.stats import norm

    above = norm.sf(tango_z(only_a, only_b, n, -margin))  # H0: d ≤ −margin
    below = norm.cdf(tango_z(only_a, only_b, n, margin))  # H0: d ≥ +margin
    return np.maximum(above, below)


def verdicts(
    both: ArrayLike, only_a: ArrayLike, only_b: ArrayLike, neither: ArrayLike, margin: float
) -> NDArray[np.str_]:
    """The verdict on B against A (see the module) for arrays of tables at once."""
    import numpy as np

    a, b, c, d = (np.asarray(x, dtype=float) for x in (both, only_a, only_b, neither))
    n = a + b + c + d
    with np.errstate(invalid="ignore"):
        equivalent = equivalence_p(b, c, n, margin) < ALPHA
        _, high = newcombe_interval(a, b, c, d)
        worse = high < 0
        needed = np.maximum(_settle_factor() * (b + c) / np.where(n > 0, n, 1) / margin**2,
                            _silent_items(margin))  # fmt: skip
    out = np.where(np.ceil(needed) > n, TOO_FEW, NOT_EQUIVALENT)
    out = np.where(worse, WORSE, out)
    return np.where(equivalent & (n > 0), EQUIVALENT, out)


def _settle_factor() -> float:
    return (_z(1 - ALPHA) + _z(1 - (1 - POWER) / 2)) ** 2


def _silent_items(margin: float) -> float:
    """The items that show equivalence when the runs never disagree (Tango's test)."""
    return _z(1 - ALPHA) ** 2 * (1 - margin) / margin


def items_to_settle(discordant: float, margin: float) -> int:
    """The items that show equivalence within ``margin`` with :data:`POWER` when the models
    are truly alike and disagree on a share ``discordant`` of them; never fewer than the
    items that show it when they never disagree."""
    found = max(_settle_factor() * discordant / margin**2, _silent_items(margin))
    return math.ceil(found - 1e-9)


def detectable_difference(n: int, discordant: float) -> float | None:
    """The smallest difference a two-sided test at 5% detects with :data:`POWER` over ``n``
    items the runs disagree on a share ``discordant`` of (Connor 1987); None when even a
    difference as large as the disagreement (every disagreement one way) would not be."""
    from scipy.optimize import brentq

    z_a, z_b = _z(1 - ALPHA / 2), _z(POWER)
    if n <= 0 or discordant <= 0:
        return None

    def gap(delta: float) -> float:
        rest = math.sqrt(max(0.0, discordant - delta * delta))
        return math.sqrt(n) * delta - z_a * math.sqrt(discordant) - z_b * rest

    if gap(discordant) < 0:
        return None
    return float(brentq(gap, 0.0, discordant))


def verdict(both: int, only_a: int, only_b: int, neither: int, margin: float) -> Equivalence:
    """B against A on one table of paired right/wrong items: the verdict, the equivalence
    test's p, the share of items they disagree on, the difference these items would detect
    and the items that would settle equivalence (see the module)."""
    n = both + only_a + only_b + neither
    discordant = (only_a + only_b) / n if n else 0.0
    p = float(equivalence_p(only_a, only_b, n, margin)) if n else None
    return {
        "verdict": str(verdicts(both, only_a, only_b, neither, margin)),
        "margin": margin,
        "n": n,
        "p": p,
        "discordant": discordant,
        "detectable": detectable_difference(n, discordant),
        "needed": items_to_settle(discordant, margin),
    }
