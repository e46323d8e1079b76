"""The consultation's report section: doctors × patient and doctor recall/precision/F1,
words per question, turns and accuracy, upper bound first and lower bound last (Table 2 of
the automatic evaluation framework); the patient audited; the judged diagnoses; the turn
budgets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.consult.activity import CONSULT
from engine.reports.label import run_label
from engine.reports.layouts import (
    ANSWER_COLUMNS,
    CI_NOTE,
    RunData,
    answer_cells,
    answer_notes,
    ci_chart,
    compare_all,
    metric_columns,
)
from engine.reports.shapes import table
from engine.reports.stats import wilson_interval

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Chart, ChartPoint, ScoreCell, Section, Table
    from engine.store.store import Store
    from engine.types import Row

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
    from engine.consult.scoring.metrics import asked_nothing_line

    ordered = sorted(runs, key=_bound_order)
    added = metric_columns(CONSULT.id, added=True)  # measures beyond Table 2's
    rows = []
    for r in ordered:
        s = r.summary
        rows.append(
            [f"#{r.id}", r.label, r.run.get("dataset"), r.n]
            + [s.get(k) for k, _ in CONSULT_KEYS]
            + [*answer_cells(s, "accuracy"), r.share_cell(r.correct, r.n), *map(s.get, added)]
        )
    main = table(
        "Consultations (Table 2 layout of the automatic evaluation framework)",
        ["Run", "Doctor", "Data set", "Cases", *[t for _, t in CONSULT_KEYS], *ANSWER_COLUMNS,
         "Accuracy (%)", *added.values()],
        rows,
        "R/P/F1: ROUGE-1 recall, precision and F1 (%) of the patient's replies and the "
        "doctor's questions against the case facts; Len: words per question; Turns: "
        "questions per case.",
        CI_NOTE,
        *answer_notes(ordered),
        *(f"#{r.id}: {asked_nothing_line(r.summary)}." for r in ordered if r.summary.get("asked_nothing")),
    )  # fmt: skip
    from engine.consult.scoring.judging import judged_tables

    budgets, budget_charts = budget_tables([r.run for r in ordered])
    audited = _patient_audit(store, ordered)
    judged = judged_tables(store, [r.id for r in ordered])
    return {
        "tables": [main, *([audited] if audited else []), *judged, *budgets],
        "comparisons": compare_all(ordered, "doctor_f1", "Doctor F1"),
        "charts": [
            ci_chart(main, main["columns"].index("Accuracy (%)"), "Accuracy (%)"),
            *budget_charts,
        ],
    }


def _patient_audit(store: Store, runs: list[RunData]) -> Table | None:
    """Who played the patient in each consultation run and how it played: facts told
    unasked over the consultation (leakage), then per requirement the share of its replies
    that break it, how, and one reply that does (:func:`engine.consult.scoring.audit.run_audit`)."""
    from engine.consult.scoring.audit import BROKEN, run_audit

    rows = []
    for r in runs:
        s, settings = r.summary, r.run.get("settings") or {}
        if r.run.get("runner") in ("upper", "lower") or "patient_off_voice" not in s:
            continue
        patient = f"{settings.get('patient_model') or settings.get('patient')} ({settings.get('patient_mode')})"
        found = run_audit(store, r.id)
        if not found["replies"]:  # no reply, or its cases deleted since
            continue
        for n, (category, c) in enumerate(found["categories"].items()):
            e = c["example"]
            run = [f"#{r.id}", patient, r.label, s.get("leakage")] if n == 0 else [""] * 4
            rows.append(
                [
                    *run,
                    f"{category}: {BROKEN[category]}",
                    c["share"],
                    ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in c["kinds"].items()),
                    f"{e['case']} reply {e['turn']}: “{e['text']}”" if e else "",
                ]
            )
    if not rows:
        return None
    return table(
        "The patient audited",
        ["Run", "Patient (mode)", "Setting", "Leakage (%)", "Requirement broken",
         "Replies (%)", "How", "Example reply"],
        rows,
        "Leakage: facts told without being asked, of the facts revealed. Each requirement "
        "of the paper's patient, read in every reply by rules (no model): honest (no "
        "contradiction of the case, no fact it states denied or said unknown, nothing it "
        "does not hold), strict (no fact told unasked), everyday words (no medical jargon), "
        "a patient's voice (not an assistant, a doctor, a record, the third person, a "
        "refusal or an apology). Measured against a person's labels of real replies (the "
        "README's \"The patient audited\").",
    )  # fmt: skip


def budget_tables(runs: list[Row]) -> tuple[list[Table], list[Chart]]:
    """A table and an accuracy chart per group of runs that differ only in their budget."""
    from engine.consult.doctor.budget import budget_groups, questions_allowed

    tables: list[Table] = []
    charts: list[Chart] = []
    for group in budget_groups(runs):
        rows: list[list[Cell]] = []
        points: list[ChartPoint] = []
        for r in group:
            s = r.get("summary") or {}
            n, acc = int(s.get("n") or 0), s.get("accuracy")
            ci = wilson_interval(round((acc or 0) * n / 100), n) if n and acc is not None else None
            cell: ScoreCell = {
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
