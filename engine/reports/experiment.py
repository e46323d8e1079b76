"""An experiment's report: every run of it in its activity's layout (:func:`build_report`),
led by a section of the experiment's own — its grid (each run's setting and status) and the
tables and figures its preset draws (``Preset.report``: ExplainCPE's Table 8, Table 3 and
Figure 3…). The figures can also be written as files (each as SVG and PNG).

>>> report = experiment_report(store, 1)                          # doctest: +SKIP
>>> Path("table8.html").write_text(render(report, "html"))       # doctest: +SKIP
>>> write_figures(report, "figures")                              # doctest: +SKIP
['figures/explaincpe-figure-3-….svg', 'figures/explaincpe-figure-3-….png']
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.reports.shapes import table

if TYPE_CHECKING:
    from engine.reports.layouts import RunData
    from engine.reports.shapes import Report, Section, Table
    from engine.store.store import Store
    from engine.types import JSONDict


class ExperimentReportError(UserError):
    """An experiment with nothing to report yet."""


def _first_items(limit: int) -> str:
    """``; the first 3 items`` (``; the first item`` for one)."""
    return "; the first item" if limit == 1 else f"; the first {limit} items"


def grid_table(experiment: JSONDict) -> Table:
    """The experiment's runs in order: setting, run, status, items done."""
    rows = []
    for cell in experiment["cells"]:
        run = cell.get("run") or {}
        done = f"{run.get('n_done', 0)}/{run.get('n_total', 0)}" if run else "–"
        status = cell["status"] + (" (reused)" if cell.get("reused") else "")
        run_id = f"#{cell['run_id']}" if cell["run_id"] is not None else "–"
        rows.append([cell["label"], run_id, status, done])
    spec = experiment["spec"]
    return table(
        f"The runs of experiment {experiment['id']} ({experiment['status']})",
        ["Setting", "Run", "Status", "Done"],
        rows,
        f"Data set {spec.get('dataset')}; models {', '.join(spec.get('models') or [])}"
        + (_first_items(spec["limit"]) if spec.get("limit") else ""),
    )


def experiment_runs(store: Store, experiment: JSONDict) -> list[tuple[JSONDict, RunData]]:
    """The experiment's cells that have a run with answers, each run once (a run two cells
    share comes with the first), with that run's data: what a preset's figures draw."""
    from engine.reports.layouts import RunData

    out, seen = [], set()
    for cell in experiment["cells"]:
        run = cell.get("run")
        if run is not None and int(run.get("n_done") or 0) > 0 and run["id"] not in seen:
            seen.add(run["id"])
            out.append((cell, RunData(store, run)))
    return out


def experiment_section(store: Store, experiment: JSONDict) -> Section:
    """The experiment's own section: its grid, then its preset's tables and figures."""
    from engine.experiments.plan import preset_of

    tables, charts = [grid_table(experiment)], []
    preset = preset_of(experiment)
    if preset is not None and preset.report:
        part = preset.report.load()(store, experiment)
        tables += part["tables"]
        charts += part["charts"]
    return {
        "activity": "experiment",
        "name": f"Experiment {experiment['id']}: {experiment['title']}",
        "tables": tables,
        "comparisons": [],
        "charts": charts,
    }


def experiment_report(store: Store, experiment_id: int, title: str | None = None) -> Report:
    """The report of experiment ``experiment_id`` (see the module's doc)."""
    from engine.experiments.records import get
    from engine.reports import build_report

    experiment = get(store, experiment_id)
    run_ids = [int(c["run_id"]) for c in experiment["cells"] if c["run_id"] is not None]
    if not run_ids:
        raise ExperimentReportError(
            f"experiment {experiment_id} has no runs yet (medexam experiment run {experiment_id})"
        )
    report = build_report(store, run_ids, title=title or experiment["title"])
    report["sections"].insert(0, experiment_section(store, experiment))
    return report


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "figure"


def write_figures(report: Report, folder: str | Path) -> list[str]:
    """Write every chart of ``report`` into ``folder`` (made if need be) as SVG and as PNG,
    each a file of medexam's own (a link found in its place is replaced, never written
    through: :func:`engine.paths.write_own`); the paths written."""
    from engine.paths import write_own
    from engine.reports.charts import chart_figure, png, svg

    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for section in report["sections"]:
        for n, chart in enumerate(section["charts"], start=1):
            fig = chart_figure(chart)
            if fig is None:
                continue
            stem = out_dir / f"{_slug(section.get('name', ''))}-{n}-{_slug(chart['title'])}"
            written.append(str(write_own(stem.with_suffix(".svg"), svg(fig).encode("utf-8"))))
            written.append(str(write_own(stem.with_suffix(".png"), png(fig))))
    return written
