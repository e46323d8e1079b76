"""``medexam rescore RUN``: score a stored run again, with its own scorers or others, without
running its model."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

import click

from engine.cli.common import COUNT, AppContext, echo_json, json_option, load_options, pass_app
from engine.cli.running import progress_bar

if TYPE_CHECKING:
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool


@click.command("rescore")
@click.argument("run_id", type=int)
@click.option(
    "--scorer",
    "scorers",
    multiple=True,
    metavar="NAME",
    help="A scorer to apply (repeat for several; default: the run's activity's own). "
    "`medexam scorers` names them.",
)
@click.option(
    "--judge",
    metavar="MODEL",
    help="The model a judge scorer (explanation-judge) rates with: a local GGUF or a "
    "served model, as `medexam models list` names them.",
)
@click.option(
    "--limit",
    type=COUNT,
    help="Score only N answers: those people rated first, then the run's first.",
)
@click.option("--force", is_flag=True, help="Score again the answers a scorer already scored.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@load_options
@json_option
@pass_app
def rescore(
    app: AppContext,
    run_id: int,
    scorers: tuple[str, ...],
    judge: str | None,
    limit: int | None,
    force: bool,
    quiet: bool,
    as_json: bool,
    load: LoadSettings,
) -> None:
    """Score the stored answers of run RUN_ID again and store the new scores and summary.

    The model is not run: each scorer reads the answers as stored (a scorer that needs a
    model, such as a judge, loads that one). An answer already scored by a scorer's current
    version is skipped unless --force, so an interrupted rescore continues where it stopped.

    \b
    medexam rescore 12
    medexam rescore 12 --scorer exam.rouge --force
    medexam rescore 12 --scorer explanation-judge --judge qwen2.5-7b --limit 20
    """
    from engine.activities import activity
    from engine.cli.running import metric_lines
    from engine.core.progress import Cancel
    from engine.core.scoring import activity_metrics
    from engine.core.scoring import rescore as rescore_run
    from engine.models.pool import default_pool

    cancel = Cancel()
    run = app.store.run(run_id)
    try:
        with progress_bar(f"scoring run {run_id}", quiet) as update:
            done = rescore_run(
                app.store,
                run_id,
                list(scorers),
                pool=cast("ModelPool", default_pool().lending(load)),  # lends as a pool
                progress=update,
                cancel=cancel,
                force=force,
                options={"judge": judge} if judge else {},
                limit=limit,
            )
    except KeyboardInterrupt:
        click.echo("stopped; what was scored is kept (run it again to go on)", err=True)
        sys.exit(130)
    if as_json:
        echo_json(
            {
                "run_id": run_id,
                "summary": done.summary,
                "scored": done.scored,
                "skipped": done.skipped,
                "scorers": app.store.run_scorers(run_id),
            }
        )
        return
    act = activity(run["activity"])
    for name, n in done.scored.items():
        skipped = done.skipped[name]
        kept = f", {skipped} already scored by this version (--force scores them again)"
        click.echo(f"{name}: {n} answers scored" + (kept if skipped else ""))
    added = [k for k in activity_metrics(act.id, added=True) if k not in act.run_keys]
    metric_lines(act.id, done.summary, [*act.run_keys, *added])


@click.command("scorers")
@click.option("--activity", "activity_id", metavar="ID", help="Only this activity's scorers.")
@json_option
def scorers_list(activity_id: str | None, as_json: bool) -> None:
    """The scorers medexam has: name, version, activities, what each scores."""
    from engine.core.scoring import scorers

    found = scorers(activity_id)
    if as_json:
        echo_json(
            [
                {
                    "name": s.name,
                    "version": s.version,
                    "activities": list(s.activities),
                    "keys": list(s.keys),
                    "needs_model": s.needs_model,
                    "description": s.description,
                }
                for s in found.values()
            ]
        )
        return
    for s in sorted(found.values(), key=lambda s: s.name):
        click.echo(f"{s.name} v{s.version} ({', '.join(s.activities)}): {s.description}")
