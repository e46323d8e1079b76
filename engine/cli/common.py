"""Pieces shared by every CLI command: the app context, JSON output, error handling."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

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
