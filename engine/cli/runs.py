"""``medexam runs …``: review and export stored runs."""

from __future__ import annotations

import click

from engine import export
from engine.cli.common import echo_json, friendly_errors, json_option, pass_app
from engine.store import StoreError


@click.group()
def runs() -> None:
    """Review, export and delete stored runs."""


@runs.command("list")
@click.option("--activity", type=click.Choice(["exam", "consult", "french"]))
@click.option(
    "--filter",
    "match",
    metavar="TEXT",
    help="Only runs whose setting, model, data set or status contains TEXT.",
)
@click.option("--limit", type=click.IntRange(1), default=None)
@json_option
@pass_app
def runs_list(
    app, activity: str | None, match: str | None, limit: int | None, as_json: bool
) -> None:
    """Every run, newest first, with the settings that tell it apart."""
    from engine.reports.label import label_matches, run_label

    rows = app.store.runs(activity, None if match else limit)
    if match:
        rows = [r for r in rows if label_matches(r, match)][:limit]
    for r in rows:
        r["label"] = run_label(r)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no runs" + (f" match {match!r}" if match else " yet"))
        return
    click.echo(
        f"{'id':>4}  {'activity':<8} {'dataset':<20} {'model':<14} {'status':<11} "
        f"{'done':>9}  {'score':>6}  {'started':<16}  setting"
    )
    for r in rows:
        click.echo(
            f"{r['id']:>4}  {r['activity']:<8} {r['dataset'][:20]:<20} "
            f"{r['model'][:14]:<14} {r['status']:<11} {r['n_done']:>4}/{r['n_total']:<4} "
            f"{export.headline(r):>6}  {(r['started'] or '')[:16].replace('T', ' '):<16}  "
            f"{r['label']}"
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
        "label",
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
    "--format",
    "fmt",
    type=click.Choice(export.FORMATS),
    help="csv (default), json or xlsx; by default the --output file's suffix.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="File (default: stdout); a CSV of a consultation run writes its turns beside it.",
)
@click.option("--turns", is_flag=True, help="Print the consultation turns (CSV) instead.")
@pass_app
@friendly_errors(StoreError, ValueError)
def runs_export(app, run_id: int, fmt: str | None, output: str | None, turns: bool) -> None:
    """Export a run: CSV (one row per answer, with the question, its options and type, the
    gold answer beside the response and one column per score), JSON (everything) or XLSX."""
    if output and not turns:
        for path in export.write_export(app.store, run_id, output, fmt):
            click.echo(f"wrote {path}", err=True)
        return
    if turns:
        text = export.export_turns(app.store, run_id)
    elif fmt == "xlsx":
        raise ValueError("an xlsx export needs a file: add --output FILE.xlsx")
    else:
        text = export.export_run(app.store, run_id, fmt or "csv")
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
