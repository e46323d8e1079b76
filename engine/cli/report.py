"""``medexam report RUN_ID…``: several runs side by side in their activity's paper layout."""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli.common import echo_document, pass_app
from engine.reports.render import FORMATS

#: The format a file's suffix asks for when ``--format`` is not given.
SUFFIX_FORMATS = {
    ".txt": "text",
    ".md": "md",
    ".csv": "csv",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
}


@click.command("report")
@click.argument("run_ids", nargs=-1, type=int)
@click.option(
    "--experiment",
    "experiment_id",
    type=int,
    help="Report an experiment's runs, led by its paper's tables and figures.",
)
@click.option(
    "--figures",
    type=click.Path(file_okay=False),
    help="Also write the report's figures into this folder (each as SVG and PNG).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="text (default), md, csv, html or json; by default the --out file's suffix.",
)
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="File (default: stdout).")
@click.option("--title", help="The report's title (default: medexam report, or the experiment's).")
@pass_app
def report(
    app,
    run_ids: tuple[int, ...],
    experiment_id: int | None,
    figures: str | None,
    fmt: str | None,
    out: str | None,
    title: str | None,
) -> None:
    """Report runs RUN_IDS side by side: each activity's paper layout with one row per run,
    95% intervals, paired tests between runs on the same items and, in HTML, charts.

    \b
    medexam report 3 4 7
    medexam report 3 4 7 --out report.html      # one self-contained page
    medexam report --experiment 1 --out table8.html --figures figures
    """
    from engine.reports import build_report, render

    if fmt is None:
        fmt = SUFFIX_FORMATS.get(Path(out).suffix.lower(), "text") if out else "text"
    if experiment_id is not None and run_ids:
        raise click.UsageError("give run ids or --experiment ID, not both")
    if experiment_id is not None:
        from engine.reports.experiment import experiment_report

        built = experiment_report(app.store, experiment_id, title)
    elif run_ids:
        built = build_report(app.store, list(run_ids), title=title or "medexam report")
    else:
        raise click.UsageError("give the run ids to report, or --experiment ID")
    if figures:
        from engine.reports.experiment import write_figures

        for path in write_figures(built, figures):
            click.echo(f"wrote {path}", err=True)
    text = render(built, fmt)
    if out:
        from engine.reports.export import save_text

        save_text(out, text, fmt)
        click.echo(f"wrote {out}", err=True)
    else:
        echo_document(text, fmt)
