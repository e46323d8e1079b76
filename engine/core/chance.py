"""Where chance lies: the scores of uniform guessing on a data set, computed exactly, and
whether a model's right answers are above it.

*Uniform guessing* is: for a question with one right option among k, one of the k options,
each with probability 1/k; for a question with any number of right options (FrenchMedMCQA's
one to five of five), one of the 2^k − 1 non-empty subsets of its k options, each with
probability 1/(2^k − 1) (every question has at least one right option, and a reply choosing
none is never right). The expected scores are exact means over those choices, averaged over
the questions: accuracy Σ (1/k) / n; the exact match ratio 1/(2^k − 1) per question; the
Hamming score (``|guess ∩ gold| / |guess ∪ gold|``) its mean over the subsets.

>>> single_answer_chance([{"options": ["a", "b", "c", "d", "e"]}])
20.0
>>> multi_answer_chance([{"a"}], "abcde")
(20.0, 3.23)
>>> round(above_chance(16, 30, 0.2), 4)
0.0001
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import combinations

#: A model is above chance when a one-sided exact binomial test rejects chance at this level.
LEVEL = 0.05


def single_answer_chance(items: Iterable[Mapping[str, object]]) -> float | None:
    """Expected accuracy (percent, two decimals) of uniform guessing over ``items``, each
    with its ``options`` (a list or a letter → text mapping); None without an item."""
    sizes = [len(o) for i in items if isinstance(o := i.get("options"), Sequence | Mapping) and o]
    if not sizes:
        return None
    return round(100 * sum(1 / k for k in sizes) / len(sizes), 2)


@lru_cache(maxsize=64)
def _subsets(letters: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(c) for n in range(1, len(letters) + 1) for c in combinations(letters, n))


def multi_answer_chance(
    golds: Iterable[Collection[str]], letters: str
) -> tuple[float, float] | None:
    """Expected Hamming score and exact match ratio, in that order (percent, two decimals),
    of uniformly guessing a non-empty subset of ``letters`` for each question, ``golds``
    being its right options; None without a question. The activity names them."""
    guesses = _subsets(letters)
    hamming = emr = 0.0
    n = 0
    for gold in golds:
        g = frozenset(gold)
        hamming += sum(len(s & g) / len(s | g) for s in guesses) / len(guesses)
        emr += 1 / len(guesses)
        n += 1
    if not n:
        return None
    return round(100 * hamming / n, 2), round(100 * emr / n, 2)


def above_chance(right: int, n: int, chance: float) -> float:
    """The one-sided exact binomial p of ``right`` of ``n`` right answers when each is right
    with probability ``chance`` (a share, 0–1): small when the model is above chance."""
    from scipy.stats import binomtest

    return float(binomtest(right, n, chance, alternative="greater").pvalue)
