"""A scripted model: the model interface with no model behind it, for fast tests of the run
loop, the scorers and the screens.

A :class:`ScriptedModel` follows its script:

* **replies**: one text, a list taken in turn (request 1 gets the first), or a function of
  the :class:`Request` (its prompt, messages, options, number);
* **letter log-probabilities** for ``logprobs``: a table (candidate → value), a function of
  the request, or by default the first capital letter standing alone in the reply to that
  request ("B", "答案：B", "A + D" give B, B, A), most probable by far;
* a **delay** before each reply (seconds, or a function of the request); ``cancel`` cuts it
  short;
* **failures**: ``errors={3: "too long"}`` raises a :class:`ModelError` on request 3 (an
  exception given instead is raised as it is); ``crash_on={2}`` makes request 2 die as a
  model process does (:class:`ModelCrashed`; the model stays down until ``restart``);
* **tokens**: ``count_tokens`` (default: four bytes a token), a reply a word a token, cut at
  ``max_tokens`` and at stop strings; **a context size** (``n_ctx``): a longer prompt is
  refused as llama.cpp refuses it;
* with or without a **chat template** (without it chat is a plain transcript, as for a base
  model), with or without log-probabilities, and how many requests it takes at once.

Every request is kept in :attr:`ScriptedModel.requests`. This is the ``scripted`` backend
(:mod:`engine.models.backend`): :func:`scripted_pool` puts scripted models in a
:class:`~engine.models.pool.ModelPool` under their names, and the run loop leases them like
any model, with no process. A script written in JSON may also be remembered in the catalog's
``models.json`` (``{"name": {"backend": "scripted", "replies": [...], "delay": 0.2}}``), for
tests of the command line and the app in a process of their own.

>>> doctor = ScriptedModel("doctor", replies=["Where does it hurt?", "I have enough."])
>>> pool = scripted_pool(doctor, ScriptedModel("solver", replies="B"))
>>> run(store, "exam", "explaincpe-sample", {"model": "solver"}, pool=pool)  # doctest: +SKIP
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from engine.models.backend import Backend, Capabilities, ModelInfo
from engine.models.protocol import (
    ChatModel,
    Generation,
    ModelCrashed,
    ModelError,
    TextStream,
    chat_as_prompt,
)
from engine.registry import register

if TYPE_CHECKING:
    from engine.models.pool import ModelPool
    from engine.models.protocol import Message

__all__ = ["Request", "ScriptedInfo", "ScriptedModel", "scripted_pool"]

LIKELY, UNLIKELY, ABSENT = -0.05, -4.0, -10.0  # log-probabilities of the default letters


@dataclass(frozen=True)
class Request:
    """One request to a scripted model, as its script functions see it."""

    number: int  # 1 for the model's first request
    kind: str  # "chat", "complete" or "logprobs"
    prompt: str  # the text the model reads (a chat written out in its format)
    messages: tuple[Message, ...] = ()
    candidates: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)


Replies = str | Sequence[str] | Callable[[Request], str]
Logprobs = Mapping[str, float] | Callable[[Request], Mapping[str, float]]


def _estimate(text: str) -> int:
    return max(1, (len(text.encode("utf-8")) + 3) // 4)


class ScriptedStream(TextStream):
    """The reply's words as they are "generated"; :attr:`result` once it ends."""

    def __init__(self, model: ScriptedModel, request: Request, max_tokens: int) -> None:
        self._model = model
        self._request = request
        self._max_tokens = max_tokens
        self._cancel = threading.Event()
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        model, request = self._model, self._request
        stops = [s for s in request.options.get("stop") or () if s]
        text = model._reply_to(request, self._cancel)
        cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
        words = re.findall(r"\s*\S+", text[:cut] if cut >= 0 else text)
        finish = "stop"
        out = []
        for n, word in enumerate(words):
            if self._cancel.is_set():
                finish = "cancelled"
                break
            if n >= self._max_tokens:
                finish = "length"
                break
            out.append(word)
            yield word
        self.result = Generation(
            "".join(out), model.count_tokens(request.prompt), len(out), 0.0, finish
        )

    def cancel(self) -> None:
        self._cancel.set()


class ScriptedModel(ChatModel):
    """A :class:`~engine.models.protocol.ChatModel` that follows a script (see the module
    docstring). Requests may come from several threads at once."""

    def __init__(
        self,
        name: str = "scripted",
        replies: Replies = "A",
        *,
        logprobs: Logprobs | None = None,
        delay: float | Callable[[Request], float] = 0.0,
        errors: Mapping[int, str | BaseException] | None = None,
        crash_on: Iterable[int] = (),
        tokens: Callable[[str], int] = _estimate,
        n_ctx: int = 4096,
        chat_template: bool = True,
        has_logprobs: bool = True,
        concurrency: int = 1,
        size: int = 0,
    ) -> None:
        self.name = name
        self.replies = replies
        self.script_logprobs = logprobs
        self.delay = delay
        self.errors = dict(errors or {})
        self.crash_on = set(crash_on)
        self.tokens = tokens
        self.n_ctx = n_ctx
        self.size = size  # the memory it claims, in bytes (the pool's bound counts it)
        self._caps = Capabilities(
            logprobs=has_logprobs,
            chat_template=chat_template,
            chats=chat_template,
            concurrency=concurrency,
        )
        self.info: dict[str, Any] = {
            "backend": "scripted",
            "n_ctx": n_ctx,
            "n_threads": 1,
            "has_chat_template": chat_template,
            "slots": concurrency,  # sequences at once, as a local model's load says
        }
        self.requests: list[Request] = []
        self.opened = 0  # times the pool opened or restarted it
        self._lock = threading.Lock()
        self._waiting: set[threading.Event] = set()  # the delays in progress
        self._alive = True

    # -- the script --------------------------------------------------------------------------

    def _request(self, kind: str, prompt: str, **fields: Any) -> Request:
        """Count and keep the request; fail it as the script says."""
        with self._lock:
            if not self._alive:
                raise ModelCrashed(f"{self.name} is not running; restart it")
            request = Request(len(self.requests) + 1, kind, prompt, **fields)
            self.requests.append(request)
            if request.number in self.crash_on:
                self._alive = False
                raise ModelCrashed(
                    f"the model process stopped (scripted crash on request {request.number}); "
                    "restart the model to go on"
                )
        error = self.errors.get(request.number)
        if isinstance(error, BaseException):
            raise error
        if error is not None:
            raise ModelError(error)
        n = self.count_tokens(prompt)
        if n >= self.n_ctx:
            raise ModelError(f"the prompt has {n} tokens; the context holds {self.n_ctx}")
        return request

    def _reply_to(self, request: Request, cancel: threading.Event) -> str:
        """The scripted reply, after the scripted delay (cut short by ``cancel``)."""
        delay = self.delay(request) if callable(self.delay) else self.delay
        if delay > 0:
            with self._lock:
                self._waiting.add(cancel)
            try:
                cancel.wait(delay)
            finally:
                with self._lock:
                    self._waiting.discard(cancel)
        replies = self.replies
        if callable(replies):
            return str(replies(request))
        if isinstance(replies, str):
            return replies
        return replies[(request.number - 1) % len(replies)]

    def _letter_logprobs(self, request: Request) -> dict[str, float]:
        script = self.script_logprobs
        if script is None:
            reply = self._reply_to(request, threading.Event())
            found = re.search(r"(?<![A-Za-z])[A-Z](?![A-Za-z])", reply)
            letter = found.group() if found else reply.strip()[:1].upper()
            table = {c: LIKELY if c.strip().upper() == letter else UNLIKELY
                     for c in request.candidates}  # fmt: skip
        else:
            self._reply_to(request, threading.Event())  # the delay
            table = dict(script(request) if callable(script) else script)
        by_text = {k.strip(): v for k, v in table.items()}
        return {c: table.get(c, by_text.get(c.strip(), ABSENT)) for c in request.candidates}

    # -- the model interface ---------------------------------------------------------------

    @property
    def has_chat_template(self) -> bool:
        return self._caps.chat_template

    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    @property
    def alive(self) -> bool:
        return self._alive

    @property
    def pid(self) -> int | None:
        return None

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The conversation in a small chat format of its own (``<|user|>`` turns)."""
        if not self.has_chat_template:
            raise ModelError("this model has no chat template: use plain completion")
        text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
        return text + ("<|assistant|>\n" if add_generation_prompt else "")

    def count_tokens(self, text: str) -> int:
        return int(self.tokens(text))

    def stream_complete(self, prompt: str, **options: Any) -> ScriptedStream:
        request = self._request("complete", prompt, options=options)
        return ScriptedStream(self, request, int(options.get("max_tokens", 256)))

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> ScriptedStream:
        prompt, options = chat_as_prompt(self, messages, options)
        request = self._request("chat", prompt, messages=tuple(messages), options=options)
        return ScriptedStream(self, request, int(options.get("max_tokens", 256)))

    def _logprobs(
        self, prompt: str, candidates: list[str], reuse_prefix: bool, chat_formatted: bool
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` as scripted (see the module docstring)."""
        if not self._caps.logprobs:
            raise ModelError(f"{self.name} returns no log-probabilities")
        request = self._request("logprobs", prompt, candidates=tuple(candidates))
        return self._letter_logprobs(request)

    def cancel(self) -> None:
        """Cut the delays in progress short (a stream then ends as cancelled)."""
        with self._lock:
            for event in self._waiting:
                event.set()

    def open(self) -> ScriptedModel:
        """Ready for requests (the pool opens it; a crashed one comes back)."""
        self._alive = True
        self.opened += 1
        return self

    def restart(self) -> None:
        self.open()

    def close(self) -> None:
        self._alive = False


# -- the backend ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScriptedInfo(ModelInfo):
    """A scripted model, as a pool knows it."""

    backend: ClassVar[str] = "scripted"

    model: ScriptedModel = field(compare=False, repr=False)

    @property
    def location(self) -> str:
        return f"scripted:{self.name}"

    def summary(self, long: bool = False) -> str:
        return "scripted"

    def rows(self) -> list[tuple[str, str]]:
        return [("Name", self.name), ("Kind", "scripted (a test model)")]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, "origin": self.origin}


def _from_entry(name: str, entry: dict[str, Any]) -> ScriptedInfo:
    """A scripted model remembered in ``models.json`` (a test's catalog, for the command
    line and the app): its script in JSON (``replies``, ``logprobs`` as a table, ``delay``,
    ``errors`` by request number, ``crash_on``, ``n_ctx``, ``chat_template``,
    ``has_logprobs``, ``concurrency``)."""
    model = ScriptedModel(
        name,
        entry.get("replies", "A"),
        logprobs=entry.get("logprobs"),
        delay=float(entry.get("delay", 0.0)),
        errors={int(k): str(v) for k, v in (entry.get("errors") or {}).items()},
        crash_on=[int(n) for n in entry.get("crash_on") or ()],
        n_ctx=int(entry.get("n_ctx", 4096)),
        chat_template=bool(entry.get("chat_template", True)),
        has_logprobs=bool(entry.get("has_logprobs", True)),
        concurrency=int(entry.get("concurrency", 1)),
    )
    return ScriptedInfo(name=name, origin="added", model=model)


register(
    "backend",
    Backend(
        name="scripted",
        open=lambda info, load: info.model.open(),
        footprint=lambda info: info.model.size,
        capabilities=lambda model: model.capabilities,
        from_entry=_from_entry,
    ),
)


def scripted_pool(*models: ScriptedModel, **pool_options: Any) -> ModelPool:
    """A :class:`~engine.models.pool.ModelPool` that knows ``models`` by their names and no
    other model (the first is the default: a run that names no model gets it);
    ``pool_options`` are the pool's own (``max_bytes``, ``cores``…)."""
    from engine.models.pool import ModelPool

    if not models:
        models = (ScriptedModel(),)
    infos = {m.name: ScriptedInfo(name=m.name, origin="scripted", model=m) for m in models}
    default = models[0].name

    def resolve(name: str | None) -> ModelInfo:
        found = infos.get(name or default)
        if found is None:
            known = ", ".join(infos)
            raise ModelError(f"no model named {name!r} (known: {known})")
        return found

    return ModelPool(resolve=resolve, **pool_options)
