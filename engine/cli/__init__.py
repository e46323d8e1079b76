"""The ``medexam`` command line: a thin shell over the engine's Python API.

Each activity brings its command group and ``import`` subcommands from its own package
(``engine/<activity>/cli.py``, named by its descriptor); the groups here list them from the
registry and import a module only when one of its commands runs or help lists them, so
``medexam runs list`` never loads a retriever or a model library. Shared
option decorators live in :mod:`engine.cli.common`. Every command runs inside
:func:`engine.cli.common.user_errors`: an error for the user ends it with one ``Error:`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from engine.cli.common import AppContext, user_errors
from engine.registry import COMMAND, Lazy

#: Top-level commands beside the activities' own groups, imported when first used.
COMMANDS: dict[str, Lazy[click.Command]] = {
    "experiment": Lazy("engine.cli.experiment", "experiment", COMMAND),
    "generate": Lazy("engine.cli.models", "generate", COMMAND),
    "gui": Lazy("engine.cli.gui", "gui", COMMAND),
    "models": Lazy("engine.cli.models", "models", COMMAND),
    "notes": Lazy("engine.cli.bank", "notes", COMMAND),
    "rate": Lazy("engine.cli.rate", "rate", COMMAND),
    "rescore": Lazy("engine.cli.rescore", "rescore", COMMAND),
    "review": Lazy("engine.cli.review", "review", COMMAND),
    "report": Lazy("engine.cli.report", "report", COMMAND),
    "runs": Lazy("engine.cli.runs", "runs", COMMAND),
    "scorers": Lazy("engine.cli.rescore", "scorers_list", COMMAND),
    "stats": Lazy("engine.cli.bank", "stats", COMMAND),
    "train": Lazy("engine.cli.train", "train", COMMAND),
}


def activity_commands() -> dict[str, Lazy[click.Command]]:
    """Each registered activity's click group, by its id."""
    from engine.activities import activities

    return {a.id: a.cli for a in activities().values() if a.cli}


def import_commands() -> dict[str, Lazy[click.Command]]:
    """The ``medexam import`` subcommands the registered activities bring."""
    from engine.activities import activities

    return {k: v for a in activities().values() for k, v in a.import_commands.items()}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported from their references on first use;
    ``more`` names further ones when asked (the registry's, which may grow: an activity from
    another installed package brings its own, and one of those that cannot be loaded is left
    out with one warning line)."""

    def __init__(
        self,
        *args: object,
        lazy: dict[str, Lazy[click.Command]] | None = None,
        more: Callable[[], dict[str, Lazy[click.Command]]] | None = None,
        **kwargs: object,
    ):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy = dict(lazy or {})
        self._more = more
        self._broken: set[str] = set()

    @property
    def lazy(self) -> dict[str, Lazy[click.Command]]:
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
        return self.lazy[cmd_name].load()


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
