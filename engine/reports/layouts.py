"""What every activity's report section is made of: a run with its answers (:class:`RunData`),
the head of a run's row, an activity's metric columns, paired comparisons of runs and the
interval chart of a table. Each activity lays out its own section with them, as its papers
print their tables (``Activity.report``: ``engine/<activity>/section.py``).

A table is ``{"title", "columns", "rows", "notes"}``; a cell is a number, a string, None, or
``{"value", "low", "high"}`` (a score with its 95% interval) or ``{"value", "n"}``.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

from engine.reports.label import run_label
from engine.reports.shapes import table
from engine.reports.stats import (
    METHODS,
    MIN_ITEMS,
    TOO_FEW,
    mcnemar,
    newcombe_interval,
    paired_bootstrap,
    share_cell,
)
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Chart, ChartPoint, Comparison, ScoreCell, Table
    from engine.reports.stats import PairedBootstrap
    from engine.types import Item, Row, Summary

#: Two runs are compared pairwise up to this many runs of one activity; beyond, each run is
#: compared with the first.
ALL_PAIRS_UP_TO = 5


class RunData:
    """A stored run with its answers (by item key) and the items of its data set; none when
    the data set no longer holds the items the run answered (``changed``: replaced since),
    so that its answers are never read against other questions."""

    def __init__(self, store: Store, run: Row) -> None:
        self.run = run
        self.id = int(run["id"])
        self.label = run_label(run)
        self.answers: dict[str, Row] = {str(a["item_key"]): a for a in store.answers(self.id)}
        self.changed = store.items_changed(run)
        found = None if self.changed else store.items_by_key(run["dataset"])
        self.items: dict[str, Item] = found or {}
        self.n = max(int(run.get("n_total") or 0), len(self.answers))
        self.correct = sum(bool(a["correct"]) for a in self.answers.values())

    @property
    def who(self) -> str:
        return "you" if self.run.get("runner") == "person" else str(self.run.get("model", ""))

    @property
    def summary(self) -> Summary:
        return self.run.get("summary") or {}

    def share_cell(self, correct: int, n: int) -> ScoreCell | None:
        """``correct`` of ``n`` in percent with its Wilson interval."""
        return share_cell(correct, n)

    def scores(self, key: str) -> dict[str, float]:
        """Per-item values of one score (items whose answer has it)."""
        out = {}
        for k, a in self.answers.items():
            value = (a.get("scores") or {}).get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[k] = float(value)
        return out


def head(r: RunData) -> list[Cell]:
    """The first cells of a run's row in a section's main table (:data:`HEAD`)."""
    return [f"#{r.id}", r.who, r.label, r.run.get("dataset")]


HEAD = ["Run", "Model", "Setting", "Data set"]
CI_NOTE = "Accuracy counts unanswered items as wrong; brackets hold the 95% Wilson interval."


#: The columns of a model run's replies that give no answer, and of chance
#: (:mod:`engine.core.no_answer`, :mod:`engine.core.chance`).
ANSWER_COLUMNS = ["No answer (%)", "Cut off (%)", "Chance (%)"]


def answer_cells(summary: Summary, chance: str) -> list[Cell]:
    """A run's :data:`ANSWER_COLUMNS`: its share of replies giving no answer (all reasons),
    cut off by the token limit, and the chance level of its score ``chance`` (the activity's
    key)."""
    shares = summary.get("no_answer")
    total = round(sum(shares.values()), 1) if isinstance(shares, dict) else None
    level = summary.get("chance")
    return [total, summary.get("cut_off"), level.get(chance) if isinstance(level, dict) else None]


def answer_notes(runs: list[RunData]) -> list[str]:
    """The notes under :data:`ANSWER_COLUMNS`: what chance is, each run's no answers by
    reason."""
    from engine.core.no_answer import shares_text

    notes = [
        "No answer: replies that list the options, name several or none, name a letter past "
        "the options or were cut off before answering; chance: the score of uniform guessing "
        "(one option of k with probability 1/k; of several right options, a non-empty subset)."
    ]
    for r in runs:
        shares = r.summary.get("no_answer")
        if isinstance(shares, dict) and shares:
            notes.append(f"#{r.id} no answer: {shares_text(shares)}.")
    return notes


def metric_columns(activity_id: str, added: bool = False) -> dict[str, str]:
    """The summary keys of an activity's scorers' metrics (``added``: only of the scorers it
    does not list itself, :func:`engine.core.scoring.activity_metrics`) with their labels."""
    from engine.activities import metric_label
    from engine.core.scoring import activity_metrics

    return {k: metric_label(k, activity_id) for k in activity_metrics(activity_id, added=added)}


# -- comparisons and charts ------------------------------------------------------------------


def compare(a: RunData, b: RunData, score: str, score_label: str) -> Comparison | None:
    """Runs ``a`` and ``b`` on the items both answered: how many answers differ, the
    accuracy difference with Newcombe's interval and McNemar's test, and a paired bootstrap
    of ``score``; None without common items (or when the two answered different items under
    the same keys: a data set changed between)."""
    common = [k for k in a.answers if k in b.answers]
    if not common or a.run.get("dataset_fingerprint") != b.run.get("dataset_fingerprint"):
        return None
    ans_a, ans_b = a.answers, b.answers
    only_a = sum(1 for k in common if ans_a[k]["correct"] and not ans_b[k]["correct"])
    only_b = sum(1 for k in common if ans_b[k]["correct"] and not ans_a[k]["correct"])
    sa, sb = a.scores(score), b.scores(score)
    paired = [k for k in common if k in sa and k in sb]
    scale = 1.0 if score.startswith("rouge") else 100.0
    boot = paired_bootstrap([scale * sa[k] for k in paired], [scale * sb[k] for k in paired])
    right_a = sum(bool(ans_a[k]["correct"]) for k in common)
    right_b = sum(bool(ans_b[k]["correct"]) for k in common)
    both = right_a - only_a
    low, high = newcombe_interval(both, only_a, only_b, len(common) - both - only_a - only_b)
    return {
        "a": a.id,
        "b": b.id,
        "n": len(common),
        "different_answers": sum(1 for k in common if ans_a[k]["chosen"] != ans_b[k]["chosen"]),
        "accuracy_diff": 100 * (right_b - right_a) / len(common),
        "accuracy_low": 100 * float(low),
        "accuracy_high": 100 * float(high),
        "mcnemar": mcnemar(only_a, only_b),
        "score": score,
        "score_label": score_label,
        "paired_bootstrap": boot if paired else None,
    }


def coverage_note(runs: list[RunData]) -> str:
    """A note for a table that puts ``runs`` side by side when they do not cover the same
    items (other data sets, or other items answered); "" when they do."""
    covered = {(str(r.run.get("dataset")), frozenset(r.answers)) for r in runs}
    if len(runs) < 2 or len(covered) < 2:
        return ""
    counts = ", ".join(f"#{r.id} {len(r.answers)} on {r.run.get('dataset')}" for r in runs)
    return (
        f"These runs cover different items ({counts} answered): each score is over its own "
        "run's items; the paired comparisons use only the items both runs answered."
    )


def changed_note(runs: list[RunData]) -> str:
    """A note naming the runs whose data set no longer holds the items they answered
    (replaced or deleted since); "" when there is none."""
    changed = [r for r in runs if r.changed]
    if not changed:
        return ""
    named = ", ".join(f"#{r.id} ({r.run.get('dataset')})" for r in changed)
    return (
        f"The data set of run(s) {named} no longer holds the items they answered (replaced "
        "since): their scores are of those items, not of the data set as it is now, and they "
        "are compared with no run on it."
    )


def compare_all(runs: list[RunData], score: str, score_label: str) -> list[Comparison]:
    if len(runs) <= ALL_PAIRS_UP_TO:
        pairs = list(combinations(runs, 2))
    else:
        pairs = [(runs[0], r) for r in runs[1:]]
    found = (compare(a, b, score, score_label) for a, b in pairs)
    return [c for c in found if c is not None]


def comparison_table(comparisons: list[Comparison]) -> Table | None:
    if not comparisons:
        return None
    label = comparisons[0]["score_label"]
    rows: list[list[Cell]] = []
    for c in comparisons:
        m = c["mcnemar"]
        boot: PairedBootstrap | dict[str, None] = c["paired_bootstrap"] or {}
        diff: Cell = None
        if boot.get("diff") is not None:
            diff = {"value": boot["diff"], "low": boot.get("low"), "high": boot.get("high")}
            diff["too_few"] = bool(boot.get("too_few"))
        boot_p: Cell = TOO_FEW if boot.get("too_few") and boot.get("n") else boot.get("p")
        rows.append(
            [
                f"#{c['a']}",
                f"#{c['b']}",
                c["n"],
                c["different_answers"],
                m["only_a"],
                m["only_b"],
                {
                    "value": c["accuracy_diff"],
                    "low": c["accuracy_low"],
                    "high": c["accuracy_high"],
                },  # fmt: skip
                m["p_exact"],
                diff,
                boot_p,
            ]
        )
    return table(
        "Paired comparisons on the items both runs answered",
        [
            "A",
            "B",
            "Items",
            "Different answers",
            "Right in A only",
            "Right in B only",
            "Accuracy B − A (points)",
            "McNemar p",
            f"{label} B − A",
            "Bootstrap p",
        ],
        rows,
        f"Accuracy B − A: 95% interval by {METHODS['newcombe']}; McNemar p: "
        f"{METHODS['McNemar']}. {label}: mean paired difference with the 95% interval and "
        f"two-sided p of {METHODS['paired bootstrap']}, given from {MIN_ITEMS} items on. "
        "p ≥ 0.05: not significant at the 5% level (within the noise).",
    )


def ci_chart(main: Table, column: int, axis: str) -> Chart:
    """The chart of the scores with their 95% intervals in ``column`` of table ``main``."""
    points: list[ChartPoint] = []
    for row in main["rows"]:
        cell = row[column]
        if isinstance(cell, dict) and cell.get("value") is not None:
            name = " ".join(str(x) for x in row[: 3 if main["columns"][1] == "Model" else 2])
            points.append({"name": name, **cell})
    return {
        "kind": "interval",
        "title": axis + " with 95% interval",
        "axis": axis,
        "points": points,
    }
