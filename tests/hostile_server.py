"""An OpenAI-compatible server built to break its clients, for the tests of what medexam does
with hostile servers. It listens on 127.0.0.1 only, on a free port, in a thread of the test
process; every loop it runs is bounded and it stops by itself after :attr:`lifetime` seconds.

``HostileServer(mode)`` answers like a small, well-behaved server (one model, ``hostile``;
plain and chat completions, streamed or not, with top log-probabilities) except where
``mode`` says otherwise, on the paths in ``paths`` (default: every path), and with
``questions_only`` only on completions that are not a client's probe (whose prompt is
"The capital of France is" or "Hi"):

* ``drip``: the whole response, status line included, one byte every ``interval`` seconds,
  and after the answer spaces that never end (until ``drip_for`` seconds have passed);
* ``huge``: a completion of ``huge_bytes`` characters, sent as fast as the socket takes it;
* ``long``: a completion of ``long_chars`` characters, within any sane limit on bytes;
* ``html``: status 200 with a ``text/html`` page;
* ``redirect``: 302 to ``location``;
* ``status``: ``status_code`` (400) with an OpenAI-style error, on everything;
* ``many-models``: ``/v1/models`` lists ``n_models`` models;
* ``models-strings``: ``/v1/models`` lists strings and numbers instead of models;
* ``logprobs``: the top log-probabilities of an answer's first token are ``logprobs``
  (any JSON value, NaN included: ``float("nan")``) wherever the prompt is not the probe's
  ("The capital of France is"), which gets sane ones.

Every request is kept in :attr:`requests` (method, path, headers).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

MODEL = "hostile"
PROBE_PROMPT = "The capital of France is"
SANE_TOP = {" Paris": -0.1, " the": -2.5, " a": -3.0, "A": -4.0, "B": -4.5}
LETTERS_TOP = {"A": -0.3, "B": -1.6, "C": -2.9, "D": -3.3, "E": -4.1}


class HostileServer:
    """See the module docstring; a context manager (started on entry, stopped on exit)."""

    def __init__(
        self,
        mode: str = "ok",
        *,
        paths: tuple[str, ...] | None = None,
        questions_only: bool = False,
        interval: float = 1.0,
        drip_for: float = 60.0,
        huge_bytes: int = 50_000_000,
        long_chars: int = 200_000,
        location: str = "http://127.0.0.1:9/v1/models",
        status_code: int = 400,
        n_models: int = 10_000,
        logprobs: Any = None,
        reply: str = "答案：B",
        lifetime: float = 120.0,
    ) -> None:
        self.mode = mode
        self.paths = paths
        self.questions_only = questions_only
        self.interval = interval
        self.drip_for = drip_for
        self.huge_bytes = huge_bytes
        self.long_chars = long_chars
        self.location = location
        self.status_code = status_code
        self.n_models = n_models
        self.logprobs = logprobs
        self.reply = reply
        self.lifetime = lifetime
        self.requests: list[dict[str, Any]] = []
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.hostile = self  # type: ignore[attr-defined]
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._stop = threading.Event()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    def start(self) -> HostileServer:
        threading.Thread(target=self._httpd.serve_forever, args=(0.1,), daemon=True).start()
        self._timer.start()
        return self

    def stop(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._timer.cancel()
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def hostile_on(self, path: str, body: dict[str, Any]) -> bool:
        if self.paths is not None and not any(path.startswith(p) for p in self.paths):
            return False
        return not self.questions_only or (
            path.endswith("completions") and _prompt(body) not in ("Hi", PROBE_PROMPT)
        )

    # -- the answers of a sane server ----------------------------------------------------------

    def listing(self) -> Any:
        if self.mode == "many-models":
            return {
                "data": [{"id": f"model-{i:05d}", "object": "model"} for i in range(self.n_models)]
            }
        if self.mode == "models-strings":
            return {"data": ["gpt-4", 42, None]}
        return {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}

    def text(self) -> str:
        if self.mode == "huge":
            return "x" * self.huge_bytes
        if self.mode == "long":
            return "word " * (self.long_chars // 5)
        return self.reply

    def top(self, prompt: str) -> Any:
        if self.mode == "logprobs" and PROBE_PROMPT not in prompt:
            return self.logprobs
        return SANE_TOP if PROBE_PROMPT in prompt else LETTERS_TOP

    def completion(self, body: dict[str, Any], chat: bool) -> dict[str, Any]:
        prompt = _prompt(body)
        wants_top = body.get("logprobs") not in (None, False)
        text = self.text() if not wants_top else next(iter(LETTERS_TOP))
        top = self.top(prompt)
        usage = {"prompt_tokens": max(1, len(prompt) // 4), "completion_tokens": 8}
        if chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            if wants_top:
                tops = (
                    top
                    if not isinstance(top, dict)
                    else [{"token": t, "logprob": v} for t, v in top.items()]
                )
                choice["logprobs"] = {
                    "content": [{"token": "A", "logprob": -0.3, "top_logprobs": tops}]
                }
            return {"object": "chat.completion", "choices": [choice], "usage": usage}
        choice = {"index": 0, "text": text, "finish_reason": "stop"}
        if wants_top:
            choice["logprobs"] = {"tokens": ["A"], "top_logprobs": [top]}
        return {"object": "text_completion", "choices": [choice], "usage": usage}

    def chunks(self, body: dict[str, Any], chat: bool) -> Iterator[bytes]:
        """A streamed completion: the text in pieces of at most 64 KiB, then ``[DONE]``."""
        text = self.text()
        for i in range(0, max(1, len(text)), 65536):
            piece = text[i : i + 65536]
            choice = {"index": 0, "finish_reason": None}
            choice |= {"delta": {"content": piece}} if chat else {"text": piece}
            yield b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"
            if self.stopping:
                return
        end = {"index": 0, "finish_reason": "stop"} | ({"delta": {}} if chat else {"text": ""})
        yield b"data: " + json.dumps({"choices": [end]}).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"


def _prompt(body: dict[str, Any]) -> str:
    """What a completion request asks about: its prompt, or its messages' text."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return str(body.get("prompt", ""))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def hostile(self) -> HostileServer:
        return self.server.hostile  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer({})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self._answer(body if isinstance(body, dict) else {})

    def _answer(self, body: dict[str, Any]) -> None:
        h = self.hostile
        h.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers)}
        )
        mode = h.mode if h.hostile_on(self.path, body) else "ok"
        try:
            if mode == "redirect":
                self._send(302, b"", "text/plain", [("Location", h.location)])
            elif mode == "html":
                page = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
                self._send(200, page, "text/html")
            elif mode == "status":
                error = {
                    "error": {"message": "this server refuses everything", "code": h.status_code}
                }
                self._send(h.status_code, json.dumps(error).encode(), "application/json")
            else:
                self._serve(body, drip=mode == "drip")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client went away

    def _serve(self, body: dict[str, Any], drip: bool) -> None:
        h, path = self.hostile, self.path.split("?")[0]
        if path.endswith("/models"):
            payload: Any = h.listing()
        elif path.endswith("/chat/completions") or path.endswith("/completions"):
            chat = path.endswith("/chat/completions")
            if body.get("stream") and not drip:
                self._stream(h.chunks(body, chat))
                return
            payload = h.completion(body, chat)
        else:
            self._send(404, b'{"error": {"message": "not found"}}', "application/json")
            return
        data = json.dumps(payload, allow_nan=True).encode()
        if drip:
            self._drip(data)
        else:
            self._send(200, data, "application/json")

    def _send(
        self, status: int, data: bytes, kind: str, headers: list[tuple[str, str]] = ()
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
        self.close_connection = True

    def _drip(self, data: bytes) -> None:
        """The response one byte at a time, then spaces, until ``drip_for`` has passed."""
        h = self.hostile
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        until = time.monotonic() + h.drip_for
        stream = iter(head + data)
        while time.monotonic() < until and not h.stopping:
            byte = next(stream, 0x20)
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(h.interval)
        self.close_connection = True


def seconds(call: Callable[[], Any]) -> tuple[float, BaseException | None]:
    """How long ``call()`` took, and what it raised."""
    t0 = time.monotonic()
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the test looks at it
        return time.monotonic() - t0, exc
    return time.monotonic() - t0, None
