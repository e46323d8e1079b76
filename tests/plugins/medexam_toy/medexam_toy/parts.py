"""The toy activity's parts, imported when first used: its settings, scorer, run spec,
report section, command-line group and ``medexam import`` command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from engine.cli.common import AppContext, echo_json, pass_app
from engine.cli.importing import import_options
from engine.cli.running import RunOptions, execute_run, metric_lines, run_options
from engine.core.runs import Job, Spec
from engine.core.scoring import Metric, share_of_all
from engine.fields import Settings, from_dict, setting, settings_options
from engine.models.pool import ModelPool
from engine.registry import register
from engine.store.store import Store
from engine.types import JSONDict, Row
from medexam_toy.activity import TOY


@dataclass
class ToySettings(Settings):
    """How a model adds up the sums."""

    model: str | None = setting(None, help="Model that adds up.", kind="model")
    limit: int | None = setting(None, help="Only the first N sums.", min=1, form=False)


@register(
    "scorer",
    name="toy.exact",
    activities=("toy",),
    keys=("correct",),
    metrics={"accuracy": Metric("correct", share_of_all())},
)
def exact(answer: Row, item: Row, context: Any) -> dict[str, bool]:
    """Whether the reply is the sum."""
    return {"correct": (answer.get("chosen") or "").strip() == str(item["answer"])}


class ToyJob(Job):
    """A model answers each sum."""

    def __init__(self, store: Store, dataset: str, settings: JSONDict, pool: ModelPool):
        super().__init__()
        self.items = store.items(dataset, limit=settings["limit"])
        self.model = self.lease(pool, settings["model"])
        self.model_label, self.settings = self.model.name, settings

    def answer(self, item: Row, position: int) -> Row:
        reply = self.model.chat([{"role": "user", "content": f"{item['question']} = ?"}]).text
        return {"response": reply, "chosen": reply.strip(), "gold": str(item["answer"])}


def _settings(given: JSONDict) -> JSONDict:
    return from_dict(ToySettings, given).as_dict()


SPEC = Spec(TOY, _settings, ToyJob)  # its summary: counts and its scorer's metrics


def section(store: Store, runs: list[Any]) -> JSONDict:
    """The report's table of toy runs."""
    from engine.reports.shapes import table

    rows = [[f"#{r.id}", r.who, r.summary.get("accuracy")] for r in runs]
    return {"tables": [table("Sums", ["Run", "Model", "Right (%)"], rows)], "comparisons": []}


@click.group("toy")
def toy() -> None:
    """Sums for a model to add up."""


@toy.command("run")
@click.option("--dataset", help="Data set of sums (not with --resume).")
@settings_options(ToySettings)
@run_options
@pass_app
def toy_run(app: AppContext, dataset: str | None, settings: ToySettings, run: RunOptions) -> None:
    """A model adds up the sums of a data set; the run is stored."""
    if run.resume is None and not dataset:
        raise click.UsageError("give --dataset (or --resume RUN_ID)")

    def show(summary: JSONDict) -> None:
        metric_lines("toy", summary, TOY.run_keys)

    execute_run(app, "toy", dataset, settings, run, title="Sums", show=show)


@click.command("sums")
@import_options(exists=True)
def import_sums(app: AppContext, path: str, name: str | None, replace: bool, as_json: bool) -> None:
    """Import sums from JSON Lines (id, question, answer)."""
    from engine.importers import import_data

    found = import_data(app.store, "toy", "sums", path, name=name, replace=replace)
    if as_json:
        echo_json(found)
        return
    click.echo(found["message"])
