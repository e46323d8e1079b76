"""Pieces shared by every CLI command: the app context, JSON output, error handling."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from engine.progress import Progress, ProgressCallback
from engine.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class AppContext:
    """Holds the ``--db`` path; opens the store on first use."""

    def __init__(self, db_path: str | None) -> None:
        self.db_path = db_path
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.db_path)
        return self._store


pass_app = click.make_pass_decorator(AppContext)


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


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

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[note]}"),
        console=Console(stderr=True),
        transient=transient,
    )
    task = bar.add_task(description, total=None, note="")

    def update(p: Progress) -> None:
        text = note(p) if note is not None else p.message
        bar.update(task, completed=p.done, total=p.total or None, note=text[:60])

    with bar:
        yield update
