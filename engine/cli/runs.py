"""``medexam runs …``: review and export stored runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.reports import export
from engine.reports.answers import run_answers

if TYPE_CHECKING:
    from engine.types import Row
from engine.cli.common import (
    COUNT,
    ActivityChoice,
    echo_document,
    echo_json,
    json_option,
    pass_app,
    verdict_options,
)
from engine.errors import UserError
from engine.text.columns import align_rows, display_width, pad, short_text, visible


@click.group()
def runs() -> None:
    """Review, export and delete stored runs."""


@runs.command("list")
@click.option("--activity", type=ActivityChoice())
@click.option(
    "--filter",
    "match",
    metavar="TEXT",
    help="Only runs whose setting, model, data set or status contains TEXT.",
)
@click.option("--limit", type=COUNT, default=None)
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
            f"{r['id']:>4}  {r['activity']:<8} {pad(short_text(r['dataset'], 20), 20)} "
            f"{visible(r['model'])[:14]:<14} {r['status']:<11} "
            f"{r['n_done']:>4}/{r['n_total']:<4} {export.headline(r):>6}  "
            f"{(r['started'] or '')[:16].replace('T', ' '):<16}  {visible(r['label'])}"
        )


@runs.command("show")
@click.argument("run_id", type=int)
@json_option
@pass_app
def runs_show(app, run_id: int, as_json: bool) -> None:
    """One run: its settings, summary and answers (--json: everything as stored)."""
    if as_json:
        echo_json(export.run_detail(app.store, run_id))
        return
    run = export.run_detail(app.store, run_id)["run"]
    for line in _run_lines(run):
        click.echo(line)
    answers = run_answers(app.store, run_id, width=QUESTION_COLUMNS)
    if answers:
        click.echo("\nAnswers")
        for line in _answer_lines(answers, run["activity"]):
            click.echo(f"  {line}")


QUESTION_COLUMNS = 48
GIVEN_COLUMNS = 24
SCORE_HEADER = 16


def _run_lines(run: Row) -> list[str]:
    """A run's heading, settings and summary, labelled as its activity names them (the
    stored text's control characters escaped)."""
    from engine.activities import activity_name
    from engine.reports.render import fmt_number
    from engine.reports.results import summary_rows

    when = " → ".join((run[k] or "")[:16].replace("T", " ") for k in ("started", "finished"))
    who = run["model"] if run["model"] == run["runner"] else f"{run['model']} ({run['runner']})"
    lines = [
        f"Run {run['id']} · {activity_name(run['activity'])} · {run['dataset']} · "
        f"{who} · {run['status']}",
        f"  {run['label']}",
        f"  {when.rstrip(' →')} · {run['n_done']} of {run['n_total']} answered",
    ]
    if run.get("error"):
        lines.append(f"  error: {run['error']}")
    settings = ", ".join(f"{k}={v}" for k, v in (run["settings"] or {}).items())
    lines.append(f"  settings: {settings}")
    scorers = ", ".join(
        f"{s['scorer']} v{s['version']} ({s['answers']})" for s in run.get("scorers") or []
    )
    lines.append(f"  scored by: {scorers or 'no scorer yet'}")
    rows = summary_rows(run["summary"], run["activity"])
    if rows:
        lines += ["", "Summary"]
        lines += [
            f"  {x}"
            for x in align_rows(
                ["", ""], [[lb, fmt_number(v)] for _k, lb, v in rows], [False, True]
            )[1:]
        ]
    return [visible(line) for line in lines]


def _answer_lines(answers: Sequence[Row], activity: str) -> list[str]:
    """The answers as a table: number, question, given, gold, correct and each score (a
    score whose label is long is headed by its key, the label given under the table)."""
    from engine.reports.render import fmt_number
    from engine.reports.results import answer_label

    keys = list(
        dict.fromkeys(
            k
            for a in answers
            for k, v in (a["scores"] or {}).items()
            if k != "correct" and (v is None or isinstance(v, int | float))
        )
    )
    labels = {k: answer_label(k, activity) for k in keys}
    short = {k: lb if display_width(lb) <= SCORE_HEADER else k for k, lb in labels.items()}
    mark = {1: "yes", 0: "no"}
    rows = [
        [
            str(a["number"]),
            a["question"],
            short_text(a["chosen"] or "–", GIVEN_COLUMNS),
            short_text(a["gold"] or "–", GIVEN_COLUMNS),
            mark.get(a["correct"], "–"),
            *(fmt_number((a["scores"] or {}).get(k)) for k in keys),
        ]
        for a in answers
    ]
    lines = align_rows(["#", "Question", "Given", "Gold", "Correct", *short.values()], rows)
    return lines + [f"{k}: {labels[k]}" for k in keys if short[k] != labels[k]]


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
        raise UserError("an xlsx export needs a file: add --output FILE.xlsx")
    else:
        text = export.export_run(app.store, run_id, fmt or "csv")
    if output:
        export.save_text(output, text, "csv" if turns else fmt)
        click.echo(f"wrote {output}", err=True)
    else:
        echo_document(text, "csv" if turns else fmt or "csv")


@runs.command("delete")
@click.argument("run_ids", metavar="RUN_ID...", type=int, nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@pass_app
def runs_delete(app, run_ids: tuple[int, ...], yes: bool) -> None:
    """Delete runs with their answers and turns, after asking (y/N). The last delete can be
    undone with `medexam runs undelete`. A run still running in another medexam process is
    refused (stop it first)."""
    from engine.store.deleted import check_deletable, delete_runs

    for run_id in run_ids:
        check_deletable(app.store, run_id)
    if not yes:
        said = ", ".join(_delete_line(app.store.run(i)) for i in run_ids)
        try:
            sure = click.confirm(f"Delete {said}?", default=False, err=True)
        except click.Abort:  # no answer (end of input)
            sure = False
        if not sure:
            click.echo("nothing deleted (--yes deletes without asking)", err=True)
            sys.exit(1)
    delete_runs(app.store, run_ids)
    which = ", ".join(str(i) for i in run_ids)
    click.echo(f"deleted run{'s' if len(run_ids) > 1 else ''} {which} "
               "(undo: medexam runs undelete)")  # fmt: skip


def _delete_line(run: dict[str, Any]) -> str:
    """``run 3 (exam, smollm2 on explaincpe-test, 190 answers)``."""
    return visible(
        f"run {run['id']} ({run['activity']}, {run['model']} on {run['dataset']}, "
        f"{run['n_done']} answers)"
    )


@runs.command("undelete")
@pass_app
def runs_undelete(app) -> None:
    """Bring back the runs of the last `medexam runs delete` with their answers and turns."""
    from engine.store.deleted import restore_deleted

    ids = restore_deleted(app.store)
    click.echo(f"restored run{'s' if len(ids) > 1 else ''} {', '.join(str(i) for i in ids)}")


@runs.command("compare")
@click.argument("run_ids", metavar="RUN_ID RUN_ID...", type=int, nargs=-1, required=True)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False),
    help="Also write the quality-per-size chart (file size against score): SVG or PNG, as "
    "the file's suffix says.",
)
@click.option("--no-person", is_flag=True, help="Leave out a person's run on the same items.")
@verdict_options
@json_option
@pass_app
def runs_compare(
    app,
    run_ids: tuple[int, ...],
    chart: str | None,
    no_person: bool,
    margin: float,
    reference: str | None,
    as_json: bool,
) -> None:
    """Compare models: runs of one activity on one data set side by side on the items they
    all answered, each score with its 95% interval, the paired difference from the top
    model (or --reference) with its interval and p (Holm-adjusted for several runs), a
    verdict on each model against it: equivalent, not equivalent, worse or too few items
    within ± --margin points, from a paired equivalence test, each model's decode
    speed and time to first token alone, throughput at its slots, wait for a slot, peak
    memory, load time and file size, and how each run's numbers were made.

    \b
    medexam runs compare 3 4 5
    medexam runs compare 3 4 --json
    medexam runs compare 3 4 --margin 3 --reference smollm2
    """
    from engine.experiments.compare import compare_runs, format_compare
    from engine.experiments.size_chart import chart_format, drawn_size

    kind = chart_format(chart) if chart else None  # a suffix it cannot write: said at once
    result = compare_runs(
        app.store, list(run_ids), people=not no_person, margin=margin, reference=reference
    )
    if chart and kind:
        drawn = drawn_size(result["chart"], kind)
        if not drawn:
            raise UserError("no run knows its model's file size: there is no chart to draw")
        Path(chart).write_bytes(drawn)
        click.echo(f"wrote {chart}", err=True)
    if as_json:
        echo_json(result)
    else:
        echo_document(format_compare(result), "text")


@runs.command("diff")
@click.argument("run_a", type=int)
@click.argument("run_b", type=int)
@click.option(
    "--only",
    type=click.Choice(["flipped", "no-answer", "cut-off"]),
    help="Only the items that flipped (right in one run, wrong in the other), that either "
    "run gave no answer to, or that either run cut off at its token limit.",
)
@json_option
@pass_app
def runs_diff(app, run_a: int, run_b: int, only: str | None, as_json: bool) -> None:
    """Two runs of one data set item by item: each item's question, both replies, the
    answer and the rule read from each, why each reply stopped, right or wrong, and the
    scores.

    \b
    medexam runs diff 3 4 --only flipped
    medexam runs diff 3 4 --json
    """
    from engine.reports.diff import diff_runs, format_diff

    found = diff_runs(app.store, run_a, run_b, only)
    if as_json:
        echo_json(found.as_dict())
    else:
        click.echo(format_diff(found), nl=False)
