"""Explanation ratings in a report: the ExplainCPE paper's Table 4 (rows per model for people
and for each judge, the five perspectives as columns, with n and 95% intervals), the same by
question type, and how far each judge agrees with people (and people with each other) —
with a warning for a judge whose agreement with people was never measured.

>>> tables = rating_tables(store, [12, 14])        # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from engine.ratings.agreement import MIN_ITEMS, Agreement, compare
from engine.ratings.perspectives import KEYS, NAMES
from engine.ratings.rated import Answer, Ratings, pool_sources, read_ratings
from engine.reports.stats import mean_cell

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Table
    from engine.store.store import Store
    from engine.types import Row

#: The question types of an item the by-type table groups by (ExplainCPE's Table 5 types).
TYPE_FIELDS = ("type2", "category")
PEOPLE = "People"
UNCHECKED = "unchecked"

__all__ = ["Answer", "Ratings", "pool_sources", "rating_tables", "read_ratings"]


def _means(pooled: dict[Answer, dict[str, list[float]]], answers: set[Answer]) -> list[Cell]:
    """Per perspective the mean over answers of the mean rating each got."""
    cells: list[Cell] = []
    for k in KEYS:
        per = [sum(v[k]) / len(v[k]) for a, v in pooled.items() if a in answers and v.get(k)]
        cells.append(mean_cell(per))
    return cells


def _sources(
    ratings: Ratings, measured: set[str] | None = None
) -> list[tuple[str, dict[str, dict[Answer, dict[str, float]]]]]:
    """People (pooled), then each judge by name — marked unchecked when ``measured`` is
    given and does not hold it."""

    def name(j: str) -> str:
        return f"Judge {j}" + ("" if measured is None or j in measured else f" ({UNCHECKED})")

    return [(PEOPLE, ratings.people)] + [
        (name(j), {j: a}) for j, a in sorted(ratings.judges.items())
    ]


def table4(runs: Sequence[Row], ratings: Ratings, measured: set[str]) -> Table:
    """Table 4's layout: a row per run for people, then per judge and run."""
    from engine.reports.label import run_label
    from engine.reports.shapes import table

    rows: list[list[Cell]] = []
    for name, found in _sources(ratings, measured):
        pooled = pool_sources(found)
        for run in runs:
            mine = {a for a in pooled if a[0] == int(run["id"])}
            if mine:
                rows.append(
                    [
                        name,
                        f"#{run['id']}",
                        str(run.get("model") or ""),
                        run_label(run),
                        len(mine),
                        *_means(pooled, mine),
                    ]
                )
    raters = ", ".join(sorted(ratings.people)) or "none"
    return table(
        "Explanation ratings (ExplainCPE Table 4 layout)",
        ["Rated by", "Run", "Model", "Setting", "Explanations", *(NAMES[k] for k in KEYS)],
        rows,
        "Each explanation rated 1 to 5; a cell is the mean over explanations (several "
        "people's ratings of one explanation averaged first) with its 95% bootstrap interval.",
        f"People: {raters}. The model's name was hidden from them.",
        *(
            [f"({UNCHECKED}): the judge's agreement with people was never measured."]
            if set(ratings.judges) - measured
            else []
        ),
        *(
            f"Judge {j}: {n} replies gave no five ratings (left out)."
            for j, n in sorted(ratings.unparsed.items())
            if n
        ),
    )


def _by_type(
    runs: Sequence[Row], ratings: Ratings, items: Mapping[int, Mapping[str, Row]]
) -> Table | None:
    from engine.reports.shapes import table

    rows: list[list[Cell]] = []
    models = {int(r["id"]): str(r.get("model") or "") for r in runs}
    for name, found in _sources(ratings):
        pooled = pool_sources(found)
        groups: dict[tuple[str, str], set[Answer]] = defaultdict(set)
        for a in pooled:
            item = items.get(a[0], {}).get(a[1], {})
            kind = next((str(item[f]) for f in TYPE_FIELDS if item.get(f)), None)
            if kind:
                groups[(models.get(a[0], ""), kind)].add(a)
        for (model, kind), mine in sorted(groups.items()):
            rows.append([name, model, kind, len(mine), *_means(pooled, mine)])
    if not rows:
        return None
    return table(
        "Explanation ratings by question type",
        ["Rated by", "Model", "Question type", "Explanations", *(NAMES[k] for k in KEYS)],
        rows,
        "ExplainCPE's kinds of question (type2); French questions by their number of answers.",
    )


def _agreement_rows(name: str, found: dict[str, Agreement]) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for k in KEYS:
        a = found[k]
        rows.append(
            [
                name,
                NAMES[k],
                a.n,
                _ci(a.spearman, a.spearman_ci),
                _ci(a.kappa, a.kappa_ci),
                _ci(a.bias, a.bias_ci),
            ]
        )
    return rows


def _ci(value: float | None, ci: object) -> Cell:
    if value is None:
        return None
    low, high = (ci.low, ci.high) if ci is not None else (None, None)  # type: ignore[attr-defined]
    return {"value": value, "low": low, "high": high}


def agreements(ratings: Ratings) -> tuple[list[list[Cell]], set[str]]:
    """Rows of agreement (judge vs people, person vs person) and the judges measured. A
    judge is paired with each person's rating of the same explanation; the intervals
    resample whole explanations."""
    rows: list[list[Cell]] = []
    measured: set[str] = set()
    for judge, rated in sorted(ratings.judges.items()):
        people: dict[tuple[Answer, str], dict[str, float]] = {}
        theirs: dict[tuple[Answer, str], dict[str, float]] = {}
        for rater, answers in ratings.people.items():
            for a, values in answers.items():
                if a in rated:
                    people[(a, rater)], theirs[(a, rater)] = values, rated[a]
        if people:
            found = compare(people, theirs, KEYS, clusters={k: k[0] for k in people})
            if max(a.n for a in found.values()) >= MIN_ITEMS:
                measured.add(judge)
            rows += _agreement_rows(f"Judge {judge} vs people", found)
    for first, second in combinations(sorted(ratings.people), 2):
        one, two = ratings.people[first], ratings.people[second]
        if set(one) & set(two):
            rows += _agreement_rows(f"{first} vs {second}", compare(one, two, KEYS))
    return rows, measured


def rating_tables(store: Store, run_ids: Sequence[int]) -> list[Table]:
    """The ratings tables of runs ``run_ids`` (none when nobody rated their explanations)."""
    from engine.ratings.corrected import corrected_table
    from engine.reports.shapes import table

    ratings = read_ratings(store, run_ids)
    if ratings.empty:
        return []
    runs = [store.run(int(i)) for i in run_ids]
    rows, measured = agreements(ratings)
    tables = [table4(runs, ratings, measured)]
    fixed = corrected_table(runs, ratings)
    if fixed is not None:
        tables.append(fixed)
    items = {int(r["id"]): store.items_by_key(r["dataset"]) or {} for r in runs}
    by_type = _by_type(runs, ratings, items)
    if by_type is not None:
        tables.append(by_type)
    never = [j for j in sorted(ratings.judges) if j not in measured]
    if not rows and not never:
        return tables
    tables.append(
        table(
            "How far the judges can be trusted: agreement with people",
            ["Between", "Perspective", "Pairs", "Spearman ρ", "Weighted κ", "Bias"],
            rows,
            "Pairs: explanations both rated (a judge paired with each person who rated the "
            "same one). Weighted κ: Cohen's kappa, quadratic weights. Bias: the second's "
            "rating minus the first's (above 0: the judge is more generous). Brackets: 95% "
            "bootstrap intervals over explanations.",
            *(
                f"Warning: judge {j}'s agreement with people was never measured (fewer than "
                f"{MIN_ITEMS} explanations rated by both) — rate some of the same "
                "explanations (medexam rate) before trusting its numbers."
                for j in never
            ),
        )
    )
    return tables
