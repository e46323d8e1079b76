"""``medexam gui``: start the desktop app."""

from __future__ import annotations

import click

from engine.cli.common import AppContext, pass_app


@click.command()
@pass_app
def gui(app: AppContext) -> None:
    """Start the desktop app."""
    try:
        from gui.app import launch
    except ImportError as exc:  # PySide6 missing or broken
        raise click.ClickException(f"the desktop app cannot start: {exc}") from None
    raise SystemExit(launch(app.db_path))
