"""Progress reports and cancellation shared by every long-running job.

Long work (a model run over a data set, an index build) takes an optional ``progress``
callback and an optional :class:`Cancel` token. The CLI draws a progress bar from the
callbacks; the GUI forwards them to its views from a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from engine.errors import MedexamError

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue


class Progress(NamedTuple):
    """One step of a long job: ``done`` of ``total`` units, plus what just happened."""

    done: int
    total: int
    message: str = ""
    info: JSONDict = {}  # never changed: each report gives its own

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressCallback = Callable[[Progress], None]


class Cancelled(MedexamError):
    """Raised inside a job when its :class:`Cancel` token was set."""


class TimeUp(Cancelled):
    """Raised when a run's :class:`Deadline` has passed: the run ends ``finished``, the items
    left unanswered."""


class Deadline:
    """When a run must end (a timed exam): ``seconds`` from now by ``clock``."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.at = clock() + seconds

    def left(self) -> float:
        """Seconds left (never below 0)."""
        return max(0.0, self.at - self.clock())

    def passed(self) -> bool:
        return self.left() <= 0

    def check(self) -> None:
        """Raise :class:`TimeUp` once the deadline has passed."""
        if self.passed():
            raise TimeUp("time is up")


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


CancelLike = Cancel | threading.Event | Callable[[], bool]


class _Asked(Cancel):
    """A :class:`Cancel` that reads a caller's ``threading.Event`` or ``() -> bool``."""

    def __init__(self, asked: Callable[[], bool]) -> None:
        super().__init__()
        self._asked = asked

    def is_set(self) -> bool:
        return super().is_set() or bool(self._asked())

    def check(self) -> None:
        if self.is_set():
            raise Cancelled()


def as_cancel(cancel: CancelLike | None) -> Cancel | None:
    """``cancel`` as a :class:`Cancel`: a ``threading.Event`` or a callable returning True
    once the job should stop are read at each check.

    >>> event = threading.Event(); token = as_cancel(event); event.set(); token.is_set()
    True
    """
    if cancel is None or isinstance(cancel, Cancel):
        return cancel
    if isinstance(cancel, threading.Event):
        return _Asked(cancel.is_set)
    if callable(cancel):
        return _Asked(cancel)
    raise TypeError(f"cannot cancel with {cancel!r}")


Task = TypeVar("Task")
Done = TypeVar("Done")


def in_flight(
    work: Callable[[Task], Done],
    todo: Iterable[Task],
    concurrency: int = 1,
    cancel: Cancel | None = None,
    stop: Callable[[], None] | None = None,
    name: str = "medexam-work",
) -> Iterator[tuple[Task, Done]]:
    """``(task, work(task))`` for each of ``todo``: one at a time in order, or with up to
    ``concurrency`` in flight on a thread pool, in the order they finish. What the run loop
    answers items with and what a rescore scores answers with.

    When one fails, no more are started; those in flight finish and are given, then the
    failure is raised. Once ``cancel`` is set no more start, ``stop`` is called (to end the
    models' requests in flight at once), what comes back after it (cut short) is not given,
    and :class:`Cancelled` is raised. Left early (Ctrl-C in the caller), the tasks not
    started are dropped and ``stop`` ends those in flight.

    >>> [done for _, done in in_flight(lambda n: n * n, [1, 2, 3])]
    [1, 4, 9]
    """
    if concurrency <= 1:
        for task in todo:
            if cancel is not None:
                cancel.check()
            done = work(task)
            if cancel is not None:
                cancel.check()
            yield task, done
        return
    pending = ((task,) for task in todo)
    failure: BaseException | None = None
    stopped = False
    with ThreadPoolExecutor(concurrency, thread_name_prefix=name) as pool:
        flying: dict[Future[Done], Task] = {}
        try:
            while True:
                cancelled = cancel is not None and cancel.is_set()
                if cancelled and flying and not stopped and stop is not None:
                    stop()
                    stopped = True
                while failure is None and not cancelled and len(flying) < concurrency:
                    nxt = next(pending, None)
                    if nxt is None:
                        break
                    flying[pool.submit(work, nxt[0])] = nxt[0]
                if not flying:
                    break
                finished, _ = wait(flying, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = flying.pop(future)
                    try:
                        done = future.result()
                    except Exception as exc:  # noqa: BLE001 - raised once the rest are in
                        failure = failure or exc
                        continue
                    if cancel is None or not cancel.is_set():
                        yield task, done
        finally:
            for future in flying:
                future.cancel()
            if flying and stop is not None and not stopped:  # left early: end them now
                stop()
    if failure is not None and (cancel is None or not cancel.is_set()):
        raise failure
    if cancel is not None:
        cancel.check()


def report(
    callback: ProgressCallback | None, done: int, total: int, message: str = "", **info: JSONValue
) -> None:
    """Call ``callback`` if there is one."""
    if callback is not None:
        callback(Progress(done, total, message, info))


def clock_text(seconds: float) -> str:
    """Seconds as ``m:ss`` (``h:mm:ss`` from an hour on)."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class TenthLines:
    """Progress as lines, for output that is not a terminal (a log, CI): one line each time
    a job passes another tenth of its work — the percentage, units done of all (``unit``:
    items by default), the time elapsed and the time left — so a log shows a long job moving.

    >>> lines = []
    >>> tenths = TenthLines("scoring", lines.append, clock=iter(range(0, 99, 3)).__next__)
    >>> for done in range(1, 5): tenths(Progress(done, 4))
    >>> lines[1]
    'scoring: 50% (2/4 items) · 0:06 elapsed · 0:06 left'
    """

    def __init__(
        self,
        description: str,
        write: Callable[[str], None],
        note: Callable[[Progress], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        unit: str = "items",
    ) -> None:
        self.description, self.write, self.note, self.clock = description, write, note, clock
        self.unit = unit
        self.started = clock()
        self.tenth = 0  # the last tenth written

    def __call__(self, p: Progress) -> None:
        if not p.total:
            return
        tenth = min(10, int(10 * p.done / p.total))
        if tenth <= self.tenth:
            return
        self.tenth = tenth
        elapsed = self.clock() - self.started
        left = elapsed * (p.total - p.done) / p.done if p.done else None
        said = f"{self.description}: {100 * p.done / p.total:.0f}% ({p.done}/{p.total} {self.unit})"
        said += f" · {clock_text(elapsed)} elapsed"
        said += f" · {clock_text(left)} left" if left is not None and p.done < p.total else ""
        text = self.note(p) if self.note is not None else p.message
        self.write(f"{said} · {text[:80]}" if text else said)
