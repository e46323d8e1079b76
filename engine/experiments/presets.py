"""The presets of no one activity: ``compare-models``, the same items of a data set through
every model, each with the activity's default settings; its summary and report compare them
paired, with speed and memory (:mod:`engine.experiments.compare`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from engine.experiments.plan import Cell, PlanError, Preset, Request, model_setting
from engine.registry import FUNCTION, Lazy, register
from engine.reports.equivalence import MARGIN

if TYPE_CHECKING:
    from engine.reports.shapes import Cell as TableCell
    from engine.store.store import Store
    from engine.types import JSONDict


def compare_cells(request: Request) -> list[Cell]:
    """One run per model over the data set, the model in its activity's model setting."""
    if request.store is None:
        raise PlanError("compare-models needs the data set's store")
    activity = request.store.dataset(request.dataset)["activity"]
    key = model_setting(activity)
    return [
        Cell(activity, request.dataset, {key: m, "limit": request.limit}, m, {"model": m})
        for m in request.models
    ]


def _finished(experiment: JSONDict) -> list[int]:
    return [int(c["run_id"]) for c in experiment["cells"] if c["status"] == "finished"]


def compare_summary(
    store: Store, experiment: JSONDict, margin: float = MARGIN, reference: str | None = None
) -> tuple[JSONDict, str] | None:
    """The comparison of the experiment's finished runs
    (:func:`engine.experiments.compare.compare_runs`, each model judged against
    ``reference`` within ± ``margin`` points) and its text table; None before two runs
    finished."""
    from engine.experiments.compare import compare_runs, format_compare

    ids = list(dict.fromkeys(_finished(experiment)))
    if len(ids) < 2:
        return None
    result = compare_runs(store, ids, margin=margin, reference=reference)
    return result, format_compare(result)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def compare_report(store: Store, experiment: JSONDict) -> JSONDict:
    """The comparison as a report table: each model's scores with their intervals, the
    paired difference of the first from the reference (the top model, or one named) with
    its p and each model's verdict against it, whether each is above chance, its replies
    without an answer, speed and memory."""
    from engine.experiments.compare import SPEEDS
    from engine.experiments.verdicts import verdict_text
    from engine.reports.shapes import table

    found = compare_summary(store, experiment)
    if found is None:
        return {"tables": [], "charts": []}
    result = found[0]
    metrics = result["metrics"]
    lead = metrics[0]["key"] if metrics else None
    rows: list[list[TableCell]] = []
    for r in result["rows"]:
        diff = (r.get("paired") or {}).get(lead) if lead else None
        cells: list[TableCell] = [f"#{r['run_id']}", str(r["model"]), r["items"]]
        scores = [r["scores"].get(m["key"]) for m in metrics]
        cells += [cast("TableCell", {**c, "n": None}) if c else None for c in scores]  # n: Items
        if r["reference"]:
            cells += ["best" if r["best"] else "ref", None]
        elif diff is None:
            cells += [None, None]
        else:
            shown: TableCell = {"value": diff.get("diff"), "low": diff.get("low"),
                                "high": diff.get("high"), "too_few": diff.get("too_few")}  # fmt: skip
            cells += [shown, _number(diff.get("p"))]
        cells.append(verdict_text(r))
        chance, shares = r.get("chance"), r.get("no_answer")
        cells += [
            None if not chance else ("above" if chance["above"] else "not above"),
            None if not chance else chance["p"],
            None if shares is None else round(sum(shares.values()), 1),
            _number(r.get("cut_off")),
        ]
        memory = r.get("memory") or {}
        ram = memory.get("ram_peak")
        cells += [_number(r.get(key)) for key, _, _ in SPEEDS]
        cells += [
            None if not ram else round(ram / 2**20),
            _number(r.get("load_s")),
        ]
        rows.append(cells)
    name = metrics[0]["label"] if metrics else ""
    columns = ["Run", "Model", "Items"]
    columns += [m["label"] + (" (%)" if m.get("percent") else "") for m in metrics]
    columns += [f"Δ {name} from the reference", "p", f"Verdict (± {result['margin']:g} points)"]
    columns += ["vs chance", "p (vs chance)"]
    columns += ["No answer (%)", "Cut off (%)", *(header for _, header, _ in SPEEDS)]
    columns += ["RAM peak (MiB)", "Load (s)"]
    title = f"Models compared on {result['dataset']}: {result['items']['shared']} items"
    return {"tables": [table(title, columns, rows, *result.get("notes", []))], "charts": []}


register(
    "preset",
    Preset(
        "compare-models",
        "The same items through every model",
        None,
        compare_cells,
        report=Lazy("engine.experiments.presets", "compare_report", FUNCTION),
        dataset_hint="any data set: medexam import …",
        summary=Lazy("engine.experiments.presets", "compare_summary", FUNCTION),
    ),
)
