"""The French QA report section (FrenchMedMCQA): retriever settings × Hamming score and
EMR, then both by number of right answers, then the trained readers by context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.french.activity import FRENCH
from engine.french.readers import reader_table
from engine.reports.layouts import (
    ANSWER_COLUMNS,
    HEAD,
    RunData,
    answer_cells,
    answer_notes,
    ci_chart,
    compare_all,
    head,
    metric_columns,
)
from engine.reports.shapes import table
from engine.reports.stats import MIN_ITEMS, mean_cell

if TYPE_CHECKING:
    from engine.activities import Breakdown
    from engine.reports.shapes import Cell, ScoreCell, Section
    from engine.store.store import Store
    from engine.types import JSONDict


def _hamming_cell(r: RunData) -> ScoreCell | None:
    return mean_cell([100 * v for v in r.scores("hamming").values()])


def french_section(store: Store, runs: list[RunData]) -> Section:
    rows, by_n = [], []
    added = metric_columns(FRENCH.id, added=True)  # measures beyond the paper's
    for r in runs:
        s = r.summary
        exact = sum(bool(a["correct"]) for a in r.answers.values())
        recall = (s.get("recall_at_k") or {}).get("recall")
        rows.append(
            [
                *head(r),
                len(r.answers),
                _hamming_cell(r),
                r.share_cell(exact, len(r.answers)),
                recall,
                *map(s.get, added),
                *answer_cells(s, "emr"),
            ]
        )
        by_n.append((r, s.get("by_n_answers") or {}))
    counts = sorted({int(k) for _, b in by_n for k in b})
    main = table(
        "Hamming score and exact match ratio (FrenchMedMCQA layout)",
        [*HEAD, "Answered", "Hamming (%)", "EMR (%)", "Own passage retrieved (%)", *added.values(),
         *ANSWER_COLUMNS[:2], "Chance EMR (%)"],
        rows,
        "Over the answered questions; Hamming brackets: 95% bootstrap interval (from "
        f"{MIN_ITEMS} questions on), EMR brackets: 95% Wilson interval.",
        *answer_notes(runs),
        *(f"#{r.id}: chance Hamming {c}%." for r in runs
          if (c := (r.summary.get("chance") or {}).get("hamming")) is not None),
    )  # fmt: skip
    columns = ["Run", "Model", "Setting"]
    for c in counts:
        columns += [f"Hamming ({c} right)", f"EMR ({c} right)"]
    n_rows = []
    for r, b in by_n:
        cells: list[Cell] = [f"#{r.id}", r.who, r.label]
        for c in counts:
            block = b.get(str(c)) or {}
            n = block.get("n")
            cells += [
                {"value": block.get("hamming"), "n": n} if n else None,
                {"value": block.get("emr"), "n": n} if n else None,
            ]
        n_rows.append(cells)
    by_table = table(
        "By number of right answers (FrenchMedMCQA layout)",
        columns,
        n_rows,
        "Hamming score and EMR (%) of the questions with that many right answers; the "
        "number of questions in brackets.",
    )
    readers = reader_table([r.run for r in runs])
    return {
        "tables": [main, by_table, *([readers] if readers else [])],
        "comparisons": compare_all(runs, "hamming", "Hamming"),
        "charts": [ci_chart(main, 5, "Hamming score (%)")],
    }


def by_answers_scores(summary: JSONDict) -> Breakdown | None:
    """A run's Hamming score by number of right answers from its summary
    (``Activity.breakdown``); None when it has none."""
    by_n = summary.get("by_n_answers")
    if not isinstance(by_n, dict) or not by_n:
        return None
    return "Hamming score by number of right answers", [
        (f"{k} right", float(v.get("hamming") or 0.0), int(v.get("n") or 0))
        for k, v in by_n.items()
        if isinstance(v, dict)
    ]
