"""The ``medexam`` command line: a thin shell over the engine's Python API.

Each activity defines its commands in its own module (``exam``, ``consult``, ``french``…);
the groups here name them and import a module only when one of its commands runs or help
lists them, so ``medexam runs list`` never loads a retriever or a model library. Shared
option decorators live in :mod:`engine.cli.common`. Every command runs inside
:func:`engine.cli.common.user_errors`: an error for the user ends it with one ``Error:`` line.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

from engine.cli.common import AppContext, user_errors

#: Top-level commands beside the activities' own groups: name -> ``module:attribute``.
COMMANDS = {
    "experiment": "engine.cli.experiment:experiment",
    "generate": "engine.cli.models:generate",
    "gui": "engine.cli.gui:gui",
    "models": "engine.cli.models:models",
    "notes": "engine.cli.bank:notes",
    "rate": "engine.cli.rate:rate",
    "rescore": "engine.cli.rescore:rescore",
    "review": "engine.cli.review:review",
    "report": "engine.cli.report:report",
    "runs": "engine.cli.runs:runs",
    "scorers": "engine.cli.rescore:scorers_list",
    "stats": "engine.cli.bank:stats",
    "train": "engine.cli.train:train",
}


def activity_commands() -> dict[str, str]:
    """Each registered activity's click group, by its id."""
    from engine.registry import activities

    return {a.id: a.cli for a in activities().values() if a.cli}


def import_commands() -> dict[str, str]:
    """The ``medexam import`` subcommands the registered activities bring."""
    from engine.registry import activities

    return {k: v for a in activities().values() for k, v in a.import_commands.items()}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported from ``module:attribute`` on first use;
    ``more`` names further ones when asked (the registry's, which may grow: an activity from
    another installed package brings its own, and one of those that cannot be loaded is left
    out with one warning line)."""

    def __init__(
        self,
        *args: object,
        lazy: dict[str, str] | None = None,
        more: Callable[[], dict[str, str]] | None = None,
        **kwargs: object,
    ):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy = dict(lazy or {})
        self._more = more
        self._broken: set[str] = set()

    @property
    def lazy(self) -> dict[str, str]:
        return {**self._lazy, **(self._more() if self._more else {})}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy} - self._broken)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            if cmd_name in self._broken:
                return None
            if cmd_name in self._lazy:  # medexam's own: a fault keeps its traceback
                self.add_command(self._load(cmd_name), cmd_name)
            else:
                try:
                    self.add_command(self._load(cmd_name), cmd_name)
                except Exception as exc:  # an activity's, perhaps another package's
                    self._broken.add(cmd_name)
                    click.echo(
                        f"Warning: command {cmd_name!r} ({self.lazy[cmd_name]}) left out: "
                        f"{type(exc).__name__}: {exc}",
                        err=True,
                    )
                    return None
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attribute = self.lazy[cmd_name].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
        return command


class MedexamGroup(LazyGroup):
    """The ``medexam`` group: whichever command runs, an error for the user that it raises
    becomes one ``Error: <message>`` line and exit status 1 here, and nowhere else."""

    def invoke(self, ctx: click.Context) -> Any:
        with user_errors():
            return super().invoke(ctx)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from engine import __version__

    click.echo(f"medexam, version {__version__}")
    ctx.exit()


@click.group(
    cls=MedexamGroup,
    lazy=COMMANDS,
    more=activity_commands,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(),  # a folder is refused by the store, naming MEDEXAM_DB if it chose it
    envvar="MEDEXAM_DB",
    help="SQLite database (default: medexam.db in the user data folder).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: str | None) -> None:
    """medexam: offline medical exam practice and local model evaluation."""
    from click.core import ParameterSource

    from_env = ctx.get_parameter_source("db_path") is ParameterSource.ENVIRONMENT
    ctx.obj = AppContext(None if from_env else db_path)  # the store reads MEDEXAM_DB itself


@cli.group(name="import", cls=LazyGroup, more=import_commands)
def import_group() -> None:
    """Import a data set from a file."""


def main() -> None:
    cli(prog_name="medexam")
