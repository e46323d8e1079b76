"""The consultation paper's Table 3 and Figures 5, 6 and 7 drawn from a ``consult-table2``
experiment (:mod:`engine.consult.presets`); its Table 2 is the report's consultation section.

* **Table 3** — question diversity per doctor setting: eq. 4's mean pairwise ROUGE-1, -2 and
  -L of each consultation's questions (lower = more diverse) and the questions asked again
  word for word;
* **Figure 5** — the model doctors' patient recall, doctor recall and the fixed solver's
  accuracy after each share of the questions (runs played with ``answer_at``,
  :mod:`engine.consult.scoring.shares`);
* **Figure 6** — the same for the oracles, one line per order of the questions (direct,
  random, reverse);
* **Figure 7** — accuracy and recall by the cases' number of facts, in three bins shared by
  every run of the experiment.

Each line is one run: runs of different settings are never joined. Accuracy points carry
their 95% Wilson interval; recall points a 95% bootstrap interval over the cases, none from
fewer than :data:`~engine.reports.stats.MIN_ITEMS` cases (the tables say "too few items").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.consult.scoring.shares import run_shares, share_key
from engine.consult.settings import BASELINES, ORACLES
from engine.reports.experiment import experiment_runs
from engine.reports.shapes import table
from engine.reports.stats import MIN_ITEMS, mean_cell, share_cell

if TYPE_CHECKING:
    from engine.reports.layouts import RunData
    from engine.reports.shapes import Cell, Chart, ScoreCell, Table
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: The figures' panels: (score key, panel and column name; accuracy or a mean).
MEASURES = (("correct", "Accuracy"), ("patient_recall", "Patient recall"),
            ("doctor_recall", "Doctor recall"))  # fmt: skip
DIVERSITY = (("diversity_rouge1", "ROUGE-1"), ("diversity_rouge2", "ROUGE-2"),
             ("diversity_rougeL", "ROUGE-L"))  # fmt: skip
INTERVALS = (
    "Accuracy: 95% Wilson interval. Recall (ROUGE-1 recall of the replies, or of the "
    f"questions, against the case's facts, %): 95% bootstrap interval over the cases, none "
    f"from fewer than {MIN_ITEMS} cases."
)
Found = list[tuple["JSONDict", "RunData"]]


def _values(r: RunData, key: str) -> list[float]:
    """The cases' values of score ``key`` (true and false as 1 and 0)."""
    out = []
    for a in r.answers.values():
        value = (a.get("scores") or {}).get(key)
        if isinstance(value, int | float):
            out.append(float(value))
    return out


def _point(values: Sequence[float], accuracy: bool) -> ScoreCell | None:
    """Accuracy (share right, Wilson) or a mean recall in percent (bootstrap, too few)."""
    if accuracy:
        return share_cell(round(sum(values)), len(values)) if values else None
    return mean_cell([100 * v for v in values])


def _runner(r: RunData) -> str:
    return str(r.run.get("runner") or "model")


# -- Table 3 ---------------------------------------------------------------------------------


def _repeats(store: Store, r: RunData) -> tuple[int, int]:
    """Questions asked again word for word, and questions, over the run's consultations."""
    again = asked = 0
    for key in r.answers:
        for t in store.turns(r.id, key):
            extra = t.get("extra") or {}
            if t["role"] == "doctor" and extra.get("kind") == "question":
                asked += 1
                again += bool(extra.get("repeat"))
    return again, asked


def table3(store: Store, found: Found) -> Table | None:
    """Question diversity per doctor setting (the consultations; the bounds ask nothing)."""
    rows: list[list[Cell]] = []
    for cell, r in found:
        if _runner(r) in BASELINES:
            continue
        per_kind = [_values(r, key) for key, _ in DIVERSITY]
        again, asked = _repeats(store, r)
        rows.append(
            [cell["label"], f"#{r.id}", len(r.answers), len(per_kind[0])]
            + [mean_cell([100 * v for v in values]) for values in per_kind]
            + [f"{again} of {asked}" if asked else None]
        )
    if not rows:
        return None
    names = [f"Diversity {name} (%)" for _, name in DIVERSITY]
    return table(
        "Consultation Table 3: question diversity by doctor setting",
        ["Setting", "Run", "Cases", "Cases with 2+ questions", *names, "Asked again"],
        rows,
        "Diversity (eq. 4): the mean ROUGE F-measure over every pair of one consultation's "
        "questions, averaged over the consultations with two questions or more; lower is "
        "more diverse. Asked again: questions the doctor had asked word for word before.",
        f"Brackets: 95% bootstrap interval over the consultations, none from fewer than "
        f"{MIN_ITEMS}.",
    )


# -- Figures 5 and 6: after each share of the questions --------------------------------------


def share_figure(found: Found, title: str, which: Callable[[str], bool]) -> tuple[Chart, Table]:
    """The runs ``which`` keeps (by runner) that answered after each share: a line per run
    in each measure's panel, and the table of its points."""
    series: list[JSONDict] = []
    rows: list[list[Cell]] = []
    left_out = []
    for cell, r in found:
        if not which(_runner(r)):
            continue
        shares = run_shares(r.run.get("settings") or {})
        if not shares:
            left_out.append(f"#{r.id}")
            continue
        lines = {name: {"name": cell["label"], "panel": name, "points": []} for _, name in MEASURES}
        for share in shares:
            cells = []
            for key, name in MEASURES:
                values = _values(r, share_key(key, share))
                point = _point(values, key == "correct")
                cells.append(point)
                if point is not None and point.get("value") is not None:
                    x = round(share * 100)
                    lines[name]["points"].append({**point, "x": x, "run_id": r.id})
            n = len(_values(r, share_key("patient_recall", share)))
            rows.append([cell["label"], f"#{r.id}", round(share * 100), n, *cells])
        series += [line for line in lines.values() if line["points"]]
    notes = [INTERVALS, "Share: the first part of each consultation's questions (20%: the "
             "first fifth, rounded up); 100% is the whole consultation and the run's answer."]  # fmt: skip
    if left_out:
        notes.append(f"Played without --answer-at, so not drawn: {', '.join(left_out)}.")
    columns = ["Setting", "Run", "Share (%)", "Cases", *(f"{n} (%)" for _, n in MEASURES)]
    chart: Chart = {
        "kind": "lines",
        "title": title,
        "axis": "%",
        "x_axis": "Share of the questions (%)",
        "series": series,  # type: ignore[typeddict-item]
    }
    return chart, table(f"{title}: the points", columns, rows, *notes)


# -- Figure 7: by the cases' number of facts ---------------------------------------------------


def fact_bins(counts: Sequence[int], k: int = 3) -> list[tuple[int, int]]:
    """``(fewest, most)`` facts of up to ``k`` bins of cases of about equal size, a number of
    facts in one bin only.

    >>> fact_bins([3, 4, 4, 5, 8, 9])
    [(3, 4), (5, 5), (6, 9)]
    >>> fact_bins([5, 5, 5])
    [(5, 5)]
    """
    values = sorted(counts)
    if not values:
        return []
    bins, low = [], values[0]
    for i in range(1, k + 1):
        end = values[-1] if i == k else values[max(0, i * len(values) // k - 1)]
        if end >= low:
            bins.append((low, end))
            low = end + 1
    return bins


def _bin_name(low: int, high: int) -> str:
    return f"{low} facts" if low == high else f"{low}–{high} facts"


def figure7(found: Found) -> tuple[Chart, Table] | None:
    """Accuracy, patient and doctor recall by number of facts (every run, bins shared)."""
    facts = {}
    for _, r in found:
        for key, a in r.answers.items():
            n = (a.get("scores") or {}).get("n_facts")
            if isinstance(n, int | float):
                facts[key] = int(n)
    bins = fact_bins(list(facts.values()))
    if not bins:
        return None
    series: list[JSONDict] = []
    rows: list[list[Cell]] = []
    for cell, r in found:
        bound = _runner(r) in BASELINES
        lines = {name: {"name": cell["label"], "panel": name, "points": []} for _, name in MEASURES}
        for x, (low, high) in enumerate(bins):
            chosen = [a for k, a in r.answers.items() if low <= facts.get(k, -1) <= high]
            cells: list[Cell] = []
            for key, name in MEASURES:
                values = [float(v) for a in chosen
                          if isinstance(v := _score(a, key), int | float)]  # fmt: skip
                asked = not (bound and key == "doctor_recall")  # a bound asks nothing
                point = _point(values, key == "correct") if asked else None
                cells.append(point)
                if point is not None:
                    lines[name]["points"].append({**point, "x": x, "run_id": r.id})
            rows.append([cell["label"], f"#{r.id}", _bin_name(low, high), len(chosen), *cells])
        series += [line for line in lines.values() if line["points"]]
    chart: Chart = {
        "kind": "lines",
        "title": "Consultation Figure 7: scores by the cases' number of facts",
        "axis": "%",
        "x_axis": "Facts in the case",
        "x_labels": {str(x): _bin_name(*b) for x, b in enumerate(bins)},
        "series": series,  # type: ignore[typeddict-item]
    }
    columns = ["Setting", "Run", "Facts", "Cases", *(f"{n} (%)" for _, n in MEASURES)]
    notes = (
        INTERVALS,
        "The cases of every run are cut into three bins of about as many cases by their "
        "number of facts; the bounds ask no question (no doctor recall).",
    )
    return chart, table(f"{chart['title']}: the points", columns, rows, *notes)


def _score(answer: Row, key: str) -> object:
    return answer.get("correct") if key == "correct" else (answer.get("scores") or {}).get(key)


def table2_report(store: Store, experiment: JSONDict) -> JSONDict:
    """Table 3 and Figures 5, 6 and 7 of a ``consult-table2`` experiment, each figure with
    the table of its points."""
    found = experiment_runs(store, experiment)
    if not found:
        return {"tables": [], "charts": []}
    tables: list[Table] = []
    charts: list[Chart] = []
    diversity = table3(store, found)
    if diversity is not None:
        tables.append(diversity)
    figures = [
        share_figure(found, "Consultation Figure 5: scores after each share of the questions",
                     lambda runner: runner == "model"),
        share_figure(found, "Consultation Figure 6: the oracles' orders of the questions",
                     lambda runner: runner in ORACLES),
        figure7(found),
    ]  # fmt: skip
    for drawn in figures:
        if drawn is not None and drawn[0]["series"]:
            charts.append(drawn[0])
            tables.append(drawn[1])
    return {"tables": tables, "charts": charts}
