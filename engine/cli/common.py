"""Pieces shared by every CLI command: the app context, JSON output, error handling."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engine.progress import Progress, ProgressCallback
from engine.text.columns import display_width, pad

if TYPE_CHECKING:
    from engine.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class DatabaseError(click.ClickException):
    """The database cannot be opened: click prints ``Error: <why>`` and exits with 1."""


class AppContext:
    """Holds the ``--db`` path; opens the store on first use.

    A database that cannot be opened (not a medexam database, written by a newer medexam,
    in a folder that does not exist…) ends any command with one ``Error:`` line, status 1.
    """

    def __init__(self, db_path: str | None) -> None:
        self.db_path = db_path
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            from engine.store import Store, StoreError

            try:
                self._store = Store(self.db_path)
            except StoreError as exc:
                raise DatabaseError(str(exc)) from None
        return self._store


pass_app = click.make_pass_decorator(AppContext)


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def concurrency_option(func: F) -> F:
    """Add ``--concurrency N`` (items in flight at once) to a model-run command."""
    return click.option(
        "--concurrency",
        type=click.IntRange(1, 256),
        default=None,
        help="Items answered at once (default: 8 when every model is served, else 1).",
    )(func)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def friendly_errors(*kinds: type[BaseException]) -> Callable[[F], F]:
    """Turn the named exception types into one clear error line and exit status 1."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except kinds as exc:
                click.echo(f"Error: {exc}", err=True)
                sys.exit(1)

        return wrapper  # type: ignore[return-value]

    return decorate


@contextlib.contextmanager
def progress_bar(
    description: str,
    quiet: bool = False,
    note: Callable[[Progress], str] | None = None,
    transient: bool = False,
) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr; yields the ``progress`` callback for engine jobs
    (``None`` when ``quiet``). ``note`` turns each step into the text shown after the bar
    (default: the step's message)."""
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
        bar.update(task, completed=p.done, total=p.total or None, note=text[:60])

    try:
        yield update
    finally:
        if shown:
            bar.stop()


def given_options(ctx: click.Context, mapping: dict[str, str]) -> dict[str, Any]:
    """The options the user typed (not left at their defaults), as run settings:
    ``mapping`` is setting key → click parameter name."""
    from click.core import ParameterSource

    out = {}
    for key, param in mapping.items():
        if ctx.get_parameter_source(param) not in (ParameterSource.DEFAULT, None):
            out[key] = ctx.params[param]
    return out


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


def execute_run(
    app: AppContext,
    activity_id: str,
    dataset: str | None,
    settings: dict[str, Any],
    *,
    resume: int | None,
    quiet: bool,
    title: str,
    show: Callable[[dict[str, Any]], None],
    note: Callable[[Progress], str] | None = None,
    load: dict[str, Any] | None = None,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """Run an activity through :func:`engine.runs.run` with a progress bar, ``show`` its
    summary, and end the way a command line should: Ctrl-C cancels the run (exit 130, saying
    how to resume it; SIGTERM likewise, exit 143); a run that failed prints its error and
    exits 1. ``load`` holds the
    models' load settings (``n_ctx``…); ``concurrency`` the items in flight at once."""
    from engine.models.pool import default_pool
    from engine.progress import Cancel
    from engine.runs import run

    if load:
        default_pool().settings_for = lambda name: dict(load)

    cancel = Cancel()
    started: list[int] = []
    try:
        with progress_bar(title, quiet, note) as update, _terminate_as_interrupt():
            summary = run(
                app.store,
                activity_id,
                dataset,
                settings,
                resume=resume,
                progress=update,
                cancel=cancel,
                on_start=started.append,
                concurrency=concurrency,
            )
    except KeyboardInterrupt as exc:
        where = f"run {started[0]} cancelled; resume it with --resume {started[0]}"
        click.echo(where if started else "cancelled", err=True)
        sys.exit(143 if isinstance(exc, _Terminated) else 130)
    show(summary)
    if summary.get("status") == "failed":
        click.echo(
            f"Error: run {summary['run_id']} failed: {summary.get('error')} "
            f"(resume it with --resume {summary['run_id']})",
            err=True,
        )
        sys.exit(1)
    return summary


def metric_lines(activity_id: str, summary: dict[str, Any], keys: Iterable[str]) -> None:
    """Print each summary key as its label (:func:`engine.results.summary_rows`) and its
    value, one per line, the values lined up; "—" for a value the run does not have."""
    from engine.activities import metric_label
    from engine.results import summary_rows

    found = {key: (label, value) for key, label, value in summary_rows(summary, activity_id)}
    rows = [found.get(key, (metric_label(key, activity_id), None)) for key in keys]
    width = max((display_width(label) for label, _ in rows), default=0)
    for label, value in rows:
        if value is None:
            shown = "—"
        elif isinstance(value, float):
            shown = f"{value:.2f}"
        else:
            shown = str(value)
        click.echo(f"{pad(label, width)}  {shown}")


def default_model_name() -> str:
    """The name of the model a run uses when none is given: the default chat model, or the
    embedded one (said on stderr) when the default's file cannot be used."""
    from engine.models.checks import checked_default

    name, message = checked_default()
    if message:
        click.echo(f"Warning: {message}.", err=True)
    return name
