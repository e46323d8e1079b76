"""The ``medexam`` command's entry point.

``medexam gui`` (alone, or after ``--db PATH``) opens the desktop app at once, without
loading the command line's machinery first; every other command line goes to
:func:`engine.cli.main`.
"""

from __future__ import annotations

import sys


def gui_request(args: list[str]) -> tuple[bool, str | None]:
    """Whether ``args`` only ask for the app, and the database they name (``None``: the
    default, or ``MEDEXAM_DB``)."""
    if args == ["gui"]:
        return True, None
    if len(args) == 3 and args[0] == "--db" and args[2] == "gui":
        return True, args[1]
    if len(args) == 2 and args[0].startswith("--db=") and args[1] == "gui":
        return True, args[0].removeprefix("--db=")
    return False, None


def main() -> None:
    wanted, db_path = gui_request(sys.argv[1:])
    if wanted:
        try:
            from gui.app import launch
        except ImportError as exc:  # PySide6 missing or broken: the command line says so
            print(f"Error: the desktop app cannot start: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        raise SystemExit(launch(db_path))
    from engine.cli import main as command_line

    command_line()
