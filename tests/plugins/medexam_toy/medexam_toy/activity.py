"""The toy activity registered: its descriptor and the importer of its data sets."""

from __future__ import annotations

import json

from engine.activities import RUN_SPEC, Activity
from engine.importers import Format, Request
from engine.registry import CLASS, COMMAND, FUNCTION, Lazy, register
from engine.store.store import Store
from engine.types import Row

TOY = register(
    "activity",
    Activity(
        "toy",
        "Sums",
        "accuracy",
        "sum",
        {"accuracy": "Sums right (%)"},
        ("accuracy", "answered"),
        spec=Lazy("medexam_toy.parts", "SPEC", RUN_SPEC),
        settings=Lazy("medexam_toy.parts", "ToySettings", CLASS),
        scorers=("toy.exact",),
        scorers_from=("medexam_toy.parts",),
        cli=Lazy("medexam_toy.parts", "toy", COMMAND),
        import_commands={"sums": Lazy("medexam_toy.parts", "import_sums", COMMAND)},
        import_title="Sums to do",
        report=Lazy("medexam_toy.parts", "section", FUNCTION),
        screen=Lazy("medexam_toy.screen", "SumsScreen", CLASS),
        item_widget=Lazy("medexam_toy.item", "SumsItem", CLASS),
        description="Sums for a model to add up",
    ),
)


def import_sums(store: Store, req: Request) -> Row:
    """Store a JSON Lines file of sums (``id``, ``question``, ``answer``) as a data set."""
    with open(req.source, encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh if line.strip()]
    name = req.name or req.stem
    store.add_dataset(name, "toy", items, replace=req.replace)
    return store.dataset(name)


register(
    "format",
    Format(
        "toy",
        "sums",
        "Sums (JSON Lines)",
        import_sums,
        "Sums (*.jsonl)",
        message="Imported {n_items} sums as “{name}”.",
    ),
)
