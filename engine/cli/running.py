"""The pieces of a model-run command (``exam run``, ``french run``, ``consult run``): the
``--resume``/``--concurrency``/``--json`` options, a progress bar, how a run ends on the
command line, the labelled summary lines."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from engine.cli.common import AppContext, F, json_option, load_options
from engine.core.progress import Progress, ProgressCallback
from engine.text.columns import display_width, fmt_number, number_unit, pad, visible

if TYPE_CHECKING:
    from engine.models.load import LoadSettings


def _no_load() -> LoadSettings:
    from engine.models.load import LoadSettings

    return LoadSettings()


@dataclass(frozen=True)
class RunOptions:
    """What every model-run command takes besides its settings (:func:`run_options`)."""

    resume: int | None = None  # the run to continue
    concurrency: int | None = None  # items in flight at once
    quiet: bool = False  # --json: no progress bar, the summary as JSON
    load: LoadSettings = field(default_factory=_no_load)  # how its local models load


def run_options(func: F) -> F:
    """Add ``--resume RUN_ID``, ``--concurrency N``, ``--json``, ``--gpu-layers N`` and
    ``--slots N`` (:func:`~engine.cli.common.load_options`) to a model-run command, which gets
    them as one ``run`` argument (:class:`RunOptions`)."""

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        resume: int | None,
        concurrency: int | None,
        as_json: bool,
        load: LoadSettings,
        **kw: Any,
    ) -> Any:
        return func(*args, run=RunOptions(resume, concurrency, as_json, load), **kw)

    wrapper = load_options(json_option(wrapper))  # --json listed last in --help
    wrapper = click.option(
        "--concurrency",
        type=click.IntRange(1, 256),
        default=None,
        help="Items answered at once (default: as many as the models take: a local model's "
        "slots, 8 for a served one).",
    )(wrapper)
    wrapper = click.option(
        "--resume", type=int, help="Continue a stopped run with its own settings."
    )(wrapper)
    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def progress_bar(
    description: str,
    quiet: bool = False,
    note: Callable[[Progress], str] | None = None,
    transient: bool = False,
    unit: str = "items",
) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr; yields the ``progress`` callback for engine jobs
    (``None`` when ``quiet``). ``note`` turns each step into the text shown after the bar
    (default: the step's message). When stderr is not a terminal, a line at every tenth of
    the work instead (:class:`~engine.core.progress.TenthLines`, counting ``unit``)."""
    if quiet:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    console = Console(stderr=True)
    if not console.is_terminal:  # a log or CI: a line at every tenth
        from engine.core.progress import TenthLines

        yield TenthLines(description, lambda line: click.echo(line, err=True), note, unit=unit)
        return
    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[note]}"),
        console=console,
        transient=transient,
        # off the terminal a bar that clears itself shows nothing but leaves a blank line
        disable=transient and not console.is_interactive,
    )
    task = bar.add_task(description, total=None, note="")
    shown = False

    def update(p: Progress) -> None:
        nonlocal shown
        if not shown:  # drawn from the first step on, so an early error stands alone
            bar.start()
            shown = True
        text = note(p) if note is not None else p.message
        bar.update(task, completed=p.done, total=p.total or None, note=text[:80])

    try:
        yield update
    finally:
        if shown:
            bar.stop()


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``) during a run: it ends the run the way Ctrl-C does."""


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While a run goes on, SIGTERM cancels it (run closed, models stopped) like Ctrl-C."""
    import signal

    def stop(_signum: int, _frame: object) -> None:
        raise _Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def cancelled_on_interrupt(said: Callable[[], str]) -> Iterator[None]:
    """Around a model-run command's work: Ctrl-C (or SIGTERM) ends it the way every run
    command ends on a cancel — the run closed as cancelled by the engine, ``said()`` on
    stderr, exit 130 (143 for SIGTERM) — never click's "Aborted!"."""
    try:
        with _terminate_as_interrupt():
            yield
    except KeyboardInterrupt as exc:
        click.echo(said(), err=True)
        sys.exit(143 if isinstance(exc, _Terminated) else 130)


def execute_run(
    app: AppContext,
    activity_id: str,
    dataset: str | None,
    settings: object,
    run: RunOptions,
    *,
    title: str,
    show: Callable[[dict[str, Any]], None],
    note: Callable[[Progress], str] | None = None,
    tags: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run an activity through :func:`engine.core.runs.run` with a progress bar, ``show`` its
    summary, and end the way a command line should: Ctrl-C cancels the run (exit 130, saying
    how to resume it; SIGTERM likewise, exit 143); a run that failed prints its error and
    exits 1. ``settings`` is the command's settings dataclass
    (:func:`engine.fields.settings_options`): a new run gets all of them, a resumed one only
    those typed on the command line (anything that differs from the run's own is refused).
    ``run`` says which run to resume, the items in flight at once and whether to be
    quiet, and how its models load (:func:`run_options`); ``tags`` are stored with a new run
    (:func:`engine.core.runs.run`)."""
    from engine.core.progress import Cancel
    from engine.core.runs import run as run_activity
    from engine.fields import as_dict, given_on_command_line

    resume = run.resume
    if resume is None:
        given = as_dict(settings)
    else:
        given = given_on_command_line(click.get_current_context(), type(settings))

    cancel = Cancel()
    started: list[int] = []

    def said() -> str:
        if not started:
            return "cancelled"
        return f"run {started[0]} cancelled; resume it with --resume {started[0]}"

    with cancelled_on_interrupt(said), progress_bar(title, run.quiet, note) as update:
        summary = run_activity(
            app.store,
            activity_id,
            dataset,
            given,
            resume=resume,
            progress=update,
            cancel=cancel,
            on_start=started.append,
            concurrency=run.concurrency,
            tags=tags,
            load=run.load,
        )
    show(summary)
    if summary.get("status") == "failed":
        click.echo(
            f"Error: run {summary['run_id']} failed: {summary.get('error')} "
            f"(resume it with --resume {summary['run_id']})",
            err=True,
        )
        sys.exit(1)
    return summary


def trial_options(func: F) -> F:
    """Add ``--trials K`` and ``--resume-trials SET`` to a model-run command (the
    function gets ``trials`` and ``resume_set``; see :func:`execute`)."""
    func = click.option(
        "--resume-trials",
        "resume_set",
        metavar="SET",
        help="Go on with trial set SET, with its own settings and number of trials "
        "(a --trials that differs is refused).",
    )(func)
    return click.option(
        "--trials",
        type=click.IntRange(1, 100),
        default=1,
        show_default=True,
        help="Play every item this many times, seeds --seed, --seed+1, … (needs sampling: "
        "--temperature above 0); the summary gives the mean, the spread between trials and "
        "a 95% interval clustered by item.",
    )(func)


def execute(
    app: AppContext,
    activity_id: str,
    dataset: str | None,
    settings: object,
    run: RunOptions,
    trials: int = 1,
    resume_set: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """One run (:func:`execute_run`) or, with ``trials`` above 1 or ``resume_set``, a trial
    set (:func:`execute_trials`); ``kwargs`` are theirs (``title``, ``show``, ``note``…)."""
    if trials == 1 and resume_set is None:
        return execute_run(app, activity_id, dataset, settings, run, **kwargs)
    if run.resume is not None:
        raise click.UsageError("--resume goes on with one run: use --resume-trials SET for a set")
    if resume_set is not None:
        _check_set_size(app, resume_set, trials)
    kwargs.pop("show", None)
    return execute_trials(app, activity_id, dataset, settings, run, trials, resume_set, **kwargs)


def _check_set_size(app: AppContext, name: str, trials: int) -> None:
    """Refuse a ``--trials`` typed with ``--resume-trials`` that differs from the set's."""
    from click.core import ParameterSource

    from engine.core.trials import TrialError, set_size

    size = set_size(app.store, name)
    typed = click.get_current_context().get_parameter_source("trials") != ParameterSource.DEFAULT
    if typed and trials != size:
        raise TrialError(
            f"trial set {name} plays {size} trials, not {trials}: --resume-trials goes on "
            f"with the set as it is (leave out --trials)"
        )


def execute_trials(
    app: AppContext,
    activity_id: str,
    dataset: str | None,
    settings: object,
    run: RunOptions,
    trials: int,
    resume_set: str | None,
    *,
    title: str,
    note: Callable[[Progress], str] | None = None,
) -> dict[str, Any]:
    """:func:`execute_run` for a trial set (:func:`engine.core.trials.run_trials`): the trials
    under one progress bar over items × trials ("trial 2/5 · …"), a line per trial, then
    the set's spread and, last, the set as JSON; Ctrl-C stops the set, saying how to go on
    with it."""
    from engine.core.progress import Cancel
    from engine.core.trials import check_trials, new_name, run_trials
    from engine.fields import as_dict

    given = as_dict(settings)
    if resume_set is None:
        check_trials(given, trials)  # before any model is loaded
    name = resume_set or new_name()

    def labelled(p: Progress) -> str:
        at = f"trial {p.info['trial']}/{p.info['trials']} · " if "trial" in p.info else ""
        return at + (note(p) if note is not None else p.message)

    said = f"trial set {name} stopped; go on with --resume-trials {name}"
    with cancelled_on_interrupt(lambda: said), progress_bar(title, run.quiet, labelled) as update:
        found = run_trials(
            app.store, activity_id, dataset, given, trials, resume=resume_set, name=name,
            progress=update, cancel=Cancel(), concurrency=run.concurrency, load=run.load,
        )  # fmt: skip
    if not run.quiet:
        for summary in found.summaries:
            _trial_line(app, summary)
    stopped = [s for s in found.summaries if s.get("status") != "finished"]
    if stopped or not found.summaries:
        last = stopped[0] if stopped else {}
        click.echo(f"Error: trial set {name} stopped at run {last.get('run_id')}: "
                   f"{visible(str(last.get('error') or last.get('status')))} "
                   f"(go on with --resume-trials {name})",
                   err=True)  # fmt: skip
        sys.exit(1)
    return spread_lines(app, {"trial_set": name, "run_ids": found.run_ids}, run.quiet)


def _trial_line(app: AppContext, summary: dict[str, Any]) -> None:
    """``trial 2: run 14 (finished), 30 items, accuracy 40.0%``: the run's headline score
    (:attr:`engine.activities.Activity.headline`)."""
    from engine.activities import activities

    run = app.store.run(int(summary["run_id"]))
    trial = (run["settings"] or {}).get("trial")
    found = activities().get(str(run["activity"]))
    score = found.headline if found and summary.get(found.headline) is not None else None
    said = f", {score} {fmt_number(summary[score], unit='%')}%" if score else ""
    click.echo(
        f"trial {trial}: run {summary['run_id']} ({summary['status']}), "
        f"{summary.get('n')} items{said}"
    )


def spread_lines(app: AppContext, found: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """A trial set's numbers, each score its runs' summaries have
    (:func:`engine.core.trials.short_headers`): mean ± between-trial SD [95% interval]; the last
    line is the set and its spread as JSON. Returns that."""
    import json

    from engine.core.trials import spread, spread_text

    values = spread(app.store, found["run_ids"])
    if not quiet:
        click.echo(f"trial set {found['trial_set']}: {len(found['run_ids'])} trials")
        for key, v in values.items():
            click.echo(f"  {key:<15} {spread_text(v)}")
    out = {**found, "spread": values}
    click.echo(json.dumps(out, default=str))
    return out


def metric_lines(activity_id: str, summary: Mapping[str, Any], keys: Iterable[str]) -> None:
    """Print each summary key as its label (:func:`engine.reports.results.summary_rows`) and its
    value, one per line, the values lined up, each in its label's unit
    (:func:`engine.text.columns.fmt_number`); "—" for a value the run does not have."""
    from engine.activities import metric_label
    from engine.reports.results import summary_rows

    found = {key: (label, value) for key, label, value in summary_rows(summary, activity_id)}
    rows = [found.get(key, (metric_label(key, activity_id), None)) for key in keys]
    width = max((display_width(label) for label, _ in rows), default=0)
    for label, value in rows:
        click.echo(f"{pad(label, width)}  {fmt_number(value, '—', number_unit(label))}")


def run_title(app: AppContext, model: str | None, dataset: str | None, run: RunOptions) -> str:
    """The progress bar's title of a model run: ``MODEL on DATASET`` (the default chat model
    when none is given); a resumed run is titled with its own model and data set."""
    if run.resume is not None:
        row = app.store.run(run.resume)
        return f"{row['model']} on {row['dataset']} (run {run.resume})"
    return f"{model or default_model_name()} on {dataset}"


def default_model_name() -> str:
    """The name of the model a run uses when none is given: the default chat model, or the
    embedded one (said on stderr) when the default's file cannot be used."""
    from engine.models.checks import checked_default

    name, message = checked_default()
    if message:
        click.echo(f"Warning: {message}.", err=True)
    return name
