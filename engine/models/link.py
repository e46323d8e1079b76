"""The parent's end of a model process's pipe, shared by every thread that asks the model.

Messages go both ways as ``(request id, kind, value)``; the model process sends what one
decode step has to say as one list of them. A thread of the :class:`Link` reads the pipe and
hands each reply to the :class:`Request` it answers, so that several threads'
requests are in flight at once (the model process decodes them together). When the process
dies, every request still waiting is told so (``("crashed", why)``), and so is any later one.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from multiprocessing.connection import Connection
from typing import Any

from engine.models.protocol import ModelCrashed

_POLL_S = 0.05


def exit_reason(proc: Any) -> str:
    """Why the model process ``proc`` is gone, in a line."""
    proc.join(timeout=5)  # a closed pipe may be seen before the process is reaped
    code = proc.exitcode
    how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return f"the model process stopped ({how}); restart the model to go on"


def first_message(conn: Connection, proc: Any) -> tuple[int, str, Any]:
    """The process's first message (``ready`` or ``error``), read before a :class:`Link`
    reads the pipe; :class:`ModelCrashed` when the process dies first."""
    while True:
        try:
            if conn.poll(_POLL_S):  # a KeyboardInterrupt here leaves the pipe intact
                return conn.recv()
        except (EOFError, OSError):
            break
        if not proc.is_alive():
            with contextlib.suppress(EOFError, OSError):
                if conn.poll(0):  # its last words, sent just before it died
                    return conn.recv()
            break
    raise ModelCrashed(exit_reason(proc))


class Request:
    """One request in flight: its id and its replies, in order."""

    def __init__(self, rid: int) -> None:
        self.rid = rid
        self.replies: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.open = True  # its answer ("done" or "error") is not read yet
        self.answered = False  # its answer (or the process's end) has come
        self.settled = False  # a later request of its thread cancelled and drained it

    def next(self, timeout: float = _POLL_S) -> tuple[str, Any] | None:
        """The next reply; None when none came within ``timeout`` seconds."""
        try:
            return self.replies.get(timeout=timeout)
        except queue.Empty:
            return None


class Link:
    """The pipe to one model process (``proc``) and the thread reading it."""

    def __init__(self, conn: Connection, proc: Any) -> None:
        self.conn, self.proc = conn, proc
        self.requests: dict[int, Request] = {}
        self.gone: str | None = None  # why the process is gone, once it is
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="medexam-model-link", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, op: str, kwargs: dict[str, Any]) -> Request:
        """Send request ``op``; raises ``OSError`` (or ``BrokenPipeError``) when the pipe
        is gone, and returns a request already told why when the process is."""
        req = Request(next(self._ids))
        self.requests[req.rid] = req
        if self.gone is not None:  # after registering: the reader tells it or it is told here
            req.replies.put(("crashed", self.gone))
            return req
        self.send((req.rid, op, kwargs))
        return req

    def send(self, message: tuple[int, str, Any]) -> None:
        with self._send_lock:
            self.conn.send(message)

    def cancel(self, rid: int | None) -> None:
        """Ask the process to stop request ``rid`` (None: every request); no answer."""
        with contextlib.suppress(OSError, ValueError):
            self.send((0, "cancel", rid))

    def unanswered(self) -> list[Request]:
        """The requests in flight whose answer has not come."""
        return [r for r in list(self.requests.values()) if not r.answered]

    def forget(self, req: Request) -> None:
        self.requests.pop(req.rid, None)

    def close(self) -> None:
        """Stop reading (the process has ended or been killed) and close the pipe."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        self.conn.close()

    def _read(self) -> None:
        conn = self.conn
        try:
            while not self._stop.is_set():
                if conn.poll(_POLL_S):
                    self._deliver(conn.recv())
                elif not self.proc.is_alive():
                    while conn.poll(0):  # its last words, sent just before it died
                        self._deliver(conn.recv())
                    break
        except (EOFError, OSError):
            pass
        self._lost()

    def _deliver(self, message: tuple[int, str, Any] | list[tuple[int, str, Any]]) -> None:
        """Hand a message (or each of a decode step's list of them) to its request."""
        for rid, kind, value in message if isinstance(message, list) else [message]:
            req = self.requests.get(rid)
            if req is not None:
                req.answered = kind in ("done", "error")
                req.replies.put((kind, value))

    def _lost(self) -> None:
        """Tell every waiting request (and every later one) that the process is gone."""
        self.gone = exit_reason(self.proc)
        for req in list(self.requests.values()):
            req.answered = True
            req.replies.put(("crashed", self.gone))
