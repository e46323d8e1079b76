"""The tables of a report, one layout per activity, as the papers print them.

* Exam (ExplainCPE): settings × models with accuracy (95% Wilson interval) and ROUGE-1/2/L
  (Table 8); accuracy by question type (Table 5); calibration of ``logprob`` runs.
* Consultation (the automatic evaluation framework): doctors × patient and doctor
  recall/precision/F1, words per question, turns and accuracy, upper bound first and lower
  bound last (Table 2).
* French QA (FrenchMedMCQA): retriever settings × Hamming score and EMR, then both by number
  of right answers.

A table is ``{"title", "columns", "rows", "notes"}``; a cell is a number, a string, None, or
``{"value", "low", "high"}`` (a score with its 95% interval) or ``{"value", "n"}``.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

from engine.reports.label import run_label
from engine.reports.shapes import table
from engine.reports.stats import (
    MIN_ITEMS,
    RESAMPLES,
    TOO_FEW,
    mcnemar,
    mean_cell,
    paired_bootstrap,
    reliability_bins,
    share_cell,
    wilson_interval,
)
from engine.store import Store

if TYPE_CHECKING:
    from engine.reports.shapes import (
        Cell,
        Chart,
        ChartSeries,
        Comparison,
        ScoreCell,
        Section,
        Table,
    )
    from engine.types import Item, Row, Summary

#: Two runs are compared pairwise up to this many runs of one activity; beyond, each run is
#: compared with the first.
ALL_PAIRS_UP_TO = 5
TYPE_NAMES = {"type1": "wording", "type2": "kind of question", "type3": "subject"}
#: A table of accuracy by type holds at most this many types; more are split into parts.
MAX_TYPE_COLUMNS = 10


class RunData:
    """A stored run with its answers (by item key) and the items of its data set."""

    def __init__(self, store: Store, run: Row) -> None:
        self.run = run
        self.id = int(run["id"])
        self.label = run_label(run)
        self.answers: dict[str, Row] = {str(a["item_key"]): a for a in store.answers(self.id)}
        self.items: dict[str, Item] = store.items_by_key(run["dataset"]) or {}
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


def _head(r: RunData) -> list[Cell]:
    return [f"#{r.id}", r.who, r.label, r.run.get("dataset")]


HEAD = ["Run", "Model", "Setting", "Data set"]
CI_NOTE = "Accuracy counts unanswered items as wrong; brackets hold the 95% Wilson interval."


# -- exam ------------------------------------------------------------------------------------


def metric_columns(activity_id: str, added: bool = False) -> dict[str, str]:
    """The summary keys of an activity's scorers' metrics (``added``: only of the scorers it
    does not list itself, :func:`engine.scoring.activity_metrics`) with their labels."""
    from engine.activities import metric_label
    from engine.scoring import activity_metrics

    return {k: metric_label(k, activity_id) for k in activity_metrics(activity_id, added=added)}


def _exam_main(runs: list[RunData]) -> Table:
    # accuracy with its interval, then every other metric of the scorers (ROUGE-1/2/L…)
    columns = {k: v for k, v in metric_columns("exam").items() if k != "accuracy"}
    rows = []
    for r in runs:
        s = r.summary
        rows.append([*_head(r), r.n, r.share_cell(r.correct, r.n), *map(s.get, columns)])
    return table(
        "Accuracy and explanation ROUGE (ExplainCPE Table 8 layout)",
        [*HEAD, "Items", "Accuracy (%)", *columns.values()],
        rows,
        CI_NOTE,
        "ROUGE-1/2/L: F-measure of the generated explanation against the gold one "
        "(none for logprob runs, which write no explanation).",
    )


def _by_type(runs: list[RunData]) -> list[Table]:
    """Accuracy by each level of question types present; a level with more than
    :data:`MAX_TYPE_COLUMNS` values (ExplainCPE's 14 subjects) is split into parts of equal
    width, so every value is shown."""
    out = []
    for field, name in TYPE_NAMES.items():
        groups: dict[int, dict[str, list[bool]]] = {}
        for r in runs:
            for key, a in r.answers.items():
                value = r.items.get(key, {}).get(field)
                if value:
                    groups.setdefault(r.id, {}).setdefault(str(value), []).append(
                        bool(a["correct"])
                    )
        values = sorted({v for g in groups.values() for v in g})
        parts = -(-len(values) // MAX_TYPE_COLUMNS)
        width = -(-len(values) // parts) if parts else 0
        for i in range(parts):
            title = f"Accuracy by {name} (ExplainCPE Table 5 layout)"
            if parts > 1:
                title += f", part {i + 1} of {parts}"
            out.append(_type_table(title, runs, groups, values[i * width : (i + 1) * width]))
    return out


def _type_table(
    title: str, runs: list[RunData], groups: dict[int, dict[str, list[bool]]], values: list[str]
) -> Table:
    rows = []
    for r in runs:
        got = groups.get(r.id, {})
        cells = [
            {"value": 100 * sum(got[v]) / len(got[v]), "n": len(got[v])} if v in got else None
            for v in values
        ]
        rows.append([f"#{r.id}", r.who, r.label, *cells])
    return table(
        title,
        ["Run", "Model", "Setting", *values],
        rows,
        "Accuracy (%) of the answered items of each type; the number of items in brackets.",
    )


def _calibration(runs: list[RunData]) -> tuple[Table | None, list[ChartSeries]]:
    from engine.exam.metrics import calibration

    rows, series = [], []
    for r in runs:
        answered = [a for a in r.answers.values() if (a.get("extra") or {}).get("probs")]
        if not answered:
            continue
        dists = [a["extra"]["probs"] for a in answered]
        cal = calibration(dists, [a["gold"] for a in answered])
        rows.append(
            [
                f"#{r.id}",
                r.who,
                r.label,
                len(answered),
                cal["ece"],
                cal["brier"],
                cal["mean_confidence"],
            ]
        )
        confidences = [max(d.values()) for d in dists]
        ok = [bool(a["correct"]) for a in answered]
        series.append(
            {
                "run_id": r.id,
                "name": f"#{r.id} {r.who} · {r.label}",
                "bins": reliability_bins(confidences, ok),
            }
        )
    if not rows:
        return None, []
    return (
        table(
            "Calibration of the letter probabilities (logprob runs)",
            ["Run", "Model", "Setting", "Items", "ECE", "Brier score", "Mean confidence"],
            rows,
            "ECE over 10 equal-width confidence bins; lower is better for both ECE and Brier.",
        ),
        series,
    )


def exam_section(store: Store, runs: list[RunData]) -> Section:
    from engine.exam.candidates import report_tables

    tables = [_exam_main(runs), *report_tables(runs), *_by_type(runs)]
    cal_table, series = _calibration(runs)
    if cal_table is not None:
        tables.append(cal_table)
    charts = [_ci_chart(tables[0], 5, "Accuracy (%)")]
    if series:
        charts.append({"kind": "reliability", "title": "Reliability diagram", "series": series})
    comparisons = compare_all(runs, "rougeL", "ROUGE-L")
    return {"tables": tables, "comparisons": comparisons, "charts": charts}


# -- consultation ----------------------------------------------------------------------------

CONSULT_KEYS = [
    ("patient_recall", "Patient R"),
    ("patient_precision", "Patient P"),
    ("patient_f1", "Patient F1"),
    ("doctor_recall", "Doctor R"),
    ("doctor_precision", "Doctor P"),
    ("doctor_f1", "Doctor F1"),
    ("avg_length", "Len"),
    ("avg_turns", "Turns"),
]


def _bound_order(r: RunData) -> int:
    return {"upper": 0, "lower": 2}.get(str(r.run.get("runner")), 1)


def consult_section(store: Store, runs: list[RunData]) -> Section:
    from engine.consult.metrics import asked_nothing_line

    ordered = sorted(runs, key=_bound_order)
    added = metric_columns("consult", added=True)  # measures beyond Table 2's
    rows = []
    for r in ordered:
        s = r.summary
        rows.append(
            [f"#{r.id}", r.label, r.run.get("dataset"), r.n]
            + [s.get(k) for k, _ in CONSULT_KEYS]
            + [r.share_cell(r.correct, r.n), *map(s.get, added)]
        )
    main = table(
        "Consultations (Table 2 layout of the automatic evaluation framework)",
        ["Run", "Doctor", "Data set", "Cases", *[t for _, t in CONSULT_KEYS], "Accuracy (%)",
         *added.values()],
        rows,
        "R/P/F1: ROUGE-1 recall, precision and F1 (%) of the patient's replies and the "
        "doctor's questions against the case facts; Len: words per question; Turns: "
        "questions per case.",
        CI_NOTE,
        *(f"#{r.id}: {asked_nothing_line(r.summary)}." for r in ordered if r.summary.get("asked_nothing")),
    )  # fmt: skip
    from engine.consult.judging import judged_tables

    budgets, budget_charts = budget_tables([r.run for r in ordered])
    audited = _patient_audit(ordered)
    judged = judged_tables(store, [r.id for r in ordered])
    return {
        "tables": [main, *([audited] if audited else []), *judged, *budgets],
        "comparisons": compare_all(ordered, "doctor_f1", "Doctor F1"),
        "charts": [_ci_chart(main, len(main["columns"]) - 1, "Accuracy (%)"), *budget_charts],
    }


def _patient_audit(runs: list[RunData]) -> Table | None:
    """Who played the patient in each consultation run and how it played: facts told
    unasked, statements matching no fact, replies out of a patient's voice."""
    rows = []
    for r in runs:
        s, settings = r.summary, r.run.get("settings") or {}
        if r.run.get("runner") in ("upper", "lower") or "patient_off_voice" not in s:
            continue
        patient = f"{settings.get('patient_model') or settings.get('patient')} ({settings.get('patient_mode')})"
        rows.append(
            [
                f"#{r.id}",
                patient,
                r.label,
                s.get("leakage"),
                s.get("patient_unsupported"),
                s.get("patient_off_voice"),
            ]
        )
    if not rows:
        return None
    return table(
        "The patient audited",
        [
            "Run",
            "Patient (mode)",
            "Setting",
            "Leakage (%)",
            "Statements matching no fact (%)",
            "Replies out of voice (%)",
        ],
        rows,
        "Leakage: facts told without being asked, of the facts revealed. Statements matching "
        "no fact: sentences of the patient's replies whose content words no fact of the case "
        "covers to 30% (word overlap, not a judge: a possible made-up fact). Out of voice: "
        "replies that speak as an assistant (refusals included) or as the doctor.",
    )


def budget_tables(runs: list[Row]) -> tuple[list[Table], list[Chart]]:
    """A table and an accuracy chart per group of runs that differ only in their budget."""
    from engine.consult.budget import budget_groups, questions_allowed

    tables: list[Table] = []
    charts: list[Chart] = []
    for group in budget_groups(runs):
        rows = []
        points = []
        for r in group:
            s = r.get("summary") or {}
            n, acc = int(s.get("n") or 0), s.get("accuracy")
            ci = wilson_interval(round((acc or 0) * n / 100), n) if n and acc is not None else None
            cell = {
                "value": acc,
                "low": 100 * ci[0] if ci else None,
                "high": 100 * ci[1] if ci else None,
            }
            turns = (r.get("settings") or {}).get("max_turns")
            rows.append(
                [
                    f"#{r['id']}",
                    turns,
                    n,
                    cell,
                    s.get("patient_recall"),
                    s.get("patient_f1"),
                    s.get("avg_turns"),
                ]
            )
            points.append({"name": questions_allowed(turns), **cell})
        label = run_label(
            {**group[0], "settings": {**(group[0].get("settings") or {}), "max_turns": None}}
        )
        tables.append(
            table(
                f"Turn budget: {label} on {group[0]['dataset']}",
                [
                    "Run",
                    "Questions allowed",
                    "Cases",
                    "Accuracy (%)",
                    "Patient R",
                    "Patient F1",
                    "Questions asked",
                ],
                rows,
                "The same doctor, patient and solver with fewer or more questions allowed; "
                "brackets: 95% Wilson interval. Patient R/F1: ROUGE-1 of the patient's replies "
                "against the case facts (%).",
            )
        )
        charts.append(
            {
                "kind": "interval",
                "title": "Accuracy against the questions allowed",
                "axis": "Accuracy (%)",
                "points": points,
            }
        )
    return tables, charts


# -- French QA -------------------------------------------------------------------------------


def _hamming_cell(r: RunData) -> ScoreCell | None:
    return mean_cell([100 * v for v in r.scores("hamming").values()])


def french_section(store: Store, runs: list[RunData]) -> Section:
    rows, by_n = [], []
    added = metric_columns("french", added=True)  # measures beyond the paper's
    for r in runs:
        s = r.summary
        exact = sum(bool(a["correct"]) for a in r.answers.values())
        recall = (s.get("recall_at_k") or {}).get("recall")
        rows.append(
            [
                *_head(r),
                len(r.answers),
                _hamming_cell(r),
                r.share_cell(exact, len(r.answers)),
                recall,
                *map(s.get, added),
            ]
        )
        by_n.append((r, s.get("by_n_answers") or {}))
    counts = sorted({int(k) for _, b in by_n for k in b})
    main = table(
        "Hamming score and exact match ratio (FrenchMedMCQA layout)",
        [*HEAD, "Answered", "Hamming (%)", "EMR (%)", "Own passage retrieved (%)", *added.values()],
        rows,
        "Over the answered questions; Hamming brackets: 95% bootstrap interval (from "
        f"{MIN_ITEMS} questions on), EMR brackets: 95% Wilson interval.",
    )
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
    from engine.reports.readers import reader_table

    readers = reader_table([r.run for r in runs])
    return {
        "tables": [main, by_table, *([readers] if readers else [])],
        "comparisons": compare_all(runs, "hamming", "Hamming"),
        "charts": [_ci_chart(main, 5, "Hamming score (%)")],
    }


# -- comparisons and charts ------------------------------------------------------------------


def compare(a: RunData, b: RunData, score: str, score_label: str) -> Comparison | None:
    """Runs ``a`` and ``b`` on the items both answered: how many answers differ, McNemar's
    test on right/wrong and a paired bootstrap of ``score``; None without common items."""
    common = [k for k in a.answers if k in b.answers]
    if not common:
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
    return {
        "a": a.id,
        "b": b.id,
        "n": len(common),
        "different_answers": sum(1 for k in common if ans_a[k]["chosen"] != ans_b[k]["chosen"]),
        "accuracy_diff": 100 * (right_b - right_a) / len(common),
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
    rows = []
    for c in comparisons:
        m, boot = c["mcnemar"], c["paired_bootstrap"] or {}
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
                c["accuracy_diff"],
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
        "McNemar: exact two-sided test on the items one run got right and the other wrong. "
        f"{label}: mean paired difference with its 95% bootstrap interval and two-sided p "
        f"({RESAMPLES} resamples), given from {MIN_ITEMS} items on. p ≥ 0.05: not significant "
        "at the 5% level (within the noise).",
    )


def _ci_chart(main: Table, column: int, axis: str) -> Chart:
    points = []
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
