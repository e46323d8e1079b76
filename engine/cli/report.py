"""``medexam report RUN_ID…``: several runs side by side in their activity's paper layout."""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli.common import pass_app
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
@click.argument("run_ids", nargs=-1, type=int, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="text (default), md, csv, html or json; by default the --out file's suffix.",
)
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="File (default: stdout).")
@click.option("--title", default="medexam report", show_default=True, help="The report's title.")
@pass_app
def report(app, run_ids: tuple[int, ...], fmt: str | None, out: str | None, title: str) -> None:
    """Report runs RUN_IDS side by side: each activity's paper layout with one row per run,
    95% intervals, paired tests between runs on the same items and, in HTML, charts.

    \b
    medexam report 3 4 7
    medexam report 3 4 7 --out report.html      # one self-contained page
    """
    from engine.reports import build_report, render

    if fmt is None:
        fmt = SUFFIX_FORMATS.get(Path(out).suffix.lower(), "text") if out else "text"
    text = render(build_report(app.store, list(run_ids), title=title), fmt)
    if out:
        from engine.export import save_text

        save_text(out, text, fmt)
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)
