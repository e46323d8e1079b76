"""Talking to an OpenAI-compatible server: :class:`Server` makes each request under a budget
(:class:`engine.models.wire.Budget`: a total deadline, cancel, a cap on what is read),
retries transient faults within that budget, and turns every failure into the engine's
errors, on one line, in the server's own words, never with credentials.

* A request is refused (400, 413, 422), or its answer is too big for what was asked
  (:func:`read_cap`): :class:`~engine.models.protocol.ModelError`, this request only.
* The server cannot be reached, keeps failing, answers past the deadline, redirects
  (medexam follows no redirects), or answers something that is not the API's:
  :class:`ServerUnavailable` (a :class:`~engine.models.protocol.ModelCrashed`: a run stops,
  and resumes once the server is back).
* Cancel (:meth:`Server.cancel`): :class:`~engine.core.progress.Cancelled` at once.

Credentials never travel in an address: :func:`split_credentials` takes them out, and they
are read, like the API key, from an environment variable (:func:`read_auth`, which holds
``user:password``).
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import random
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from engine.core.progress import Cancelled
from engine.errors import UserError
from engine.models.protocol import ModelCrashed, ModelError

__all__ = [
    "NoLogprobs",
    "Server",
    "ServerUnavailable",
    "TooLarge",
    "fields",
    "read_cap",
    "root_of",
    "split_credentials",
]

RETRIES = 3  # retries of a transient fault, with exponential backoff, within the deadline
TIMEOUT_S = 600.0  # one request in all (connecting, waiting, reading, retries), generation included
PROBE_TIMEOUT_S = 10.0  # one request probing what a server offers
READ_BASE = 4 * 2**20  # bytes read of any answer…
READ_PER_TOKEN = 2048  # …and this much more per token asked for (streamed events are verbose)

T = TypeVar("T")


class ServerUnavailable(ModelCrashed):
    """The server cannot be reached, keeps failing or does not speak the API (after the
    retries): the run stops, and resumes once the server is back."""


class TooLarge(ModelError):
    """The server sent more than :func:`read_cap` allows for one answer."""


class NoLogprobs(UserError, ValueError):
    """The server returns no log-probabilities: the ``logprob`` methods cannot run on it."""


def read_cap(max_tokens: int = 0) -> int:
    """The most bytes read of one answer that asks for ``max_tokens`` tokens."""
    return READ_BASE + READ_PER_TOKEN * max(0, int(max_tokens))


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without the ``user:password@`` it may hold, and those credentials (None when
    it holds none)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (parts.username or "", parts.password or "")


def root_of(url: str) -> str:
    """The server's address without the API's ``/v1`` (where llama-server and vLLM keep
    their own endpoints)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def read_api_key(env: str | None) -> str | None:
    """The API key held in the environment variable ``env`` (None: no key)."""
    if not env:
        return None
    key = os.environ.get(env)
    if not key:
        raise ModelError(f"the environment variable {env} (the server's API key) is not set")
    return key


def read_auth(env: str | None) -> tuple[str, str] | None:
    """HTTP basic credentials from the environment variable ``env``, which holds
    ``user:password`` (None: no variable named)."""
    if not env:
        return None
    value = os.environ.get(env)
    if not value or ":" not in value:
        raise ModelError(
            f"the environment variable {env} (the server's user:password) is not set"
            if not value
            else f"the environment variable {env} holds no user:password"
        )
    user, _, password = value.partition(":")
    return user, password


def message(exc: Exception) -> str:
    """The server's own words for a failed request, on one line."""
    import openai

    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        err = body.get("error", body)
        text = err.get("message", "") if isinstance(err, dict) else str(err)
        text = text or str(body.get("detail", ""))
    if not text and isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None:
        text = str(exc.__cause__)
    text = str(text or exc or type(exc).__name__)
    return " ".join(text.split())[:400]


def _retry_after(response: Any) -> float | None:
    """The seconds a ``Retry-After`` header asks for, when it says."""
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _transient(exc: Exception) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError)  # timeouts included


class Server:
    """The OpenAI API of the server at ``url`` (``http://HOST:PORT/v1``), for requests from
    any thread. ``api_key_env`` and ``auth_env`` name the environment variables holding the
    API key and ``user:password`` (credentials in ``url`` itself are used too, but never
    kept in :attr:`url`); ``retries`` and ``timeout`` are each request's, unless it says.
    ``name`` opens every error message."""

    def __init__(
        self,
        url: str,
        *,
        api_key_env: str | None = None,
        auth_env: str | None = None,
        retries: int = RETRIES,
        timeout: float = TIMEOUT_S,
        name: str = "",
    ) -> None:
        from engine.models import wire

        clean, credentials = split_credentials(url)
        self.url = clean.rstrip("/")
        self.root = root_of(self.url)
        self.retries, self.timeout, self.name = retries, timeout, name
        auth = read_auth(auth_env) or credentials
        self._client = wire.make_client(self.url, read_api_key(api_key_env), auth)
        self._flying: set[Any] = set()
        self._lock = threading.Lock()

    # -- requests ----------------------------------------------------------------------------

    def budget(self, seconds: float | None = None, max_tokens: int = 0) -> Any:
        """A fresh budget for one request (:meth:`request` and :meth:`stream` make their own
        when given none)."""
        from engine.models.wire import Budget

        return Budget(self.timeout if seconds is None else seconds, read_cap(max_tokens))

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        seconds: float | None = None,
        max_tokens: int = 0,
        retries: int | None = None,
    ) -> Any:
        """The JSON answer of one request: ``path`` below the API's address (``/models``)
        or, starting with ``//``, below the server's root (``//props``). Errors as the module
        docstring says."""
        budget = self.budget(seconds, max_tokens)
        url = self._where(path)

        def call() -> Any:
            if method == "get":
                return self._client.get(url, cast_to=object)
            return self._client.post(url, body=body or {}, cast_to=object)

        with self._running(budget), self.errors(budget):
            return self._attempts(budget, self.retries if retries is None else retries, call)

    def stream(self, path: str, body: dict[str, Any], budget: Any) -> Generator[Any, None, None]:
        """The events of a streamed request (``"stream": true`` is added), each a JSON
        value, read under ``budget``; cancelling the budget ends them with
        :class:`~engine.core.progress.Cancelled`."""
        import openai

        url = self._where(path)

        def call() -> Any:
            return self._client.post(
                url,
                body={**body, "stream": True},
                cast_to=object,
                stream=True,
                stream_cls=openai.Stream[object],
            )

        with self._running(budget), self.errors(budget):
            events = self._attempts(budget, self.retries, call)
            try:
                kind = events.response.headers.get("content-type", "")
                if "text/event-stream" not in kind:
                    raise ServerUnavailable(
                        f"{self._who}{self.url} answered {kind or 'without a content type'} "
                        "where a stream of events belongs"
                    )
                it = iter(events)
                while True:
                    with budget.active():
                        event = next(it, _END)
                    if event is _END:
                        return
                    yield event
            finally:
                events.close()

    def cancel(self) -> None:
        """Stop every request in flight at once (each raises
        :class:`~engine.core.progress.Cancelled`)."""
        with self._lock:
            for budget in self._flying:
                budget.cancel()

    def close(self) -> None:
        self._client.close()

    # -- inside ------------------------------------------------------------------------------

    @property
    def _who(self) -> str:
        return f"{self.name}: " if self.name else ""

    def _where(self, path: str) -> str:
        return self.root + path[1:] if path.startswith("//") else path

    @contextlib.contextmanager
    def _running(self, budget: Any) -> Iterator[None]:
        with self._lock:
            self._flying.add(budget)
        try:
            yield
        finally:
            with self._lock:
                self._flying.discard(budget)

    def _attempts(self, budget: Any, retries: int, call: Callable[[], T]) -> T:
        """``call()`` under ``budget``, a transient fault tried again up to ``retries``
        times with exponential backoff (or what the server's ``Retry-After`` asks), as
        long as the budget lasts."""
        attempt = 0
        while True:
            try:
                with budget.active():
                    return call()
            except Exception as exc:
                if attempt >= retries or not _transient(exc):
                    raise
                wait = _retry_after(getattr(exc, "response", None))
                if wait is None:
                    wait = min(8.0, 0.5 * 2**attempt) * (0.75 + random.random() / 2)  # noqa: S311
                if wait >= budget.left():
                    raise
            budget.wait(wait)
            attempt += 1

    @contextlib.contextmanager
    def errors(self, budget: Any) -> Iterator[None]:
        """The client's errors as the engine's (see the module docstring)."""
        import httpx2
        import openai

        from engine.models.wire import Stopped

        who, url = self._who, self.url
        try:
            yield
        except Stopped as exc:
            raise self._stopped(exc) from None
        except openai.APIStatusError as exc:
            status, msg = exc.status_code, message(exc)
            if 300 <= status < 400:
                where = split_credentials(exc.response.headers.get("location") or "?")[0]
                raise ServerUnavailable(
                    f"{who}the server redirected to {' '.join(where.split())[:200]}: "
                    "medexam follows no redirects"
                ) from None
            if status in (400, 413, 422):
                raise ModelError(f"{who}the server refused the request: {msg}") from None
            raise ServerUnavailable(f"{who}{url} answered {status}: {msg}") from None
        except openai.APIConnectionError as exc:
            raise ServerUnavailable(f"{who}no answer from {url} ({message(exc)})") from None
        except (openai.APIResponseValidationError, ValueError) as exc:  # JSON that is not
            raise ServerUnavailable(f"{who}malformed answer from {url} ({exc})") from None
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise ServerUnavailable(f"{who}{url} failed: {message(exc)}") from None

    def _stopped(self, exc: Any) -> Exception:
        budget = exc.budget
        if exc.why == "cancelled":
            return Cancelled()
        if exc.why == "size":
            return TooLarge(
                f"{self._who}{self.url} sent more than {_size(budget.max_bytes)} for one "
                "answer; medexam reads no more"
            )
        return ServerUnavailable(
            f"{self._who}{self.url} sent no complete answer within {budget.seconds:g} s"
        )


_END = object()


def fields(options: dict[str, Any]) -> dict[str, Any]:
    """The request fields of the engine's generation options. ``top_k`` and
    ``repeat_penalty`` go in the body for the servers that know them, the penalty at the
    engine's own default (none) unless given: llama-cpp-python's server would apply 1.1."""
    out: dict[str, Any] = {
        "max_tokens": int(options.get("max_tokens", 256)),
        "temperature": float(options.get("temperature", 0.0)),
    }
    if options.get("seed") is not None:
        out["seed"] = int(options["seed"])
    stop = [s for s in options.get("stop") or () if s]
    if stop:
        out["stop"] = stop[:4]
    if options.get("top_p") is not None:
        out["top_p"] = float(options["top_p"])
    out["repeat_penalty"] = float(options.get("repeat_penalty") or 1.0)
    if options.get("top_k") is not None:
        out["top_k"] = int(options["top_k"])
    return out
