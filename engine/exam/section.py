"""The exam's report section, as ExplainCPE prints its results: settings × models with
accuracy (95% Wilson interval) and ROUGE-1/2/L (Table 8); accuracy by question type
(Table 5); calibration of ``logprob`` runs; where each run would place among the candidates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.exam.activity import EXAM
from engine.exam.reliability import reliability_bins
from engine.reports.layouts import (
    ANSWER_COLUMNS,
    CI_NOTE,
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

if TYPE_CHECKING:
    from engine.activities import Breakdown
    from engine.reports.shapes import Cell, ChartSeries, Section, Table
    from engine.store.store import Store
    from engine.types import JSONDict

TYPE_NAMES = {"type1": "wording", "type2": "kind of question", "type3": "subject"}
#: The wordings (``type1``) in English, the data set's own word kept beside: a report's
#: headers are English (the subjects stay the data set's: they are its names).
WORDINGS = {"正向": "choose the true (正向)", "反向": "choose the false (反向)"}
#: A table of accuracy by type holds at most this many types; more are split into parts.
MAX_TYPE_COLUMNS = 10


def _exam_main(runs: list[RunData]) -> Table:
    # accuracy with its interval, then every other metric of the scorers (ROUGE-1/2/L…)
    columns = {k: v for k, v in metric_columns(EXAM.id).items() if k != EXAM.headline}
    rows = []
    for r in runs:
        s = r.summary
        cells = [*head(r), r.n, r.share_cell(r.correct, r.n), *map(s.get, columns)]
        rows.append([*cells, *answer_cells(s, "accuracy")])
    return table(
        "Accuracy and explanation ROUGE (ExplainCPE Table 8 layout)",
        [*HEAD, "Items", "Accuracy (%)", *columns.values(), *ANSWER_COLUMNS],
        rows,
        CI_NOTE,
        "ROUGE-1/2/L: F-measure of the generated explanation against the gold one "
        "(none for logprob runs, which write no explanation).",
        *answer_notes(runs),
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
            shown = values[i * width : (i + 1) * width]
            heads = [WORDINGS.get(v, v) if field == "type1" else v for v in shown]
            out.append(_type_table(title, runs, groups, shown, heads))
    return out


def _type_table(
    title: str,
    runs: list[RunData],
    groups: dict[int, dict[str, list[bool]]],
    values: list[str],
    heads: list[str],
) -> Table:
    rows: list[list[Cell]] = []
    for r in runs:
        got = groups.get(r.id, {})
        cells: list[Cell] = [
            {"value": 100 * sum(got[v]) / len(got[v]), "n": len(got[v])} if v in got else None
            for v in values
        ]
        rows.append([f"#{r.id}", r.who, r.label, *cells])
    return table(
        title,
        ["Run", "Model", "Setting", *heads],
        rows,
        "Accuracy (%) of the answered items of each type; the number of items in brackets.",
    )


def _calibration(runs: list[RunData]) -> tuple[Table | None, list[ChartSeries]]:
    from engine.exam.metrics import calibration

    rows: list[list[Cell]] = []
    series: list[ChartSeries] = []
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
    charts = [ci_chart(tables[0], 5, "Accuracy (%)")]
    if series:
        charts.append({"kind": "reliability", "title": "Reliability diagram", "series": series})
    comparisons = compare_all(runs, "rougeL", "ROUGE-L")
    return {"tables": tables, "comparisons": comparisons, "charts": charts}


def by_type_scores(summary: JSONDict) -> Breakdown | None:
    """A run's accuracy by question type from its summary (``Activity.breakdown``): the kind
    of question first, else the wording or the subject; None when it has none."""
    by_type = summary.get("by_type")
    if not isinstance(by_type, dict) or not by_type:
        return None
    field = next((f for f in ("type2", "type1", "type3") if f in by_type), next(iter(by_type)))
    block = by_type[field]
    if not isinstance(block, dict) or not all(isinstance(v, dict) for v in block.values()):
        return None
    return f"Accuracy by {TYPE_NAMES.get(field, field)}", [
        (k, float(v.get("accuracy") or 0.0), int(v.get("n") or 0)) for k, v in block.items()
    ]
