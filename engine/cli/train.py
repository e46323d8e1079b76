"""``medexam train …``: train a model as a job like a run (a thin shell over
:mod:`engine.train`): one command per training kind (``train french-reader``), and
``train list``, ``train show``, ``train resume``."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from typing import Any

import click

from engine.cli.common import AppContext, echo_json, json_option, pass_app
from engine.cli.running import RunOptions, execute_run, metric_lines, progress_bar, run_options
from engine.core.progress import Cancel, Cancelled, Progress
from engine.fields import as_dict, settings_options
from engine.train.evaluate import trained_model
from engine.train.kinds import TrainingKind, get_kind, kinds


@click.group()
def train() -> None:
    """Train models: the papers' own baselines (a FrenchMedMCQA reader…), stored like runs
    and usable by name once trained."""


def _note(p: Progress) -> str:
    info = p.info
    if "loss" not in info:
        return p.message
    return f"{p.message} · loss {info['loss']:.3f} · {info.get('examples_per_s', 0):.1f} ex/s"


def _started(app: AppContext, quiet: bool, found: list[int]) -> Any:
    from engine.train.records import get

    def on_start(training_id: int) -> None:
        found.append(training_id)
        if not quiet:
            row = get(app.store, training_id)
            about = (row["data"] or {}).get("about")
            click.echo(
                f"training {training_id} ({row['kind']} {row['name']!r}) on {row['device']}: "
                + (f"{about}, " if about else "")
                + f"{row['n_steps']} steps",
                err=True,
            )

    return on_start


def _kind_of(row: dict[str, Any]) -> TrainingKind | None:
    """The kind of training ``row`` (None: no installed package registers it now)."""
    return kinds().get(str(row["kind"]))


def _show(row: dict[str, Any]) -> None:
    result = row.get("result") or {}
    kind = _kind_of(row)
    if row["status"] == "finished":
        best = result.get("best")
        measured = kind.said(best, 2) if best and kind is not None else ""
        scores = (
            f" (best epoch {best['epoch']}: {measured} on {best['n']} dev questions)"
            if best and measured
            else ""
        )
        click.echo(
            f"training {row['id']} finished on {row['device']}: {row['kind']} "
            f"{row['name']!r}{scores}, {result.get('examples_per_s')} examples/s"
        )
        click.echo(f"saved in {result.get('path')}")
        if kind is not None and kind.artefact == "adapter":  # a LoRA: a model of the catalog
            click.echo(f"it is the model {trained_model(row)} ('medexam models list')")
        click.echo(f"evaluate it: medexam train evaluate {row['id']} --dataset DATASET")
        return
    # a training with nothing to resume from (its checkpoint missing or unusable) says no more
    again = f" (resume it with 'medexam train resume {row['id']}')" if "resume" in result else ""
    click.echo(
        f"Error: training {row['id']} {row['status']}"
        + (f": {row['error']}" if row.get("error") else "")
        + f" at step {row.get('step')}{again}",
        err=True,
    )
    sys.exit(1)


@contextlib.contextmanager
def _stop_at_next_step(cancel: Cancel) -> Iterator[list[int]]:
    """While a training goes on, Ctrl-C or SIGTERM stops it at the end of its step (a
    checkpoint written there); a second one stops it at once. Yields the signals heard."""
    heard: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        heard.append(signum)
        if len(heard) > 1:
            raise KeyboardInterrupt
        cancel.set()

    try:
        previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave signals alone
        yield heard
        return
    try:
        yield heard
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def execute_training(
    app: AppContext, kind: str, dataset: str | None, settings: Any, **given: Any
) -> dict[str, Any]:
    """Train with a progress bar; Ctrl-C (or SIGTERM) cancels (exit 130/143, saying how to
    resume); a training that did not finish prints its error and exits 1."""
    from engine.train.loop import train as run_training

    quiet = bool(given.pop("quiet", False))
    found: list[int] = []
    cancel = Cancel()
    heard: list[int] = []
    try:
        title = f"training {given.get('name') or ''}"
        with progress_bar(title, quiet, _note) as update, _stop_at_next_step(cancel) as heard:
            row = run_training(
                app.store, kind, dataset, as_dict(settings) if settings else None,
                progress=update, cancel=cancel, on_start=_started(app, quiet, found), **given,
            )  # fmt: skip
    except (KeyboardInterrupt, Cancelled):  # Cancelled: stopped while it was prepared
        row = None
    if heard:
        if found:
            click.echo(
                f"training {found[0]} cancelled; resume it with 'medexam train resume {found[0]}'",
                err=True,
            )
        else:
            click.echo("stopped before the training started: nothing was recorded", err=True)
        sys.exit(143 if heard[0] == signal.SIGTERM else 130)
    if row is None:
        sys.exit(130)
    if quiet:
        echo_json(row)
        if row["status"] != "finished":
            sys.exit(1)
    else:
        _show(row)
    return row


def _kind_command(kind: TrainingKind) -> click.Command:
    @click.command(kind.id, help=f"Train a {kind.name} and keep it as NAME.")
    @click.option(kind.data_flag, "dataset", required=True, help=kind.data_help)
    @click.option("--name", required=True, help="Name of the trained model.")
    @click.option("--replace", is_flag=True, help="Replace a trained model of that name.")
    @settings_options(kind.settings_class())
    @json_option
    @pass_app
    def command(
        app: AppContext, dataset: str, name: str, replace: bool, settings: Any, as_json: bool
    ) -> None:
        execute_training(app, kind.id, dataset, settings, name=name, replace=replace, quiet=as_json)

    return command


for _kind in kinds().values():
    train.add_command(_kind_command(_kind))


@train.command("resume")
@click.argument("training_id", type=int)
@json_option
@pass_app
def train_resume(app: AppContext, training_id: int, as_json: bool) -> None:
    """Go on with a training that stopped (cancelled, failed, or its process killed) from its
    last checkpoint, with its own data set and settings."""
    execute_training(app, "", None, None, resume=training_id, quiet=as_json)


@train.command("evaluate")
@click.argument("training_id", type=int)
@click.option("--dataset", required=True, help="French data set, or case data set for a doctor.")
@click.option("--limit", type=click.IntRange(1), help="Only the first N items.")
@run_options
@pass_app
def train_evaluate(
    app: AppContext, training_id: int, dataset: str, limit: int | None, run: RunOptions
) -> None:
    """A run of what a training made: a French run of a reader or writer (with the passage
    it was trained with), a consultation run of a doctor. The last line is its summary."""
    from engine.activities import activity
    from engine.train.evaluate import evaluation

    row, activity_id, given = evaluation(app.store, training_id)
    settings = activity(activity_id).settings_class()(**given, limit=limit)

    def show(summary: dict[str, Any]) -> None:
        if not run.quiet:
            click.echo(f"run {summary['run_id']} ({summary['status']}), {summary['n']} items")
            metric_lines(activity_id, summary, get_kind(row["kind"]).shown_keys())
        click.echo(json.dumps(summary, default=str))

    execute_run(app, activity_id, dataset, settings, run, title=f"{row['name']} on {dataset}",
                show=show)  # fmt: skip


@train.command("list")
@json_option
@pass_app
def train_list(app: AppContext, as_json: bool) -> None:
    """Every training, newest first: its kind, name, status, steps, loss and best dev score."""
    from engine.train.records import all_trainings

    rows = all_trainings(app.store)
    if as_json:
        echo_json([{k: v for k, v in r.items() if k != "loss_curve"} for r in rows])
        return
    if not rows:
        click.echo("no trainings yet ('medexam train french-reader --help' to start one)")
        return
    click.echo(
        f"{'id':>4}  {'kind':<14} {'name':<20} {'status':<11} {'steps':>9}  {'loss':>6}  "
        f"{'dev':>6}  {'device':<18} started"
    )
    for r in rows:
        curve = r.get("loss_curve") or []
        loss = f"{curve[-1][1]:.3f}" if curve else "—"
        best = (r.get("result") or {}).get("best") or {}
        kind = _kind_of(r)
        key = next(iter(kind.measures), None) if kind is not None else None  # its first measure
        dev = f"{best[key]:.1f}" if key and best.get(key) is not None else "—"
        click.echo(
            f"{r['id']:>4}  {r['kind']:<14} {r['name'][:20]:<20} {r['status']:<11} "
            f"{r['step']:>4}/{r['n_steps']:<4} {loss:>6}  {dev:>6}  {(r['device'] or '')[:18]:<18} "
            f"{(r['started'] or '')[:16].replace('T', ' ')}"
        )


@train.command("show")
@click.argument("training_id", type=int)
@json_option
@pass_app
def train_show(app: AppContext, training_id: int, as_json: bool) -> None:
    """One training: its settings, data, evaluations per epoch and loss curve."""
    from engine.train.records import get

    row = get(app.store, training_id)
    if as_json:
        echo_json(row)
        return
    click.echo(f"training {row['id']}: {row['kind']} {row['name']!r}, {row['status']}")
    click.echo(
        f"data set {row['dataset']}, device {row['device']}, step {row['step']}/{row['n_steps']}"
    )
    for key, value in (row["settings"] or {}).items():
        click.echo(f"  {key:<17} {value}")
    kind = _kind_of(row)
    for e in row.get("evals") or []:
        measured = kind.said(e, 2, "  ") if kind is not None else ""
        click.echo(f"epoch {e['epoch']}: {measured} (n={e['n']})")
    curve = row.get("loss_curve") or []
    if curve:
        every = max(1, len(curve) // 10)
        shown = ", ".join(f"{int(s)}: {loss:.3f}" for s, loss in curve[::every])
        click.echo(f"loss by step: {shown}")
