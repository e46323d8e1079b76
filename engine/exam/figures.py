"""ExplainCPE's tables and figure drawn from an experiment of ``explaincpe-table8``
(:mod:`engine.exam.presets`): Table 8 (every setting's accuracy and ROUGE, per model),
Table 3 (each model's best setting) and Figure 3 (accuracy against the number of examples,
a line per model with and without the instruction, each point with its 95% Wilson interval;
chat models and base models in panels of their own).

A line joins only runs that differ in their number of examples alone: runs of the same model
and instruction that differ in anything else (method, language, item limit, seed…) are
lines of their own, never one trend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.exam.presets import setting_words
from engine.reports.shapes import table

if TYPE_CHECKING:
    from engine.reports.layouts import RunData
    from engine.reports.shapes import Cell, Chart, Table
    from engine.store.store import Store
    from engine.types import JSONDict

#: Stored settings that do not separate lines (the number of examples is the x axis; the
#: context a run's model loaded with is sized to its prompts).
NOT_A_LINE = ("shots", "shot_ids", "concurrency", "slots", "load", "trial", "trial_set", "trials")
CI_NOTE = "Brackets hold the 95% Wilson interval; unanswered questions count as wrong."


def _runs(store: Store, experiment: JSONDict) -> list[tuple[JSONDict, RunData]]:
    """The experiment's cells that have a run with answers, with that run's data."""
    from engine.reports.layouts import RunData

    out = []
    for cell in experiment["cells"]:
        run = cell.get("run")
        if run is not None and int(run.get("n_done") or 0) > 0:
            out.append((cell, RunData(store, run)))
    return out


def _order(cell: JSONDict) -> tuple[Any, ...]:
    c = cell["coords"]
    return (str(c.get("model")), not c.get("instruction"), int(c.get("shots") or 0))


def _accuracy(r: RunData) -> JSONDict | None:
    return r.share_cell(r.correct, r.n)  # type: ignore[return-value]


def _different_items(found: list[tuple[JSONDict, RunData]]) -> str:
    sizes = sorted({r.n for _, r in found})
    if len(sizes) > 1:
        return (
            "These runs cover different items ("
            + ", ".join(str(n) for n in sizes)
            + " questions): compare their rows with care."
        )
    return ""


def _no_room(experiment: JSONDict) -> list[JSONDict]:
    """The cells whose model cannot play them (their prompts do not fit its context)."""
    from engine.experiments.records import NO_ROOM

    return [c for c in experiment["cells"] if c["status"] == NO_ROOM]


def table8(found: list[tuple[JSONDict, RunData]], no_room: Sequence[JSONDict] = ()) -> Table:
    """Every setting's row: its run's accuracy and ROUGE, or why its model cannot play it."""
    rows: list[list[Cell]] = []
    cells: list[tuple[JSONDict, RunData | None]] = [*found, *((c, None) for c in no_room)]
    for cell, r in sorted(cells, key=lambda f: _order(f[0])):
        c = cell["coords"]
        words = setting_words(int(c.get("shots") or 0), bool(c.get("instruction")))
        if r is None:
            why = f"{cell['status']}: {cell['error']}"
            rows.append([str(c.get("model")), words, "–", None, None, None, None, None, why])
            continue
        s = r.summary
        rows.append(
            [
                str(c.get("model")),
                words,
                f"#{r.id}",
                r.n,
                _accuracy(r),  # type: ignore[list-item]
                *(s.get(k) for k in ("rouge1", "rouge2", "rougeL")),
                cell["status"],
            ]
        )
    columns = ["Model", "Setting", "Run", "Items", "Accuracy (%)"]
    return table(
        "ExplainCPE Table 8: accuracy and explanation ROUGE by setting",
        [*columns, "ROUGE-1", "ROUGE-2", "ROUGE-L", "Status"],
        rows,
        CI_NOTE,
        _different_items(found),
    )


def _share(r: RunData) -> float:
    return r.correct / max(r.n, 1)


def table3(found: list[tuple[JSONDict, RunData]]) -> Table:
    """Each model's best setting by accuracy (its finished runs; the first in Table 8's order
    of those tied, saying how many tie)."""
    by_model: dict[str, dict[int, tuple[JSONDict, RunData]]] = {}
    for cell, r in sorted(found, key=lambda f: _order(f[0])):
        if cell["status"] == "finished":
            by_model.setdefault(str(cell["coords"].get("model")), {}).setdefault(r.id, (cell, r))
    rows = []
    for model, runs in by_model.items():
        cell, r = max(runs.values(), key=lambda f: _share(f[1]))  # the first of the best
        tied = sum(_share(other) == _share(r) for _, other in runs.values()) - 1
        c = cell["coords"]
        words = setting_words(int(c.get("shots") or 0), bool(c.get("instruction")))
        words += f" (tied with {tied} other{'s' if tied > 1 else ''})" if tied else ""
        rows.append([model, words, _accuracy(r), r.summary.get("rougeL"), f"#{r.id}", len(runs)])
    return table(
        "ExplainCPE Table 3: each model's best setting",
        ["Model", "Best setting", "Accuracy (%)", "ROUGE-L", "Run", "Runs compared"],
        rows,  # type: ignore[arg-type]
        CI_NOTE,
        "The best of several settings on the same questions is picked by its own score: "
        "its interval is that run's and does not allow for the picking.",
    )


def _line_key(cell: JSONDict, r: RunData) -> str:
    """What one line shares: the cell's model and instruction (a 0-shot run may serve the
    rows with and without it), every other stored setting but the examples, the items."""
    skip = (*NOT_A_LINE, "instruction")
    settings = {k: v for k, v in (r.run.get("settings") or {}).items() if k not in skip}
    coords = [cell["coords"].get("model"), bool(cell["coords"].get("instruction"))]
    return json.dumps([coords, settings, r.n], sort_keys=True, default=str)


def figure3(found: list[tuple[JSONDict, RunData]]) -> Chart:
    """Accuracy against the examples, a line per model × instruction (× anything else that
    differs), chat and base models in separate panels."""
    lines: dict[str, JSONDict] = {}
    for cell, r in sorted(found, key=lambda f: _order(f[0])):
        c = cell["coords"]
        acc = _accuracy(r)
        if acc is None:
            continue
        key = _line_key(cell, r)
        if key not in lines:
            chat = (r.run.get("settings") or {}).get("chat_template")
            name = f"{c.get('model')} {'w/' if c.get('instruction') else 'w/o'} instruction"
            same = sum(line["base"] == name for line in lines.values())
            lines[key] = {
                "base": name,
                "name": name + (f" ({same + 1})" if same else ""),
                "panel": "chat models" if chat else "base models (no chat template)",
                "dashed": not c.get("instruction"),
                "points": [],
            }
        point = {"x": int(c.get("shots") or 0), **acc, "run_id": r.id}
        lines[key]["points"].append(point)
    series = [{k: v for k, v in line.items() if k != "base"} for line in lines.values()]
    return {
        "kind": "lines",
        "title": "ExplainCPE Figure 3: accuracy against the number of examples",
        "axis": "Accuracy (%)",
        "x_axis": "Solved examples in the prompt",
        "series": series,  # type: ignore[typeddict-item]
    }


def table8_report(store: Store, experiment: JSONDict) -> JSONDict:
    """Table 8, Table 3 and Figure 3 of an ``explaincpe-table8`` experiment."""
    found, no_room = _runs(store, experiment), _no_room(experiment)
    if not found and not no_room:
        return {"tables": [], "charts": []}
    if not found:
        return {"tables": [table8(found, no_room)], "charts": []}
    return {
        "tables": [table8(found, no_room), table3(found)],
        "charts": [figure3(found)],
    }
