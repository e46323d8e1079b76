"""The pieces of the commands that bring data in: ``medexam import …`` options and an
activity's ``sample`` command."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

import click

from engine.cli.common import AppContext, F, json_option, pass_app

T = TypeVar("T")

if TYPE_CHECKING:
    from engine.store.store import Store


def import_options(exists: bool = False) -> Callable[[F], F]:
    """A ``medexam import`` command's ``PATH``, ``--name``, ``--replace`` and ``--json``
    (the command gets ``app, path, name, replace, as_json``); ``exists`` lets click refuse a
    missing file, else the importer says what is wrong with it."""

    def decorate(func: F) -> F:
        func = cast("F", pass_app(func))  # the app passed first, as the command says
        func = json_option(func)
        func = click.option("--replace", is_flag=True, help="Replace a data set of the same name.")(
            func
        )
        func = click.option(
            "--name", help="Data set name (default: the file name without its extension)."
        )(func)
        return click.argument("path", type=click.Path(exists=exists, dir_okay=False))(func)

    return decorate


def sample_command(
    group: click.Group, ensure: Callable[[Store], T], ready: Callable[[T], str], what: str
) -> None:
    """Add ``sample`` to an activity's ``group``: ``ensure(store)`` imports the shipped
    sample (``what``) when it is not there yet and returns what it made (shown as JSON with
    --json); ``ready(made)`` says so in one line."""

    def sample(app: AppContext, as_json: bool) -> None:
        made = ensure(app.store)
        shown = app.store.dataset(made) if isinstance(made, str) else made
        click.echo(
            json.dumps(shown, ensure_ascii=False, indent=2, default=str) if as_json else ready(made)
        )

    sample.__doc__ = f"Import the shipped sample {what} (if not there yet)."
    group.command("sample")(json_option(pass_app(sample)))
