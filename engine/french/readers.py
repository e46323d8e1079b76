"""The FrenchMedMCQA paper's Table 2 layout: trained readers (:mod:`engine.french.train.reader`),
one row per encoder, one pair of columns (Hamming score, EMR) per context — without
context, then each corpus with BM25 and with MiniLM (dense) retrieval.

Built from the French runs a trained reader answered (``medexam french run --reader NAME``:
their ``reader`` and ``encoder`` settings); the runs of chat models are not in it.

>>> run = {"id": 3, "model": "r", "summary": {"hamming": 40.0, "emr": 20.0},
...        "settings": {"reader": "r", "encoder": "MiniLM", "retriever": "bm25", "corpus": "wiki"}}
>>> reader_table([run])["rows"]
[['MiniLM', 40.0, 20.0]]
>>> reader_table([run])["columns"]
['Encoder', 'wiki w/ BM25 Hamming', 'wiki w/ BM25 EMR']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Table
    from engine.types import Row

NO_CONTEXT = "Without context"
RETRIEVER_WORDS = {"bm25": "BM25", "dense": "MiniLM", "hybrid": "BM25+MiniLM"}


def context_of(settings: Row) -> str:
    """A reader run's column: ``Without context`` or ``CORPUS w/ BM25`` (or ``w/ MiniLM``)."""
    retriever = settings.get("retriever")
    if not settings.get("index") and not retriever:
        return NO_CONTEXT
    words = RETRIEVER_WORDS.get(str(retriever), str(retriever))
    return f"{settings.get('corpus') or settings.get('index')} w/ {words}"


def reader_table(runs: list[Row]) -> Table | None:
    """Table 2's layout over the stored ``runs`` that trained readers answered (the newest
    run of each encoder and context); None when there are none."""
    cells: dict[tuple[str, str], Row] = {}
    for run in sorted(runs, key=lambda r: int(r["id"])):
        settings = run.get("settings") or {}
        if not settings.get("reader"):
            continue
        encoder = str(settings.get("encoder") or run.get("model"))
        cells[(encoder, context_of(settings))] = run
    if not cells:
        return None
    contexts = sorted({c for _, c in cells}, key=lambda c: (c != NO_CONTEXT, c))
    encoders = list(dict.fromkeys(e for e, _ in cells))
    columns = ["Encoder"]
    for c in contexts:
        columns += [f"{c} Hamming", f"{c} EMR"]
    rows: list[list[Cell]] = []
    for encoder in encoders:
        row: list[Cell] = [encoder]
        for c in contexts:
            summary = (cells.get((encoder, c)) or {}).get("summary") or {}
            row += [summary.get("hamming"), summary.get("emr")]
        rows.append(row)
    runs_used = ", ".join(f"#{r['id']}" for r in cells.values())
    return {
        "title": "Trained readers by context (FrenchMedMCQA Table 2 layout)",
        "columns": columns,
        "rows": rows,
        "notes": [
            "Hamming score and EMR (%) of each encoder fine-tuned as the paper's reader "
            f"(runs {runs_used}; the newest run of each encoder and context)."
        ],
    }
