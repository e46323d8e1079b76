"""Pieces shared by every CLI command: the app context, JSON output, error handling."""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engine.errors import ONE_LINE
from engine.fields import INT_MAX
from engine.models.load import MAX_SLOTS

if TYPE_CHECKING:
    from engine.store.store import Store

F = TypeVar("F", bound=Callable[..., Any])
#: A count typed on the command line (``--limit N``…): 1 to :data:`engine.fields.INT_MAX`.
COUNT = click.IntRange(1, INT_MAX)


class AppContext:
    """Holds the ``--db`` path; opens the store on first use.

    A database that cannot be opened (not a medexam database, written by a newer medexam,
    in a folder that does not exist…) raises :class:`~engine.store.store.StoreError`, which ends
    any command with one ``Error:`` line, status 1 (:func:`user_errors`).
    """

    def __init__(self, db_path: str | None) -> None:
        self.db_path = db_path
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            from engine.store.store import Store

            self._store = Store(self.db_path)
        return self._store

    @property
    def database(self) -> str | None:
        """The database's path: the open store's, else the one given (None: the default)."""
        return self._store.path if self._store is not None else self.db_path


pass_app = click.make_pass_decorator(AppContext)


#: The longest context ``--n-ctx`` loads a model with (1 M tokens).
MAX_CONTEXT = 1 << 20


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def verdict_options(func: F) -> F:
    """Add ``--margin POINTS`` and ``--reference MODEL`` to a command that compares models:
    each model judged equivalent or not to the reference within ± the margin."""
    from engine.reports.equivalence import MARGIN

    func = click.option(
        "--reference",
        metavar="MODEL",
        help="The model (or run id) every other is judged against (default: the top model).",
    )(func)
    return click.option(
        "--margin",
        type=click.FloatRange(min=0, max=100, min_open=True, max_open=True),
        default=MARGIN,
        show_default=True,
        metavar="POINTS",
        help="The difference in accuracy points that does not matter: a model is "
        "equivalent to the reference when a paired test shows it within ± this.",
    )(func)


def load_options(func: F | None = None, *, context: str = "") -> Any:
    """Add ``--gpu-layers N`` and ``--slots N`` (and, with ``context``, ``--n-ctx N``,
    ``context`` its help) to a command that runs local models: the command gets them as one
    ``load`` argument, a :class:`~engine.models.load.LoadSettings` (left out: the default)."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, gpu_layers: int | None, slots: int | None, **kw: Any) -> Any:
            from engine.models.load import LoadSettings

            n_ctx = kw.pop("n_ctx", None) if context else None
            if slots is not None:
                from engine.models.slots import tell_reduced

                tell_reduced(_warn)
            load = LoadSettings(n_ctx=n_ctx, gpu_layers=gpu_layers, slots=slots)
            return command(*args, load=load, **kw)

        if context:
            wrapper = click.option(
                "--n-ctx", type=click.IntRange(256, MAX_CONTEXT), default=None, help=context
            )(wrapper)
        wrapper = click.option(
            "--slots",
            type=click.IntRange(1, MAX_SLOTS),
            help="Sequences a local model decodes at once (default: as many as its memory "
            "holds, at most 8 on a CPU and 16 on a GPU); fewer when they do not fit.",
        )(wrapper)
        wrapper = click.option(
            "--gpu-layers",
            type=click.IntRange(-1, INT_MAX),
            help="Layers of a local model put on the GPU: 0 keeps it on the CPU, -1 puts all "
            "(default: those that fit the GPU's free memory).",
        )(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate


def _warn(line: str) -> None:
    click.echo(f"Warning: {line}", err=True)


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON, every control character in it a JSON escape (the same JSON,
    safe in a terminal: :func:`engine.text.columns.visible_json`)."""
    from engine.text.columns import visible_json

    click.echo(visible_json(json.dumps(value, ensure_ascii=False, indent=2, default=str)))


def echo_document(text: str, fmt: str) -> None:
    """Print a whole document made of stored data (a report, an export) on stdout, safe in a
    terminal: JSON with its control characters as JSON escapes (the same JSON), any other
    format with them escaped (:func:`engine.text.columns.visible`), its line breaks kept
    (CR LF as LF). A file (``--out``) holds the text exactly."""
    from engine.text.columns import visible, visible_json

    shown = visible_json(text) if fmt == "json" else visible(text.replace("\r\n", "\n"), True)
    click.echo(shown, nl=False)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Around a whole command: an error for the user (:data:`engine.errors.ONE_LINE`: bad
    input, a data set or run that is not there, a model that cannot load, a file that cannot
    be read, a database that is full, damaged or read-only…) ends it with one ``Error:
    <message>`` line on stderr and exit status 1, no traceback. Anything else is a fault of
    medexam's own and keeps its traceback."""
    try:
        yield
    except BrokenPipeError:  # stdout closed early (``| head``): click ends quietly
        raise
    except ONE_LINE as exc:  # its message may name data: its control characters escaped
        from engine.text.columns import visible

        raise click.ClickException(visible(str(exc) or type(exc).__name__, True)) from None
    except sqlite3.Error as exc:
        from engine.store.dbfile import database_problem
        from engine.text.columns import visible

        ctx = click.get_current_context(silent=True)
        app = ctx.find_object(AppContext) if ctx is not None else None
        problem = database_problem(exc, app.database if app is not None else None)
        if problem is None:
            raise
        raise click.ClickException(visible(str(problem), True)) from None


class ActivityChoice(click.Choice):
    """``--activity``: one of the registered activities' ids (read when the option is
    parsed or help is shown, so an activity registered later is offered too)."""

    def __init__(self) -> None:
        super().__init__([])

    @property  # type: ignore[override]
    def choices(self) -> list[str]:
        from engine.activities import activities

        return list(activities())

    @choices.setter
    def choices(self, _value: object) -> None:
        pass
