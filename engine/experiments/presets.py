"""The presets of no one activity: ``compare-models``, the same items of a data set through
every model, each with the activity's default settings (its report compares them paired,
with speed and memory: :mod:`engine.experiments.compare`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.experiments.plan import Cell, PlanError, Preset, Request, model_setting
from engine.registry import register_preset

if TYPE_CHECKING:
    from engine.store import Store
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


def compared(store: Store, run_ids: list[int]) -> tuple[JSONDict | None, str]:
    """The comparison of the runs (:func:`engine.experiments.compare.compare_runs`) and its
    text table; ``(None, why)`` when it cannot be made here."""
    try:
        from engine.experiments.compare import compare_runs, format_compare
    except ImportError:
        return None, "the model comparison is not available in this version"
    result = compare_runs(store, run_ids)
    return result, format_compare(result)


def compare_report(store: Store, experiment: JSONDict) -> JSONDict:
    """The comparison of an experiment's finished runs, as a report part."""
    from engine.reports.shapes import table

    ids = [int(c["run_id"]) for c in experiment["cells"] if c["status"] == "finished"]
    if len(ids) < 2:
        return {"tables": [], "charts": []}
    _result, text = compared(store, ids)
    lines = text.splitlines() or [text]
    return {
        "tables": [
            table("Models compared on the same items", ["Comparison"], [[line] for line in lines])
        ],
        "charts": [],
    }


register_preset(
    Preset(
        "compare-models",
        "The same items through every model",
        None,
        compare_cells,
        report="engine.experiments.presets:compare_report",
        dataset_hint="any data set: medexam import …",
    )
)
