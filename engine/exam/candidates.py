"""Where a student, or a model, stands among the real candidates who answered the same
questions.

Some data sets say how people did on each question: ExplainCPE's test questions carry
"本题共被作答68次 正确率75%" (answered 68 times, 75% right) in ``analyse``. Import keeps that as
the item's ``candidates`` (``{"n": 68, "right": 0.75}``, :func:`candidates_of`); a data set
may also give that object itself.

From those per-question rates a Rasch model (one-parameter logistic item response model)
places anyone who answered some of the questions among the candidates:

* the candidates' abilities are taken as normal with mean 0 and a standard deviation of
  :data:`CANDIDATE_SD` logits (the rates of single questions cannot tell how widely the
  candidates differ, so this is an assumption, said wherever a standing is shown);
* each question's difficulty ``b`` is the one whose rate over that population is the
  candidates' rate (:func:`calibrate`), with its standard error from the number of answers;
* the answerer's ability has the candidates' distribution as its prior and their right and
  wrong answers as its likelihood (each question's ``b`` uncertain as estimated); their
  standing is the share of candidates below that ability, given by the posterior median
  with the 95% interval of its 2.5% and 97.5% quantiles.

>>> abs(round(calibrate(0.5, 100)[0], 6))   # a question half the candidates got right: b = 0
0.0
>>> s = standing([(Rate(40, 0.6), True)] * 20)
>>> s.percentile > 90 and s.high > 99          # every question right: at the top
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from engine.reports.layouts import RunData
    from engine.reports.shapes import Cell, ScoreCell, Table
    from engine.types import JSONDict

#: The assumed spread of the candidates' abilities, in logits (see the module).
CANDIDATE_SD = 1.0
#: How the standing's interval is read from the posterior.
LEVEL = 0.95
#: Difficulties are looked for within ± this many logits.
_B_RANGE = 40.0

_ANALYSE = re.compile(r"被作答\s*(\d+)\s*次\D{0,6}?正确率\s*(\d+(?:\.\d+)?)\s*%")

#: How a standing is explained beside it (reports, a block's summary).
ASSUMPTION = (
    "a Rasch model of the questions' rates; the candidates' abilities assumed normal, "
    f"spread {CANDIDATE_SD:g} logit"
)


@dataclass(frozen=True)
class Rate:
    """How the candidates did on one question: ``n`` answers, ``right`` the share right."""

    n: int
    right: float


def parse_analyse(text: str) -> Rate | None:
    """The candidates' rate an ExplainCPE ``analyse`` text gives ("本题共被作答68次 正确率75%"),
    or None."""
    found = _ANALYSE.search(text or "")
    if not found:
        return None
    n, percent = int(found.group(1)), float(found.group(2))
    if n < 1 or not 0 <= percent <= 100:
        return None
    return Rate(n, percent / 100)


def checked(value: Any) -> JSONDict:
    """A record's own ``candidates`` object checked (``{"n": answers ≥ 1, "right": share
    0–1}``); raises ValueError with the reason."""
    if not isinstance(value, dict):
        raise ValueError("'candidates' must be an object with 'n' and 'right'")
    n, right = value.get("n"), value.get("right")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("'candidates.n' must be a whole number of answers, at least 1")
    if isinstance(right, bool) or not isinstance(right, int | float) or not 0 <= right <= 1:
        raise ValueError("'candidates.right' must be the share right, between 0 and 1")
    return {"n": n, "right": float(right)}


def candidates_of(item: JSONDict) -> Rate | None:
    """How the candidates did on ``item``: its stored ``candidates``, else what its
    ``analyse`` says (a data set imported before they were kept); None without either."""
    found = item.get("candidates")
    if isinstance(found, dict):
        try:
            data = checked(found)
        except ValueError:
            return None
        return Rate(int(data["n"]), float(data["right"]))
    return parse_analyse(str(item.get("analyse") or ""))


@cache
def _nodes() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Hermite nodes and weights over a standard normal (61 of them)."""
    import numpy as np

    nodes, weights = np.polynomial.hermite_e.hermegauss(61)
    return nodes, weights / weights.sum()


def _logistic(x: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    return 0.5 * (1 + np.tanh(x / 2))


def calibrate_all(
    right: Sequence[float], n: Sequence[int], sd: float = CANDIDATE_SD
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each question's difficulty ``b`` (logits) whose rate among candidates of ability
    N(0, ``sd``) is its ``right`` (a rate of 0 or 1 moved half an answer inwards), and its
    standard error from its ``n`` answers (the binomial one of the rate, through the slope
    of the rate in ``b``)."""
    import numpy as np

    answers = np.asarray(n, dtype=float)
    p = np.clip(np.asarray(right, dtype=float), 0.5 / answers, 1 - 0.5 / answers)
    nodes, weights = _nodes()
    abilities = sd * nodes
    low, high = np.full(p.shape, -_B_RANGE), np.full(p.shape, _B_RANGE)
    for _ in range(64):  # bisection, every question at once: the rate falls as b rises
        mid = (low + high) / 2
        easier = _logistic(abilities[None, :] - mid[:, None]) @ weights > p
        low, high = np.where(easier, mid, low), np.where(easier, high, mid)
    b = (low + high) / 2
    q = _logistic(abilities[None, :] - b[:, None])
    slope = (q * (1 - q)) @ weights  # -d rate / d b
    return b, np.sqrt(p * (1 - p) / answers) / slope


def calibrate(right: float, n: int, sd: float = CANDIDATE_SD) -> tuple[float, float]:
    """One question's difficulty and its standard error (:func:`calibrate_all`)."""
    b, se = calibrate_all([right], [n], sd)
    return float(b[0]), float(se[0])


@dataclass
class Standing:
    """Where one answerer stands among the candidates on ``n`` questions: their right
    answers and score (%), the candidates' mean score on the same questions (%) and their
    answers per question, and the estimated percentile (share of candidates below, %)
    with its 95% interval."""

    n: int
    right: int
    score: float
    candidates: float
    answers_per_question: float
    percentile: float
    low: float
    high: float
    sd: float = CANDIDATE_SD

    def as_dict(self) -> JSONDict:
        return asdict(self)

    def words(self, who: str = "you") -> str:
        """The standing in a line ("you 80% · candidates 71% on these 5 questions ·
        standing: 64th percentile among candidates (95% interval 31–89)")."""
        return (
            f"{who} {self.score:.0f}% · candidates {self.candidates:.0f}% on these "
            f"{self.n} question{'s' if self.n != 1 else ''} ({self.answers_per_question:.0f} "
            f"answers each on average) · standing: {ordinal(self.percentile)} percentile "
            f"among candidates (95% interval {self.low:.0f}–{self.high:.0f})"
        )


def ordinal(value: float) -> str:
    """``64`` → ``64th`` (rounded; never 0th nor 100th: ``1st`` … ``99th``)."""
    n = min(max(round(value), 1), 99)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def standing(answers: Sequence[tuple[Rate, bool]], sd: float = CANDIDATE_SD) -> Standing | None:
    """Where someone with these answers (each question's candidates' rate, and right or
    not) stands among the candidates; None without a question."""
    if not answers:
        return None
    import numpy as np

    rates = [r for r, _ in answers]
    right = np.array([ok for _, ok in answers], dtype=bool)
    b, se = calibrate_all([r.right for r in rates], [r.n for r in rates], sd)
    # Each b uncertain as N(b, se²): a response's likelihood is σ(κ(θ - b)), the probit
    # approximation of the logistic averaged over b.
    kappa = 1 / np.sqrt(1 + math.pi * se**2 / 8)
    theta = np.linspace(-8.0, 8.0, 1601) * max(sd, 1.0)  # the abilities weighed
    z = kappa[None, :] * (theta[:, None] - b[None, :])
    log_like = np.where(right[None, :], -np.logaddexp(0, -z), -np.logaddexp(0, z)).sum(axis=1)
    log_post = log_like - 0.5 * (theta / sd) ** 2  # the candidates' N(0, sd²) as the prior
    post = np.exp(log_post - log_post.max())
    cdf = np.cumsum(post) / post.sum()
    tail = (1 - LEVEL) / 2
    low, mid, high = (float(np.interp(q, cdf, theta)) for q in (tail, 0.5, 1 - tail))
    share = [50 * (1 + math.erf(t / sd / math.sqrt(2))) for t in (low, mid, high)]
    return Standing(
        n=len(answers),
        right=int(right.sum()),
        score=round(100 * float(right.mean()), 1),
        candidates=round(100 * float(np.mean([r.right for r in rates])), 1),
        answers_per_question=round(float(np.mean([r.n for r in rates])), 1),
        percentile=round(share[1], 1),
        low=round(share[0], 1),
        high=round(share[2], 1),
        sd=sd,
    )


def item_standing(items: Iterable[JSONDict], right: set[str]) -> Standing | None:
    """:func:`standing` over those of ``items`` whose candidates' rate is known, right
    when their key is in ``right`` (a question left unanswered is not right)."""
    answers = []
    for item in items:
        rate = candidates_of(item)
        if rate is not None:
            answers.append((rate, str(item["id"]) in right))
    return standing(answers)


def report_tables(runs: Sequence[RunData]) -> list[Table]:
    """The exam report's table of where each run would place among the candidates (none
    when no run answered a question whose candidates' rate its data set gives)."""
    from engine.reports.shapes import table

    rows: list[list[Cell]] = []
    for r in runs:
        answered = [r.items[k] for k in r.answers if k in r.items]
        right = {k for k, a in r.answers.items() if a.get("correct")}
        found = item_standing(answered, right)
        if found is None:
            continue
        cell: ScoreCell = {"value": found.percentile, "low": found.low, "high": found.high}
        rows.append([f"#{r.id}", r.who, r.label, found.n, found.score, found.candidates, cell])
    if not rows:
        return []
    return [
        table(
            "Standing among candidates: where this model would place among the people who "
            "answered these questions",
            ["Run", "Model", "Setting", "Items", "Score (%)", "Candidates (%)", "Percentile"],
            rows,
            "Items: the questions each run answered whose data set says how real candidates "
            "did on them; Score and Candidates: the run's and the candidates' mean share right "
            "on those questions.",
            f"Percentile: the estimated share of candidates below the run, with its 95% "
            f"interval, from {ASSUMPTION}.",
        )
    ]
