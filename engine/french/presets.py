"""French QA's experiment presets (:mod:`engine.experiments`): FrenchMedMCQA's Table 2
protocol — readers × contexts — as far as a French run's settings go: every model reads
each question with no passage, then with the 1, 3 and 5 best passages of each retrieval
index built here (``medexam french index``), one run per model × context. The report's
French section prints the Hamming score and EMR of each.
"""

from __future__ import annotations

from engine.experiments.plan import Cell, Preset, Request
from engine.registry import register

#: Passages per question tried with each index.
PASSAGES = (1, 3, 5)


def contexts() -> list[tuple[str | None, int]]:
    """``(index, k)`` of every context: none, then each built index with :data:`PASSAGES`."""
    from engine.french.index import list_indexes

    names = [str(m["name"]) for m in list_indexes() if m.get("name")]
    return [(None, 0)] + [(name, k) for name in names for k in PASSAGES]


def table2_cells(request: Request) -> list[Cell]:
    """Each model (the reader) × each context (:func:`contexts`)."""
    cells = []
    for model in request.models:
        for index, k in contexts():
            settings = {"model": model, "index": index, "k": k or 1, "limit": request.limit}
            words = f"{index} · {k} passage{'' if k == 1 else 's'}" if index else "no passage"
            coords = {"model": model, "index": index, "k": k}
            cells.append(Cell("french", request.dataset, settings, f"{model} · {words}", coords))
    return cells


register(
    "preset",
    Preset(
        "frenchmedmcqa-table2",
        "FrenchMedMCQA Table 2: readers × contexts",
        "french",
        table2_cells,
        dataset="fr-test",
        dataset_hint="a FrenchMedMCQA data set: "
        "medexam import frenchmedmcqa test.json --name fr-test",
    ),
)
