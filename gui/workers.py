"""Running engine work off the UI thread.

A job is a plain function ``fn(job, *args, **kwargs)``. It runs on a worker thread and gets a
:class:`Job`: ``job.store`` (a :class:`~engine.store.store.Store` opened for that thread — SQLite
connections cannot cross threads), ``job.progress`` (an engine progress callback),
``job.piece(text)`` (a streamed piece of text) and ``job.cancel`` (an engine
:class:`~engine.core.progress.Cancel` token). Its signals reach the UI thread queued::

    handle = jobs.start(run_exam_job, dataset, on_progress=bar.update, on_done=show)
    handle.stop()     # sets the cancel token; the job ends at its next step

Two pools: ``"jobs"`` runs independent jobs side by side (imports, evaluations, model loads);
``"session"`` is one long-lived thread, so an interactive session object (an exam, a
consultation) created by one job can be used by the next one with the same store connection.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from engine.core.progress import Cancel, Progress

if TYPE_CHECKING:
    from engine.store.store import Store

#: What a job function returns (handed to ``on_done``).
T = TypeVar("T")

_local = threading.local()


def thread_store(db_path: str | None) -> Store:
    """The :class:`~engine.store.store.Store` of the calling thread for ``db_path`` (opened
    once)."""
    from engine.store.store import Store

    stores: dict[str | None, Store] = getattr(_local, "stores", None) or {}
    _local.stores = stores
    if db_path not in stores:
        stores[db_path] = Store(db_path)
    return stores[db_path]


class JobSignals(QObject):
    """What a running job tells the UI. ``ended`` follows ``finished`` or ``error``."""

    progress = Signal(object)  # engine.core.progress.Progress
    piece = Signal(str)
    # anything else a job wants to show as it happens (not ``event``: QObject's own)
    happened = Signal(object)
    finished = Signal(object)
    error = Signal(object)  # the exception, with ``__traceback_text__`` (see show_error)
    ended = Signal()


class Job:
    """The handle a job function receives."""

    def __init__(self, signals: JobSignals, db_path: str | None) -> None:
        self.signals = signals
        self.db_path = db_path
        self.cancel = Cancel()

    @property
    def store(self) -> Store:
        return thread_store(self.db_path)

    def progress(self, p: Progress) -> None:
        """An engine progress callback."""
        self.signals.progress.emit(p)

    def piece(self, text: str) -> None:
        """Send a piece of streamed text to the UI."""
        self.signals.piece.emit(text)

    def emit(self, value: object) -> None:
        """Send any value to the UI (``on_event``)."""
        self.signals.happened.emit(value)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()


# Every started worker, until it ends: a job outlives the screen that started it.
_running: set[Worker] = set()


class Worker(QRunnable):
    """Runs one job function on a pool thread."""

    def __init__(self, fn: Callable[..., object], db_path: str | None, *args: Any, **kwargs: Any):
        super().__init__()
        self.setAutoDelete(False)
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.signals = JobSignals()
        self.job = Job(self.signals, db_path)
        self.running = True

    def run(self) -> None:
        try:
            try:
                result = self.fn(self.job, *self.args, **self.kwargs)
            except BaseException as exc:  # noqa: BLE001 - every failure goes to the UI
                exc.__traceback_text__ = traceback.format_exc()  # type: ignore[attr-defined]
                self.running = False
                self.signals.error.emit(exc)
            else:
                self.running = False
                self.signals.finished.emit(result)
            self.signals.ended.emit()
        except RuntimeError:  # the window went away while the job ran
            pass
        finally:
            _running.discard(self)

    def stop(self) -> None:
        """Ask the job to stop (its cancel token is set)."""
        self.job.cancel.set()


class Jobs(QObject):
    """Starts jobs and keeps them alive until they end; ``busy_changed`` counts running jobs."""

    busy_changed = Signal(int)

    def __init__(self, db_path: str | None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.pools = {"jobs": QThreadPool(self), "session": QThreadPool(self)}
        self.pools["jobs"].setMaxThreadCount(4)
        self.pools["session"].setMaxThreadCount(1)
        for pool in self.pools.values():
            pool.setExpiryTimeout(-1)  # threads (and their store connections) stay
        self.active: set[Worker] = set()

    def start(
        self,
        fn: Callable[..., T],
        *args: Any,
        pool: str = "jobs",
        on_done: Callable[[T], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_piece: Callable[[str], None] | None = None,
        on_event: Callable[[Any], None] | None = None,
        on_ended: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> Worker:
        """Run ``fn(job, *args, **kwargs)`` on a worker thread; callbacks run on the UI thread."""
        worker = Worker(fn, self.db_path, *args, **kwargs)
        s = worker.signals
        callbacks = [
            (s.finished, on_done),
            (s.error, on_error),
            (s.progress, on_progress),
            (s.piece, on_piece),
            (s.happened, on_event),
            (s.ended, on_ended),
        ]
        for signal, callback in callbacks:
            if callback is not None:
                signal.connect(callback)
        s.ended.connect(lambda: self._ended(worker))
        self.active.add(worker)
        _running.add(worker)
        self.busy_changed.emit(len(self.active))
        self.pools[pool].start(worker)
        return worker

    def _ended(self, worker: Worker) -> None:
        self.active.discard(worker)
        self.busy_changed.emit(len(self.active))

    def stop_all(self) -> None:
        for worker in list(self.active):
            worker.stop()

    def wait(self, msecs: int = 30_000) -> bool:
        """Wait for every job to end (at shutdown)."""
        return all(pool.waitForDone(msecs) for pool in self.pools.values())
