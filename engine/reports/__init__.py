"""Reports over stored runs, in the layouts of the papers each activity follows, with 95%
intervals and paired significance tests; and the short label that tells runs apart.

>>> report = build_report(store, [3, 4, 7])          # doctest: +SKIP
>>> print(render(report, "text"))                     # doctest: +SKIP
>>> Path("report.html").write_text(render(report, "html"))   # doctest: +SKIP

A report is a plain dict (what ``json`` prints): ``title``, ``created``, ``runs`` (each
stored run with its ``label``), ``overview`` (a table of the runs) and ``sections``, one per
activity, each with its ``tables`` (see :mod:`engine.reports.layouts`), ``comparisons`` (two
runs on their common items: different answers, McNemar, paired bootstrap) and ``charts``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from engine.reports.label import label_matches, run_label
from engine.reports.render import FORMATS, render

if TYPE_CHECKING:
    from engine.reports.layouts import RunData
    from engine.reports.shapes import Report, Section, Table
    from engine.store.store import Store
    from engine.types import Row

__all__ = ["FORMATS", "build_report", "label_matches", "render", "run_label"]


def _overview(runs: list[Row]) -> Table:
    from engine.activities import activity_name
    from engine.reports.shapes import table

    rows = [
        [
            f"#{r['id']}",
            activity_name(r["activity"]),
            r["label"],
            "you" if r.get("runner") == "person" else r.get("model"),
            r.get("dataset"),
            r.get("status"),
            f"{r.get('n_done', 0)}/{r.get('n_total', 0)}",
            (r.get("started") or "")[:16].replace("T", " "),
            ", ".join(f"{s['scorer']} v{s['version']}" for s in r.get("scorers") or []) or "–",
        ]
        for r in runs
    ]
    columns = [
        "Run",
        "Activity",
        "Setting",
        "Model",
        "Data set",
        "Status",
        "Done",
        "Started",
        "Scored by",
    ]
    return table("The runs in this report", columns, rows)


def _methods(section: Section, data: list[RunData]) -> list[str]:
    """The statistical methods a section's tables use, named as the notes name them: a
    bootstrap only where a run has the items one needs."""
    from engine.reports.ppi import METHOD as PPI_METHOD
    from engine.reports.stats import METHODS, MIN_ITEMS

    titles = " ".join(t["title"] for t in section["tables"])
    resampled = any(len(run.answers) >= MIN_ITEMS for run in data)
    used = ["wilson", "bootstrap"] if resampled else ["wilson"]
    if section["comparisons"]:
        used += ["newcombe", "McNemar", "paired bootstrap"][: 3 if resampled else 2]
    if "trial" in titles.lower() and resampled:
        used.append("cluster bootstrap")
    corrected = ["prediction-powered" in t["title"] for t in section["tables"]]
    return [METHODS[k] for k in used] + ([PPI_METHOD] if any(corrected) else [])


def build_report(store: Store, run_ids: list[int], title: str = "medexam report") -> Report:
    """The report of the runs ``run_ids`` (each once, in the order given; an unknown id
    raises :class:`engine.store.store.StoreError`): one section per activity."""
    from engine.activities import activities, activity_name
    from engine.core.trials import trial_tables
    from engine.ratings.table import rating_tables
    from engine.reports.diff import diff_runs
    from engine.reports.layouts import RunData, changed_note, comparison_table, coverage_note
    from engine.reports.provenance import made_table

    runs: list[Row] = []
    for i in dict.fromkeys(int(i) for i in run_ids):
        r = store.run(i)
        runs.append({**r, "label": run_label(r), "scorers": store.run_scorers(i)})
    every = {int(r["id"]): RunData(store, r) for r in runs}
    sections: list[Section] = []
    for act, found in activities().items():
        data = [every[int(r["id"])] for r in runs if r["activity"] == act]
        if not data or not found.report:
            continue
        section = found.report.load()(store, data)
        for note in (coverage_note(data), changed_note(data)):
            if note and section["tables"]:
                section["tables"][0]["notes"].append(note)
        section["tables"] += rating_tables(store, [r.id for r in data])
        section["tables"] += trial_tables(store, [r.id for r in data])
        compared = comparison_table(section["comparisons"])
        if compared is not None:
            section["tables"].append(compared)
            section["sides"] = [
                diff_runs(store, c["a"], c["b"]).as_dict() for c in section["comparisons"]
            ]
        section["tables"].append(made_table(store, data, _methods(section, data)))
        sections.append({"activity": act, "name": activity_name(act), **section})
    overview = _overview(runs)
    overview["notes"] += [n for n in [changed_note(list(every.values()))] if n]
    return {
        "title": title,
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "runs": runs,
        "overview": overview,
        "sections": sections,
    }
