"""Progress reports and cancellation shared by every long-running job.

Long work (a model run over a data set, an index build) takes an optional ``progress``
callback and an optional :class:`Cancel` token. The CLI draws a progress bar from the
callbacks; the GUI forwards them to its views from a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple


class Progress(NamedTuple):
    """One step of a long job: ``done`` of ``total`` units, plus what just happened."""

    done: int
    total: int
    message: str = ""
    info: dict[str, Any] = {}  # never changed: each report gives its own

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressCallback = Callable[[Progress], None]


class Cancelled(Exception):
    """Raised inside a job when its :class:`Cancel` token was set."""


class Cancel:
    """A thread-safe flag a caller sets to stop a job at its next step."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` when the flag is set."""
        if self._event.is_set():
            raise Cancelled()


def report(
    callback: ProgressCallback | None, done: int, total: int, message: str = "", **info: Any
) -> None:
    """Call ``callback`` if there is one."""
    if callback is not None:
        callback(Progress(done, total, message, info))
