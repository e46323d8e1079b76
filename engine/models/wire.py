"""What medexam reads from a server, and for how long.

Every request to a served model runs under a :class:`Budget`: a total deadline (connecting,
the headers, the body and any retries all count), a cancel that reaches it at once, and a
cap on the bytes read. They are enforced where the bytes arrive, in the socket reads of the
HTTP client (:class:`GuardedBackend`, httpcore's network layer), so a server that drips one
byte a second, sends without end or answers with gigabytes holds a request no longer and
no bigger than its budget, headers included. A read waits at most :data:`POLL_S` at a time,
so a cancel is seen within that.

:func:`make_client` gives the ``openai`` client built on it: no retries of its own (the
caller retries within the budget, :mod:`engine.models.server`), redirects never followed,
proxies from the environment never used (only the address given is contacted) and HTTP
basic credentials, when given, sent with every request.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpcore2
import httpx2
import openai

from engine.errors import MedexamError

__all__ = ["Budget", "GuardedBackend", "Stopped", "make_client"]

POLL_S = 0.1  # the longest a socket read waits before the budget is looked at again
CONNECT_TIMEOUT_S = 10.0

_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "medexam_request_budget", default=None
)


class Stopped(openai.OpenAIError, MedexamError):
    """A request its budget stopped: ``why`` is ``"cancelled"``, ``"deadline"`` or
    ``"size"``. (An ``openai`` error, so that the client passes it on as it is.)"""

    def __init__(self, why: str, budget: Budget) -> None:
        super().__init__(why)
        self.why = why
        self.budget = budget


@dataclass(eq=False)
class Budget:
    """One request's limits: ``seconds`` in all from now, at most ``max_bytes`` read."""

    seconds: float
    max_bytes: int
    read: int = 0
    started: float = field(default_factory=time.monotonic)
    cancelled: threading.Event = field(default_factory=threading.Event)

    def left(self) -> float:
        return self.started + self.seconds - time.monotonic()

    def check(self) -> None:
        """Raise :class:`Stopped` when cancelled or past the deadline."""
        if self.cancelled.is_set():
            raise Stopped("cancelled", self)
        if self.left() <= 0:
            raise Stopped("deadline", self)

    def count(self, n: int) -> None:
        self.read += n
        if self.read > self.max_bytes:
            raise Stopped("size", self)

    def cancel(self) -> None:
        self.cancelled.set()

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` (a retry's backoff), cut short by cancel and the deadline."""
        self.cancelled.wait(max(0.0, min(seconds, self.left())))
        self.check()

    @contextlib.contextmanager
    def active(self) -> Iterator[Budget]:
        """The reads of this thread run under this budget meanwhile."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


def _bounded(timeout: float | None, budget: Budget | None) -> float | None:
    if budget is None:
        return timeout
    budget.check()
    left = max(budget.left(), 0.001)
    return left if timeout is None else min(timeout, left)


class GuardedStream(httpcore2.NetworkStream):
    """A connection whose reads and writes keep to the budget of the request using it."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget = _CURRENT.get()
        if budget is None:
            return self._inner.read(max_bytes, timeout)
        waited = 0.0
        while True:
            budget.check()
            step = min(POLL_S, max(budget.left(), 0.001))
            try:
                data = self._inner.read(max_bytes, step)
            except httpcore2.ReadTimeout:
                waited += step
                if timeout is not None and waited >= timeout:
                    raise
                continue
            budget.count(len(data))
            return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, _CURRENT.get()))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, _CURRENT.get())
        return GuardedStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class GuardedBackend(httpcore2.SyncBackend):
    """httpcore's network layer, its connections kept to the budget of each request."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, _CURRENT.get())
        return GuardedStream(
            super().connect_tcp(host, port, bounded, local_address, socket_options)
        )


class _Transport(httpx2.HTTPTransport):
    """httpx's transport over :class:`GuardedBackend` (and no proxy)."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            max_connections=64,
            max_keepalive_connections=16,
            network_backend=GuardedBackend(),
        )


def make_client(url: str, api_key: str | None, auth: tuple[str, str] | None) -> openai.OpenAI:
    """An ``openai`` client for the server at ``url`` (see the module docstring): every
    request made with it should run under a :class:`Budget` (:meth:`Budget.active`)."""
    http = httpx2.Client(
        transport=_Transport(),
        follow_redirects=False,
        timeout=httpx2.Timeout(None, connect=CONNECT_TIMEOUT_S),
        auth=auth,
        trust_env=False,
    )
    return openai.OpenAI(
        base_url=url.rstrip("/"),
        api_key=api_key or "none",
        max_retries=0,
        timeout=httpx2.Timeout(None, connect=CONNECT_TIMEOUT_S),
        http_client=http,
    )
