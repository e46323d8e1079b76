"""A model behind an OpenAI-compatible server (vLLM, SGLang, llama.cpp's ``llama-server``,
llama-cpp-python's server, Ollama, LM Studio).

:class:`ServedModel` is one more :class:`~engine.models.protocol.ChatModel`:

* chat through ``/v1/chat/completions`` and plain completion through ``/v1/completions``,
  streamed with cancel, token counts from the server's ``usage``, temperature and seed passed
  through;
* letter log-probabilities from ``/v1/completions`` (``logprobs``: the top tokens after the
  prompt, ``max_tokens=1``), or from chat ``top_logprobs`` where only chat offers them;
* the model's chat template where the server shares it (llama-server's ``/apply-template``,
  vLLM's ``/tokenize`` with messages), so chat-formatted prompts can be scored; a server that
  does not share it is given plain-text prompts, as a base model is.

What the server supports is probed once, when the model is opened (each probe within
:data:`~engine.models.server.PROBE_TIMEOUT_S`, all of them within :data:`PROBE_TOTAL_S`),
and kept in ``info``. Every request has a total deadline, stops at once on :meth:`cancel`,
reads at most a few times what the tokens asked for can take (a longer reply is cut:
``finish_reason`` ``"truncated"``) and follows no redirect; every answer is checked before
it is read (:mod:`engine.models.replies`). Transient faults (connection refused, timeouts,
408/409/429/5xx) are retried with backoff within the deadline; then
:class:`ServerUnavailable` (a :class:`~engine.models.protocol.ModelCrashed`) stops the run
with the server's message, and the run resumes once the server is back. Only the address
given is ever contacted, and credentials are never kept with it
(:mod:`engine.models.server`).

This is the ``openai`` backend (:mod:`engine.models.backend`): the catalog remembers a
served model by its address (:class:`ServedInfo`); it takes no memory here, and eight
requests in flight at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.core.progress import Cancelled
from engine.models import replies
from engine.models.backend import Backend, Capabilities, ModelInfo
from engine.models.protocol import ChatModel, Generation, Message, ModelError, TextStream
from engine.models.replies import BadLogprobs, candidate_logprobs, some
from engine.models.server import (
    PROBE_TIMEOUT_S,
    RETRIES,
    TIMEOUT_S,
    NoLogprobs,
    Server,
    ServerUnavailable,
    TooLarge,
    fields,
    split_credentials,
)
from engine.registry import register

__all__ = [
    "NoLogprobs",
    "ServedInfo",
    "ServedModel",
    "ServerUnavailable",
    "candidate_logprobs",
    "list_server_models",
]

TOP_LOGPROBS = 20  # top tokens asked for after the prompt (vLLM's default maximum)
PROBE_TOTAL_S = 30.0  # every probe of a server being opened, together
_PROBE_PROMPT = "The capital of France is"
_USAGE = {"stream_options": {"include_usage": True}}


class ServedStream(TextStream):
    """Text pieces of a streamed request as they arrive; :attr:`result` once it ends."""

    def __init__(self, model: ServedModel, path: str, body: dict[str, Any]) -> None:
        self._model = model
        self._path = path
        self._body = body
        self._max_tokens = int(body["max_tokens"])
        self._budget = model.server.budget(max_tokens=self._max_tokens)
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        model, chat, url = self._model, self._path == "/chat/completions", self._model.url
        t0 = time.perf_counter()
        text, pieces, finish, usage, t_first = "", 0, "length", None, None
        events = model.server.stream(self._path, self._body, self._budget)
        try:
            for event in events:
                usage = replies.usage_of(event) or usage
                for c in replies.choices(event, url):
                    added = replies.text_of(c, chat, url, delta=True)
                    kept, cut = replies.cut(text + added, self._max_tokens)
                    piece = kept[len(text) :]
                    if piece:
                        t_first = t_first or time.perf_counter()
                        text, pieces = kept, pieces + 1
                        yield piece
                    finish = "truncated" if cut else replies.finish_of(c) or finish
                if finish == "truncated":
                    break
                if self._budget.cancelled.is_set():
                    finish = "cancelled"
                    break
        except Cancelled:
            finish = "cancelled"
        except TooLarge:
            finish = "truncated"
        finally:
            events.close()
        t_end = time.perf_counter()
        self.result = Generation(
            text,
            usage[0] if usage else 0,
            (usage[1] if usage else 0) or pieces,
            t_end - t0,
            finish if finish in ("length", "cancelled", "truncated") else "stop",
            (t_first or t_end) - t0,
        )

    def cancel(self) -> None:
        """Stop reading at once: the text so far is the result."""
        self._budget.cancel()


class ServedModel(ChatModel):
    """A model served over the OpenAI API at ``url`` (``http://HOST:PORT/v1``).

    ``api_model`` is the server's id of the model (default: the only one ``/v1/models``
    lists); ``api_key_env`` and ``auth_env`` name the environment variables holding the API
    key and the ``user:password`` of HTTP basic authentication, read now and never stored.
    Requests may come from several threads at once; ``timeout`` bounds each in all.
    """

    def __init__(
        self,
        url: str,
        api_model: str | None = None,
        *,
        name: str | None = None,
        api_key_env: str | None = None,
        auth_env: str | None = None,
        retries: int = RETRIES,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.server = Server(
            url, api_key_env=api_key_env, auth_env=auth_env, retries=retries, timeout=timeout
        )
        self.url, self.root = self.server.url, self.server.root
        self.server.name = name or api_model or ""  # opens its error messages
        self.name = self.server.name or self.url
        self._closed = False
        self._probe_until = time.monotonic() + PROBE_TOTAL_S
        try:
            listed = replies.listed_models(self._probe("get", "/models"), self.url)
            ids = [m["id"] for m in listed]
            self.api_model = api_model or only_model(ids, self.url)
            if self.api_model not in ids:
                raise ServerUnavailable(
                    f"{self.url} serves no model {self.api_model!r} (it serves {some(ids)})"
                )
            self.supports = self._probe_all(listed[ids.index(self.api_model)])
        except BaseException:
            self.server.close()
            raise
        self.info: dict[str, Any] = {
            "backend": "openai",
            "url": self.url,
            "api_model": self.api_model,
            "n_ctx": self.supports.pop("n_ctx", None),
            "has_chat_template": self.supports["template"] is not None,
            "supports": dict(self.supports),
        }

    # -- probing ---------------------------------------------------------------------------

    def _probe(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One probe: no retries, within its own time and what is left of the probes'."""
        left = max(0.001, self._probe_until - time.monotonic())
        return self.server.request(
            method, path, body, seconds=min(PROBE_TIMEOUT_S, left), max_tokens=1, retries=0
        )

    def _optional(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """A probe of an endpoint outside the API (the same address): None when the server
        does not offer it (or answers it badly)."""
        try:
            return self._probe(method, path, body)
        except ModelError:
            return None

    def _probe_all(self, listed: dict[str, Any]) -> dict[str, Any]:
        """What this server offers: log-probabilities (``completions``, ``chat`` or None;
        when none, why not), plain completion, the chat template, a tokenizer, the context."""
        found: dict[str, Any] = {"completions": True, "logprobs": None, "top_logprobs": 0}
        problems: list[str] = []
        for mode, top in (("completions", self._completion_top), ("chat", self._chat_top)):
            if mode == "chat":
                found["completions"] = self._answers_completion()
            for k in (TOP_LOGPROBS, 5):
                try:
                    tops = top(_PROBE_PROMPT, k, probe=True)
                except BadLogprobs as exc:
                    problems.append(str(exc))
                    continue
                except ModelError:
                    continue
                if tops:
                    found["logprobs"], found["top_logprobs"] = mode, k
                    return self._probe_rest(found, listed)
        found["logprobs_problem"] = problems[0] if problems else ""
        return self._probe_rest(found, listed)

    def _probe_rest(self, found: dict[str, Any], listed: dict[str, Any]) -> dict[str, Any]:
        found["template"] = self._probe_template()
        found["tokenizer"] = self._probe_tokenizer()
        props = self._optional("get", "//props")
        n_ctx = replies.positive_int(listed.get("max_model_len"))
        if n_ctx is None and isinstance(props, dict):
            settings = props.get("default_generation_settings")
            n_ctx = (
                replies.positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
            )
        found["n_ctx"] = n_ctx
        return found

    def _answers_completion(self) -> bool:
        body = {"model": self.api_model, "prompt": "Hi", "max_tokens": 1}
        try:
            return bool(replies.choice(self._probe("post", "/completions", body), self.url))
        except ModelError:
            return False

    def _probe_template(self) -> str | None:
        messages = [{"role": "user", "content": "Hi"}]
        applied = self._optional("post", "//apply-template", {"messages": messages})
        if isinstance(applied, dict) and isinstance(applied.get("prompt"), str):
            return "apply-template"
        body = {"model": self.api_model, "messages": messages, "add_generation_prompt": True}
        tokens = self._optional("post", "//tokenize", body)
        if isinstance(tokens, dict) and isinstance(tokens.get("tokens"), list) and tokens["tokens"]:
            return "tokenize"
        return None

    def _probe_tokenizer(self) -> str | None:
        for kind, path, body, key in (
            ("llama-server", "//tokenize", {"content": "Hi there"}, "tokens"),
            ("vllm", "//tokenize", {"model": self.api_model, "prompt": "Hi there"}, "count"),
            ("llama-cpp-python", "//extras/tokenize/count", {"input": "Hi there"}, "count"),
        ):
            r = self._optional("post", path, body)
            if isinstance(r, dict) and r.get(key) and isinstance(r[key], list | int):
                return kind
        return None

    # -- the API -----------------------------------------------------------------------------

    @property
    def has_chat_template(self) -> bool:
        """Whether chat-formatted prompts can be made (the server shares its template); the
        server chats through its template either way."""
        return self.supports["template"] is not None

    @property
    def capabilities(self) -> Capabilities:
        return _capabilities(self)

    @property
    def alive(self) -> bool:
        return not self._closed

    def _post(self, path: str, body: dict[str, Any], max_tokens: int = 0) -> Any:
        return self.server.request("post", path, body, max_tokens=max_tokens)

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the server's chat template makes of ``messages``."""
        kind, msgs, url = self.supports["template"], list(messages), self.url
        if kind == "apply-template":
            return replies.field(
                self._post("//apply-template", {"messages": msgs}), "prompt", str, url
            )
        if kind == "tokenize":
            body = {
                "model": self.api_model,
                "messages": msgs,
                "add_generation_prompt": add_generation_prompt,
            }
            tokens = replies.field(self._post("//tokenize", body), "tokens", list, url)
            r = self._post("//detokenize", {"model": self.api_model, "tokens": tokens})
            return replies.field(r, "prompt", str, url)
        raise ModelError(f"{self.name}: the server does not share the model's chat template")

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the server's tokenizer (a rough estimate, four bytes a
        token, where the server offers none)."""
        kind, url = self.supports["tokenizer"], self.url
        if kind == "llama-server":
            return len(
                replies.field(self._post("//tokenize", {"content": text}), "tokens", list, url)
            )
        if kind == "vllm":
            r = self._post("//tokenize", {"model": self.api_model, "prompt": text})
            return replies.field(r, "count", int, url)
        if kind == "llama-cpp-python":
            return replies.field(
                self._post("//extras/tokenize/count", {"input": text}), "count", int, url
            )
        return max(1, len(text.encode("utf-8")) // 4)

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> ServedStream:
        body = {"model": self.api_model, "messages": list(messages), **self._fields(options)}
        return ServedStream(self, "/chat/completions", body | _USAGE)

    def stream_complete(self, prompt: str, **options: Any) -> ServedStream:
        body = {"model": self.api_model, "prompt": prompt, **self._fields(options)}
        return ServedStream(self, "/completions", body | _USAGE)

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation:
        body = {"model": self.api_model, "messages": list(messages), **self._fields(options)}
        return self._generate("/chat/completions", body)

    def complete(self, prompt: str, **options: Any) -> Generation:
        body = {"model": self.api_model, "prompt": prompt, **self._fields(options)}
        return self._generate("/completions", body)

    def _fields(self, options: dict[str, Any]) -> dict[str, Any]:
        """The request fields of the generation options; ``json_schema`` becomes the
        ``response_format`` this server speaks (llama-cpp-python's server takes the schema
        in a ``json_object`` format, the others OpenAI's ``json_schema``)."""
        out = fields(options)
        schema = options.get("json_schema")
        if schema:
            if self.supports["tokenizer"] == "llama-cpp-python":
                out["response_format"] = {"type": "json_object", "schema": schema}
            else:
                spec = {"name": "reply", "schema": schema, "strict": True}
                out["response_format"] = {"type": "json_schema", "json_schema": spec}
        return out

    def _generate(self, path: str, body: dict[str, Any]) -> Generation:
        """One request that is not streamed; a reply longer than ``max_tokens`` can make is
        cut (``finish_reason`` ``"truncated"``)."""
        t0 = time.perf_counter()
        r = self._post(path, body, max_tokens=body["max_tokens"])
        c = replies.choice(r, self.url)
        chat = path == "/chat/completions"
        text, cut = replies.cut(replies.text_of(c, chat, self.url), body["max_tokens"])
        finish = "truncated" if cut else "length" if replies.finish_of(c) == "length" else "stop"
        prompt_tokens, completion_tokens = replies.usage_of(r) or (0, 0)
        seconds = time.perf_counter() - t0
        return Generation(
            text, prompt_tokens, completion_tokens, seconds, finish, replies.prompt_seconds(r)
        )

    def _logprobs(
        self, prompt: str, candidates: list[str], reuse_prefix: bool, chat_formatted: bool
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` from the top tokens the server lists after the
        prompt (see :func:`candidate_logprobs`). Where only chat gives log-probabilities the
        prompt is the user's message and the first token of the answer is read."""
        mode, k = self.supports["logprobs"], self.supports["top_logprobs"]
        if mode == "completions":
            top = self._completion_top(prompt, k, chat_formatted=chat_formatted)
        elif mode == "chat":
            top = self._chat_top(prompt, k)
        else:
            why = self.supports.get("logprobs_problem")
            raise NoLogprobs(
                f"{self.name}: the server at {self.url} returns no "
                + (f"usable log-probabilities ({why})" if why else "log-probabilities")
                + "; use the 'generate' method instead"
            )
        return candidate_logprobs(top, candidates)

    def _completion_top(
        self, prompt: str, k: int, chat_formatted: bool = False, probe: bool = False
    ) -> dict[str, float]:
        body: dict[str, Any] = {"model": self.api_model, "prompt": prompt, "max_tokens": 1}
        body |= {"temperature": 0.0, "logprobs": k}
        if chat_formatted:
            body["add_special_tokens"] = False
        r = (
            self._probe("post", "/completions", body)
            if probe
            else self._post("/completions", body, 1)
        )
        return replies.top_tokens(replies.choice(r, self.url))

    def _chat_top(self, prompt: str, k: int, probe: bool = False) -> dict[str, float]:
        body: dict[str, Any] = {"model": self.api_model, "max_tokens": 1, "temperature": 0.0}
        body |= {"messages": [{"role": "user", "content": prompt}]}
        body |= {"logprobs": True, "top_logprobs": k}
        path = "/chat/completions"
        r = self._probe("post", path, body) if probe else self._post(path, body, 1)
        return replies.top_tokens(replies.choice(r, self.url))

    def cancel(self) -> None:
        """Stop every request in flight at once: a stream keeps the text it had, any
        other request raises :class:`~engine.core.progress.Cancelled`."""
        self.server.cancel()

    def restart(self) -> None:
        """Nothing to restart here: the server is someone else's; requests simply retry."""
        self._closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.server.close()

    def __repr__(self) -> str:
        return f"<ServedModel {self.name} at {self.url}>"


def only_model(ids: Sequence[str], url: str) -> str:
    """The one model a server lists; :class:`ModelError` naming a few when it lists none
    or several."""
    if len(ids) != 1:
        raise ModelError(
            f"{url} serves {len(ids):,} models ({some(ids)}); name one with --api-model"
        )
    return ids[0]


def list_server_models(
    url: str,
    api_key_env: str | None = None,
    timeout: float = PROBE_TIMEOUT_S,
    auth_env: str | None = None,
) -> list[dict[str, Any]]:
    """What ``/v1/models`` lists, within ``timeout`` seconds in all;
    :class:`ServerUnavailable` when the server does not answer so."""
    server = Server(url, api_key_env=api_key_env, auth_env=auth_env, retries=0)
    try:
        listing = server.request("get", "/models", seconds=timeout, retries=0)
        return replies.listed_models(listing, server.url)
    finally:
        server.close()


# -- the backend ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ServedInfo(ModelInfo):
    """A model served over the OpenAI API, as the catalog remembers it: its address (never
    with credentials), the server's id of the model and the names of the environment
    variables holding the API key and ``user:password`` (never their values)."""

    backend: ClassVar[str] = "openai"
    remote: ClassVar[bool] = True

    url: str
    api_model: str  # the model's id on its server
    api_key_env: str = ""  # the environment variable holding the API key
    auth_env: str = ""  # the environment variable holding user:password (HTTP basic)

    @classmethod
    def of(cls, name: str, entry: dict[str, Any]) -> ServedInfo:
        """The model remembered as ``entry`` (``url``, ``api_model``, ``api_key_env``,
        ``auth_env``); credentials in its address are dropped."""
        url = split_credentials(str(entry["url"]))[0].rstrip("/")
        api_model = str(entry["api_model"])
        return cls(
            name=name,
            origin="added",
            description=f"{api_model} served at {url}",
            url=url,
            api_model=api_model,
            api_key_env=str(entry.get("api_key_env") or ""),
            auth_env=str(entry.get("auth_env") or ""),
        )

    @classmethod
    def from_server(
        cls,
        url: str,
        name: str,
        api_model: str | None = None,
        api_key_env: str | None = None,
        auth_env: str | None = None,
    ) -> ServedInfo:
        """The model ``api_model`` served at ``url``, once the server answers and lists it
        (default: the only model it lists); :class:`ModelError` in one line otherwise.
        Credentials in ``url`` are not used: they belong in ``auth_env``."""
        from urllib.parse import urlparse

        url = split_credentials(url)[0]
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ModelError(f"{url!r} is not a server address (http://HOST:PORT/v1)")
        try:
            listed = list_server_models(url, api_key_env, auth_env=auth_env)
        except ModelError as exc:  # a server that does not answer is bad input here
            raise ModelError(str(exc)) from None
        ids = [m["id"] for m in listed]
        if api_model is None:
            api_model = only_model(ids, url)
        elif api_model not in ids:
            raise ModelError(f"{url} serves no model {api_model!r} (it serves {some(ids)})")
        entry = {"url": url, "api_model": api_model, "api_key_env": api_key_env}
        return cls.of(name, entry | {"auth_env": auth_env})

    def entry(self) -> dict[str, Any]:
        """What the catalog remembers of it."""
        return {
            "backend": self.backend,
            "url": self.url,
            "api_model": self.api_model,
            "api_key_env": self.api_key_env or None,
            "auth_env": self.auth_env or None,
        }

    @property
    def location(self) -> str:
        return self.url

    def summary(self, long: bool = False) -> str:
        return f"served · {self.api_model}"

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("Name", self.name),
            ("Address", self.url),
            ("Model id", self.api_model),
            ("API key variable", self.api_key_env or "none"),
            ("User:password variable", self.auth_env or "none"),
        ]

    def check(self) -> dict[str, Any]:
        """Whether the server answers now (within 3 s) and serves the model:
        ``{"answers", "models", "error"}``."""
        try:
            listed = list_server_models(
                self.url, self.api_key_env or None, timeout=3.0, auth_env=self.auth_env or None
            )
        except ModelError as exc:
            return {"answers": False, "models": [], "error": str(exc)}
        ids = [x["id"] for x in listed]
        if self.api_model not in ids:
            return {"answers": False, "models": ids, "error": f"{self.api_model!r} is not served"}
        return {"answers": True, "models": ids, "error": ""}


def _capabilities(model: ServedModel) -> Capabilities:
    """What the probe found the server offers; eight requests at once; no local cores."""
    supports = model.supports
    return Capabilities(
        logprobs=supports["logprobs"] is not None,
        tokenizer=supports["tokenizer"] is not None,
        chat_template=supports["template"] is not None,
        chats=True,  # the server chats through the model's template, shared or not
        concurrency=8,
    )


def _open(info: ServedInfo, load: dict[str, Any]) -> ServedModel:
    """Connect to the server (the load settings are the server's business)."""
    return ServedModel(
        info.url,
        info.api_model,
        name=info.name,
        api_key_env=info.api_key_env or None,
        auth_env=info.auth_env or None,
    )


SERVED = register(
    "backend",
    Backend(
        name="openai",
        open=_open,
        footprint=lambda info: 0,  # it runs on its server
        capabilities=_capabilities,
        from_entry=ServedInfo.of,
    ),
)
