"""``medexam runs …``: review and export stored runs."""

from __future__ import annotations

import click

from engine import export
from engine.cli import cli
from engine.cli.common import echo_json, friendly_errors, json_option, pass_app
from engine.store import StoreError


@cli.group()
def runs() -> None:
    """Review, export and delete stored runs."""


@runs.command("list")
@click.option("--activity", type=click.Choice(["exam", "consult", "french"]))
@click.option("--limit", type=click.IntRange(1), default=None)
@json_option
@pass_app
def runs_list(app, activity: str | None, limit: int | None, as_json: bool) -> None:
    """Every run, newest first."""
    rows = app.store.runs(activity, limit)
    if as_json:
        echo_json(rows)
        return
    click.echo(
        f"{'id':>4}  {'activity':<8} {'dataset':<22} {'model':<14} {'status':<9} "
        f"{'done':>9}  {'score':>7}  started"
    )
    for r in rows:
        click.echo(
            f"{r['id']:>4}  {r['activity']:<8} {r['dataset'][:22]:<22} "
            f"{r['model'][:14]:<14} {r['status']:<9} {r['n_done']:>4}/{r['n_total']:<4} "
            f"{export.headline(r):>7}  {r['started']}"
        )


@runs.command("show")
@click.argument("run_id", type=int)
@json_option
@pass_app
@friendly_errors(StoreError)
def runs_show(app, run_id: int, as_json: bool) -> None:
    """One run: its settings, summary and answers."""
    detail = export.run_detail(app.store, run_id)
    if as_json:
        echo_json(detail)
        return
    run = detail["run"]
    for key in (
        "id",
        "activity",
        "dataset",
        "model",
        "runner",
        "status",
        "started",
        "finished",
        "n_done",
        "n_total",
        "error",
    ):
        click.echo(f"{key:>9}: {run[key]}")
    click.echo(f" settings: {run['settings']}")
    for key, value in run["summary"].items():
        click.echo(f"  {key}: {value}")
    for a in detail["answers"]:
        mark = {1: "✓", 0: "✗"}.get(a["correct"], "·")
        click.echo(f"  {mark} {a['item_key']}: chose {a['chosen']} (gold {a['gold']})")


@runs.command("export")
@click.argument("run_id", type=int)
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File (default: stdout).")
@pass_app
@friendly_errors(StoreError)
def runs_export(app, run_id: int, fmt: str, output: str | None) -> None:
    """Export a run's answers (and turns) as CSV or JSON."""
    text = export.export_run(app.store, run_id, fmt)
    if output:
        with open(output, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


@runs.command("delete")
@click.argument("run_id", type=int)
@pass_app
@friendly_errors(StoreError)
def runs_delete(app, run_id: int) -> None:
    """Delete a run with its answers and turns."""
    app.store.delete_run(run_id)
    click.echo(f"deleted run {run_id}")
