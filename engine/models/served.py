"""A model behind an OpenAI-compatible server (vLLM, SGLang, llama.cpp's ``llama-server``,
llama-cpp-python's server, Ollama, LM Studio), through the official ``openai`` client.

:class:`ServedModel` is one more :class:`~engine.models.protocol.ChatModel`:

* chat through ``/v1/chat/completions`` and plain completion through ``/v1/completions``,
  streamed with cancel, token counts from the server's ``usage``, temperature and seed passed
  through;
* letter log-probabilities from ``/v1/completions`` (``logprobs``: the top tokens after the
  prompt, ``max_tokens=1``), or from chat ``top_logprobs`` where only chat offers them;
* the model's chat template where the server shares it (llama-server's ``/apply-template``,
  vLLM's ``/tokenize`` with messages), so chat-formatted prompts can be scored; a server that
  does not share it is given plain-text prompts, as a base model is.

What the server supports is probed once, when the model is opened, and kept in ``info``.
Transient faults (connection refused, timeouts, 408/409/429/5xx) are retried with backoff
by the client (a bounded number of times); then :class:`ServerUnavailable` (a
:class:`~engine.models.protocol.ModelCrashed`) stops the run with the server's message, and
the run resumes once the server is back. Only the address given is ever contacted.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from engine.models.protocol import Generation, Message, ModelCrashed, ModelError

__all__ = ["NoLogprobs", "ServedModel", "ServerUnavailable", "list_server_models"]

TOP_LOGPROBS = 20  # top tokens asked for after the prompt (vLLM's default maximum)
RETRIES = 3  # the client's retries of a transient fault, with exponential backoff
TIMEOUT_S = 600.0  # one request, generation included
PROBE_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
_PROBE_PROMPT = "The capital of France is"

T = TypeVar("T")


class ServerUnavailable(ModelCrashed):
    """The server cannot be reached or keeps failing (after the client's retries): the run
    stops, and resumes once the server is back."""


class NoLogprobs(ValueError):
    """The server returns no log-probabilities: the ``logprob`` methods cannot run on it."""


def root_of(url: str) -> str:
    """The server's address without the API's ``/v1`` (where llama-server and vLLM keep
    their own endpoints)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _message(exc: Exception) -> str:
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
    text = text or str(exc) or type(exc).__name__
    return " ".join(text.split())[:400]


def _client(url: str, api_key: str | None, retries: int, timeout: float) -> Any:
    import httpx2
    import openai

    return openai.OpenAI(
        base_url=url.rstrip("/"),
        api_key=api_key or "none",
        max_retries=retries,
        timeout=httpx2.Timeout(timeout, connect=CONNECT_TIMEOUT_S),
    )


def _api_key(env: str | None) -> str | None:
    if not env:
        return None
    key = os.environ.get(env)
    if not key:
        raise ModelError(f"the environment variable {env} (the server's API key) is not set")
    return key


def list_server_models(
    url: str, api_key_env: str | None = None, timeout: float = PROBE_TIMEOUT_S
) -> list[dict[str, Any]]:
    """What ``/v1/models`` lists; :class:`ServerUnavailable` when the server does not answer."""
    client = _client(url, _api_key(api_key_env), 0, timeout)
    try:
        return [m.model_dump() for m in _guard(url, "", client.models.list)]
    finally:
        client.close()


def _guard(url: str, name: str, call: Callable[[], T]) -> T:
    """Run one request; the client's errors become the engine's, with the server's message:
    a refused request (400, 413, 422) is this request's :class:`ModelError`, anything else
    (unreachable, timeouts, other statuses, malformed answers) :class:`ServerUnavailable`."""
    import httpx2
    import openai

    who = f"{name}: " if name else ""
    try:
        return call()
    except openai.APIStatusError as exc:
        msg = _message(exc)
        if exc.status_code in (400, 413, 422):
            raise ModelError(f"{who}the server refused the request: {msg}") from None
        raise ServerUnavailable(f"{who}{url} answered {exc.status_code}: {msg}") from None
    except openai.APIConnectionError as exc:
        raise ServerUnavailable(f"{who}no answer from {url} ({_message(exc)})") from None
    except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
        raise ServerUnavailable(f"{who}malformed answer from {url} ({exc})") from None
    except (openai.APIError, httpx2.HTTPError) as exc:
        raise ServerUnavailable(f"{who}{url} failed: {_message(exc)}") from None


def _options(options: dict[str, Any]) -> dict[str, Any]:
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
    extra = {"repeat_penalty": float(options.get("repeat_penalty") or 1.0)}
    if options.get("top_k") is not None:
        extra["top_k"] = int(options["top_k"])
    out["extra_body"] = extra
    return out


def _matches(top: dict[str, float], candidate: str) -> list[float]:
    exact = [lp for tok, lp in top.items() if tok == candidate]
    if exact:
        return exact
    return [lp for tok, lp in top.items() if tok.strip() == candidate.strip() and tok.strip()]


def candidate_logprobs(top: dict[str, float], candidates: Sequence[str]) -> dict[str, float]:
    """Each candidate's log-probability from the top tokens after the prompt: the token
    spelled as the candidate (or the same once spaces are stripped, summed); a candidate
    absent from the top tokens gets the lowest listed value, an upper bound of its own."""
    if not top:
        raise ModelError("the server listed no top tokens")
    floor = min(top.values())
    out = {}
    for cand in candidates:
        found = _matches(top, cand)
        if not found:
            out[cand] = floor
        elif len(found) == 1:
            out[cand] = found[0]
        else:
            peak = max(found)
            out[cand] = peak + math.log(sum(math.exp(x - peak) for x in found))
    return out


class ServedStream:
    """Text pieces of a streamed request as they arrive; :attr:`result` once it ends."""

    def __init__(self, model: ServedModel, start: Callable[[], Any], chat: bool) -> None:
        self._model = model
        self._start = start
        self._chat = chat
        self._cancel = threading.Event()
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        model = self._model
        t0 = time.perf_counter()
        model._streams.add(self)
        try:
            stream = _guard(model.url, model.name, self._start)
            yield from self._read(stream, t0)
        finally:
            model._streams.discard(self)

    def _read(self, stream: Any, t0: float) -> Iterator[str]:
        import httpx2
        import openai

        text, pieces, finish, usage, t_first = "", 0, "length", None, None
        try:
            for chunk in stream:
                usage = getattr(chunk, "usage", None) or usage
                for choice in chunk.choices or ():
                    piece = (choice.delta.content if self._chat else choice.text) or ""
                    if piece:
                        t_first = t_first or time.perf_counter()
                        text, pieces = text + piece, pieces + 1
                        yield piece
                    finish = choice.finish_reason or finish
                if self._cancel.is_set():
                    finish = "cancelled"
                    break
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise ServerUnavailable(
                f"{self._model.name}: the stream from {self._model.url} broke ({_message(exc)})"
            ) from None
        finally:
            stream.close()
        t_end = time.perf_counter()
        self.result = Generation(
            text,
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or pieces),
            t_end - t0,
            "stop" if finish not in ("length", "cancelled") else finish,
            (t_first or t_end) - t0,
        )

    def cancel(self) -> None:
        """Stop reading: the request is closed, the text so far is the result."""
        self._cancel.set()

    def text(self) -> Generation:
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class ServedModel:
    """A model served over the OpenAI API at ``url`` (``http://HOST:PORT/v1``).

    ``api_model`` is the server's id of the model (default: the only one ``/v1/models``
    lists); ``api_key_env`` names the environment variable holding the API key, read now and
    never stored. Requests may come from several threads at once.
    """

    def __init__(
        self,
        url: str,
        api_model: str | None = None,
        *,
        name: str | None = None,
        api_key_env: str | None = None,
        retries: int = RETRIES,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.url = url.rstrip("/")
        self.root = root_of(self.url)
        self.name = name or api_model or self.url
        self._client = _client(self.url, _api_key(api_key_env), retries, timeout)
        self._probe_client = self._client.with_options(max_retries=0, timeout=PROBE_TIMEOUT_S)
        self._streams: set[ServedStream] = set()
        self._closed = False
        listed = [m.model_dump() for m in self._call(self._probe_client.models.list)]
        self.api_model = api_model or _only_model(listed, self.url)
        if all(m.get("id") != self.api_model for m in listed):
            known = ", ".join(str(m.get("id")) for m in listed) or "none"
            raise ServerUnavailable(f"{self.url} serves no model {self.api_model!r} ({known})")
        self.supports = self._probe(next(m for m in listed if m.get("id") == self.api_model))
        self.info: dict[str, Any] = {
            "served": True,
            "url": self.url,
            "api_model": self.api_model,
            "n_ctx": self.supports.pop("n_ctx", None),
            "has_chat_template": self.supports["template"] is not None,
            "supports": dict(self.supports),
        }

    # -- probing ---------------------------------------------------------------------------

    def _call(self, call: Callable[[], T]) -> T:
        return _guard(self.url, self.name, call)

    def _raw(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One probe of a server endpoint outside the API (the same address); None when the
        server does not offer it."""
        import openai

        try:
            if method == "get":
                return self._probe_client.get(self.root + path, cast_to=object)
            return self._probe_client.post(self.root + path, body=body or {}, cast_to=object)
        except (openai.APIStatusError, openai.APIResponseValidationError, ValueError):
            return None

    def _probe(self, listed: dict[str, Any]) -> dict[str, Any]:
        """What this server offers: log-probabilities (``completions``, ``chat`` or None),
        plain completion, the chat template, a tokenizer, the context size."""
        found: dict[str, Any] = {"completions": True, "logprobs": None, "top_logprobs": 0}
        for k in (TOP_LOGPROBS, 5):
            try:
                top = self._completion_top(_PROBE_PROMPT, k, probe=True)
            except ModelError:
                continue
            if top:
                found["logprobs"], found["top_logprobs"] = "completions", k
                break
        if found["logprobs"] is None:
            found["completions"] = self._answers(self._probe_completion)
            for k in (TOP_LOGPROBS, 5):
                if self._answers(lambda k=k: self._chat_top(_PROBE_PROMPT, k, probe=True)):
                    found["logprobs"], found["top_logprobs"] = "chat", k
                    break
        found["template"] = self._probe_template()
        found["tokenizer"] = self._probe_tokenizer()
        props = self._raw("get", "/props")
        n_ctx = listed.get("max_model_len")
        if not n_ctx and isinstance(props, dict):
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        found["n_ctx"] = int(n_ctx) if n_ctx else None
        return found

    def _answers(self, call: Callable[[], Any]) -> bool:
        try:
            return bool(call())
        except ModelError:
            return False

    def _probe_completion(self) -> bool:
        client = self._probe_client
        r = self._call(
            lambda: client.completions.create(model=self.api_model, prompt="Hi", max_tokens=1)
        )
        return bool(r.choices)

    def _probe_template(self) -> str | None:
        messages = [{"role": "user", "content": "Hi"}]
        applied = self._raw("post", "/apply-template", {"messages": messages})
        if isinstance(applied, dict) and isinstance(applied.get("prompt"), str):
            return "apply-template"
        body = {"model": self.api_model, "messages": messages, "add_generation_prompt": True}
        tokens = self._raw("post", "/tokenize", body)
        if isinstance(tokens, dict) and tokens.get("tokens"):
            return "tokenize"
        return None

    def _probe_tokenizer(self) -> str | None:
        for kind, path, body in (
            ("llama-server", "/tokenize", {"content": "Hi there"}),
            ("vllm", "/tokenize", {"model": self.api_model, "prompt": "Hi there"}),
            ("llama-cpp-python", "/extras/tokenize/count", {"input": "Hi there"}),
        ):
            r = self._raw("post", path, body)
            if isinstance(r, dict) and (r.get("count") or r.get("tokens")):
                return kind
        return None

    # -- the API -----------------------------------------------------------------------------

    @property
    def has_chat_template(self) -> bool:
        """Whether chat-formatted prompts can be made (the server shares its template); the
        server chats through its template either way."""
        return self.supports["template"] is not None

    @property
    def alive(self) -> bool:
        return not self._closed

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the server's chat template makes of ``messages``."""
        kind = self.supports["template"]
        msgs = list(messages)
        if kind == "apply-template":
            r = self._post("/apply-template", {"messages": msgs})
            return str(r["prompt"])
        if kind == "tokenize":
            body = {
                "model": self.api_model,
                "messages": msgs,
                "add_generation_prompt": add_generation_prompt,
            }
            tokens = self._post("/tokenize", body)["tokens"]
            r = self._post("/detokenize", {"model": self.api_model, "tokens": tokens})
            return str(r["prompt"])
        raise ModelError(f"{self.name}: the server does not share the model's chat template")

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return self._call(lambda: self._client.post(self.root + path, body=body, cast_to=object))

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the server's tokenizer (a rough estimate, four bytes a
        token, where the server offers none)."""
        kind = self.supports["tokenizer"]
        if kind == "llama-server":
            return len(self._post("/tokenize", {"content": text})["tokens"])
        if kind == "vllm":
            return int(self._post("/tokenize", {"model": self.api_model, "prompt": text})["count"])
        if kind == "llama-cpp-python":
            return int(self._post("/extras/tokenize/count", {"input": text})["count"])
        return max(1, len(text.encode("utf-8")) // 4)

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> ServedStream:
        body = {"model": self.api_model, "messages": list(messages), **_options(options)}
        usage = {"stream_options": {"include_usage": True}}
        start = lambda: self._client.chat.completions.create(stream=True, **body, **usage)  # noqa: E731
        return ServedStream(self, start, chat=True)

    def stream_complete(self, prompt: str, **options: Any) -> ServedStream:
        body = {"model": self.api_model, "prompt": prompt, **_options(options)}
        usage = {"stream_options": {"include_usage": True}}
        start = lambda: self._client.completions.create(stream=True, **body, **usage)  # noqa: E731
        return ServedStream(self, start, chat=False)

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation:
        t0 = time.perf_counter()
        r = self._call(
            lambda: self._client.chat.completions.create(
                model=self.api_model, messages=list(messages), **_options(options)
            )
        )
        choice = r.choices[0]
        return self._generation(r, choice.message.content or "", choice.finish_reason, t0)

    def complete(self, prompt: str, **options: Any) -> Generation:
        t0 = time.perf_counter()
        r = self._call(
            lambda: self._client.completions.create(
                model=self.api_model, prompt=prompt, **_options(options)
            )
        )
        choice = r.choices[0]
        return self._generation(r, choice.text or "", choice.finish_reason, t0)

    def _generation(self, r: Any, text: str, finish: str | None, t0: float) -> Generation:
        seconds = time.perf_counter() - t0
        timings = (getattr(r, "model_extra", None) or {}).get("timings") or {}
        usage = r.usage
        return Generation(
            text,
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            seconds,
            "length" if finish == "length" else "stop",
            float(timings.get("prompt_ms") or 0.0) / 1000,
        )

    def logprobs(
        self,
        prompt: str,
        candidates: Sequence[str],
        reuse_prefix: bool = True,
        chat_formatted: bool = False,
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` from the top tokens the server lists after the
        prompt (see :func:`candidate_logprobs`). Where only chat gives log-probabilities the
        prompt is the user's message and the first token of the answer is read."""
        if not candidates:
            return {}
        mode, k = self.supports["logprobs"], self.supports["top_logprobs"]
        if mode == "completions":
            top = self._completion_top(prompt, k, chat_formatted=chat_formatted)
        elif mode == "chat":
            top = self._chat_top(prompt, k)
        else:
            raise NoLogprobs(
                f"{self.name}: the server at {self.url} returns no log-probabilities; "
                "use the 'generate' method instead"
            )
        return candidate_logprobs(top, candidates)

    def _completion_top(
        self, prompt: str, k: int, chat_formatted: bool = False, probe: bool = False
    ) -> dict[str, float]:
        client = self._probe_client if probe else self._client
        extra = {"extra_body": {"add_special_tokens": False}} if chat_formatted else {}
        r = self._call(
            lambda: client.completions.create(
                model=self.api_model,
                prompt=prompt,
                max_tokens=1,
                temperature=0.0,
                logprobs=k,
                **extra,
            )
        )
        lp = r.choices[0].logprobs if r.choices else None
        tops = getattr(lp, "top_logprobs", None) or []
        if tops:  # the OpenAI form: one {token: logprob} per position
            return {str(t): float(v) for t, v in (tops[0] or {}).items()}
        content = (getattr(lp, "model_extra", None) or {}).get("content") or []
        if content:  # llama-server's form, as in chat: [{token, logprob, top_logprobs}]
            return {str(t["token"]): float(t["logprob"]) for t in content[0]["top_logprobs"]}
        return {}

    def _chat_top(self, prompt: str, k: int, probe: bool = False) -> dict[str, float]:
        client = self._probe_client if probe else self._client
        r = self._call(
            lambda: client.chat.completions.create(
                model=self.api_model,
                messages=[{"role": "user", "content": prompt}],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=k,
            )
        )
        content = (
            (r.choices[0].logprobs.content or []) if r.choices and r.choices[0].logprobs else []
        )
        if not content:
            return {}
        return {t.token: float(t.logprob) for t in content[0].top_logprobs or []}

    def cancel(self) -> None:
        """Stop every stream in progress (each keeps the text it had)."""
        for stream in list(self._streams):
            stream.cancel()

    def restart(self) -> None:
        """Nothing to restart here: the server is someone else's; requests simply retry."""
        self._closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self) -> ServedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ServedModel {self.name} at {self.url}>"


def _only_model(listed: list[dict[str, Any]], url: str) -> str:
    ids = [str(m.get("id")) for m in listed if m.get("id")]
    if len(ids) != 1:
        raise ModelError(
            f"{url} serves {len(ids)} models ({', '.join(ids) or 'none'}); name one with "
            "--api-model"
        )
    return ids[0]
