"""The ``medexam`` command line: a thin shell over the engine's Python API.

Each activity adds its commands from its own module (``exam``, ``consult``, ``french``);
shared option decorators live in :mod:`engine.cli.common`.
"""

from __future__ import annotations

import click

from engine import __version__
from engine.cli.common import AppContext


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="medexam")
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


@cli.group(name="import")
def import_group() -> None:
    """Import a data set from a file."""


def main() -> None:
    cli(prog_name="medexam")


# Commands register themselves on the groups above when their modules load.
from engine.cli import consult, exam, french, gui, models, runs  # noqa: E402,F401
