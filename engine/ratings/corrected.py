"""A judge's explanation ratings corrected by people's: per judge, run and perspective, the
judge's raw mean beside the people-only mean and the prediction-powered mean
(:func:`engine.reports.ppi.ppi_mean`) with their 95% intervals, and how many more people's
ratings would bring the corrected interval to ± :data:`HALF_WIDTH`.

People are offered first the answers drawn at random for this (:mod:`engine.ratings.draw`):
their ratings are then a random sample of the judge's, which the correction needs.

>>> table = corrected_table(runs, read_ratings(store, [12]))      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.ratings.perspectives import KEYS, NAMES
from engine.ratings.rated import Answer, Ratings, pool_sources
from engine.reports.ppi import PPIMean, more_ratings, ppi_mean
from engine.reports.stats import MIN_ITEMS

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Table
    from engine.types import Row

#: The half-width (on the 1–5 scale) "more ratings" aims the corrected interval at.
HALF_WIDTH = 0.25
TITLE = "Judge ratings corrected by people's (prediction-powered)"


def people_means(ratings: Ratings) -> dict[Answer, dict[str, float]]:
    """Each answer people rated: per perspective the mean of its raters' ratings."""
    found = pool_sources(ratings.people)
    return {a: {k: sum(v) / len(v) for k, v in keys.items() if v} for a, keys in found.items()}


def corrected(
    judged: dict[Answer, dict[str, float]], people: dict[Answer, dict[str, float]], key: str
) -> PPIMean:
    """The prediction-powered mean of one perspective over the answers ``judged``: people's
    ratings where they gave one, the judge's alone elsewhere."""
    y, f, more = [], [], []
    for a, values in judged.items():
        if key not in values:
            continue
        said = people.get(a, {}).get(key)
        if said is None:
            more.append(values[key])
        else:
            y.append(said)
            f.append(values[key])
    return ppi_mean(y, f, more)


def cell_of(value: float | None, low: float | None, high: float | None, n: int) -> Cell:
    """A mean with its interval; marked ``too_few`` from fewer than :data:`MIN_ITEMS`
    people's ratings (a normal interval from so few is not to be trusted)."""
    if value is None:
        return None
    if n < MIN_ITEMS:
        return {"value": value, "too_few": True}
    return {"value": value, "low": low, "high": high}


def more_cell(found: PPIMean, half_width: float = HALF_WIDTH) -> Cell:
    """How many more ratings bring ``found``'s interval to ± ``half_width``, in words where
    none would ("all left", "none left") or there is no variance to go by ("–")."""
    need = more_ratings(found, half_width)
    if need is None:
        return "–" if found.se is None else "all left" if found.n_judge_only else "none left"
    return need


def corrected_rows(runs: Sequence[Row], ratings: Ratings) -> list[list[Cell]]:
    """Rows per judge, run and perspective (only runs with people's ratings of answers the
    judge rated too: nothing to correct by otherwise)."""
    people = people_means(ratings)
    rows: list[list[Cell]] = []
    for judge, rated in sorted(ratings.judges.items()):
        for run in runs:
            mine = {a: v for a, v in rated.items() if a[0] == int(run["id"])}
            if not any(a in people for a in mine):
                continue
            for key in KEYS:
                found = corrected(mine, people, key)
                rows.append(
                    [
                        f"Judge {judge}",
                        f"#{run['id']}",
                        NAMES[key],
                        found.n,
                        found.n_judge_only,
                        found.judge_mean,
                        cell_of(found.people_mean, found.people_low, found.people_high, found.n),
                        cell_of(found.mean, found.low, found.high, found.n),
                        found.lam,
                        more_cell(found),
                    ]
                )
    return rows


def corrected_table(runs: Sequence[Row], ratings: Ratings) -> Table | None:
    """The table of :func:`corrected_rows`; None when no judge shares an answer with people."""
    from engine.reports.shapes import table

    rows = corrected_rows(runs, ratings)
    if not rows:
        return None
    return table(
        TITLE,
        ["Judge", "Run", "Perspective", "People rated", "Judge only", "Judge's mean",
         "People's mean", "Corrected mean", "λ", f"More ratings for ±{HALF_WIDTH}"],
        rows,
        "A judge's mean is not a person's: the corrected mean is the judge's mean over the "
        "answers it alone rated plus the people's mean difference from the judge on the "
        "answers both rated, weighted by λ (prediction-powered inference, Angelopoulos et "
        "al. 2023; λ tuned as in PPI++: 0 is the people-only mean, 1 the judge's fully "
        f"corrected). Brackets: normal 95% intervals, given from {MIN_ITEMS} people's "
        "ratings on; the corrected one holds whatever the judge's bias, and is narrower "
        "than the people-only one as far as the judge agrees with people.",
        "People are offered first a random draw of each run's answers (medexam rate), so "
        "their ratings are a random sample of the judge's; skipped answers are left out. "
        "More ratings: how many more answers people would rate for the corrected interval "
        f"to be ±{HALF_WIDTH}, by its variance with today's λ ('all left': not even all, 'none left': all are rated).",
    )  # fmt: skip
