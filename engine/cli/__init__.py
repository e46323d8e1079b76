"""The ``medexam`` command line: a thin shell over the engine's Python API.

Each activity defines its commands in its own module (``exam``, ``consult``, ``french``…);
the groups here name them and import a module only when one of its commands runs or help
lists them, so ``medexam runs list`` never loads a retriever or a model library. Shared
option decorators live in :mod:`engine.cli.common`.
"""

from __future__ import annotations

import importlib

import click

from engine.cli.common import AppContext

#: Top-level commands: name -> ``module:attribute`` of the click command or group.
COMMANDS = {
    "consult": "engine.cli.consult:consult",
    "exam": "engine.cli.exam:exam",
    "french": "engine.cli.french:french",
    "generate": "engine.cli.models:generate",
    "gui": "engine.cli.gui:gui",
    "models": "engine.cli.models:models",
    "review": "engine.cli.review:review",
    "report": "engine.cli.report:report",
    "runs": "engine.cli.runs:runs",
}
#: ``medexam import`` subcommands, defined by their activity's module.
IMPORTERS = {
    "agentclinic": "engine.cli.consult:import_agentclinic",
    "cases": "engine.cli.consult:import_cases",
    "explaincpe": "engine.cli.exam:import_explaincpe",
    "frenchmedmcqa": "engine.cli.french:import_frenchmedmcqa",
    "mcq": "engine.cli.exam:import_mcq",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported from ``module:attribute`` on first use."""

    def __init__(self, *args: object, lazy: dict[str, str] | None = None, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self._load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attribute = self.lazy[cmd_name].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
        return command


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from engine import __version__

    click.echo(f"medexam, version {__version__}")
    ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
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
    type=click.Path(dir_okay=False),
    envvar="MEDEXAM_DB",
    help="SQLite database (default: medexam.db in the user data folder).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: str | None) -> None:
    """medexam: offline medical exam practice and local model evaluation."""
    ctx.obj = AppContext(db_path)


@cli.group(name="import", cls=LazyGroup, lazy=IMPORTERS)
def import_group() -> None:
    """Import a data set from a file."""


def main() -> None:
    cli(prog_name="medexam")
