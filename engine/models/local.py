"""Local GGUF models through llama-cpp-python, each in a child process of its own.

A :class:`LocalModel` starts a worker process that loads the model and serves requests over
a pipe: chat through the GGUF's own chat template, plain completion, token streaming with
cancel, and the log-probabilities of candidate continuations. A segfault, an out-of-memory
kill or any other death of that process raises :class:`ModelCrashed` in the caller, which
stays alive and may :meth:`LocalModel.restart` the model.

This is the ``gguf`` backend (:mod:`engine.models.backend`): the catalog describes a GGUF
file by its header (:class:`GGUFInfo`); the pool opens it as a :class:`LocalModel`, counts a
quarter more than the file for its memory, and shares the cores among such models at work.

A model uses :func:`physical_cores` threads unless told otherwise; :meth:`LocalModel.set_threads`
changes that on the fly (several busy models share the cores). The model process ignores
Ctrl-C, which is the caller's to handle; scripts need no ``if __name__ == "__main__"`` guard.

Stop means stopped: a request interrupted (Ctrl-C, SIGTERM, an abandoned stream) is
cancelled, and a process that does not answer within :data:`SETTLE_S` is killed (the next
lease restarts it); the process ends by itself as soon as its parent is gone, however the
parent died. A chat template that takes more than :data:`TEMPLATE_S` to render a
conversation is refused.

>>> with LocalModel("SmolLM2-135M-Instruct.Q4_1.gguf") as model:          # doctest: +SKIP
...     print(model.chat([{"role": "user", "content": "Hi"}], max_tokens=8).text)
...     model.logprobs("The capital of France is", [" Paris", " Rome"])
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.progress import Cancelled
from engine.errors import MedexamError
from engine.models.backend import Backend, Capabilities
from engine.models.cores_load import model_started
from engine.models.gguf_info import GGUFInfo
from engine.models.hardware import ModelSettings
from engine.models.link import Link, Request, first_message
from engine.models.protocol import ChatModel, ModelCrashed, ModelError, TextStream, chat_as_prompt
from engine.models.worker import _serve
from engine.registry import register
from engine.types import JSONDict

if TYPE_CHECKING:
    from engine.models.protocol import Generation, Message

SETTLE_S = 2.0  # how long an interrupted request may take to stop before its process is killed
STEP_S = 300.0  # how long a decode step under way is waited for (a big model's prompt on a CPU)
TEMPLATE_S = 10.0  # how long the chat template may take to render one conversation

_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start processes without the main script: hide ``__main__``'s file and spec.

    The spawn start method runs the parent's main script (or ``-m`` module) again in the
    child, as ``__mp_main__``, so that objects defined there can be unpickled. The model
    process needs nothing from it (its target and arguments live in this module), and a
    script without an ``if __name__ == "__main__":`` guard would load a model again in the
    child, which multiprocessing refuses. Hidden, the child imports no main script at all,
    and starts faster. Frozen apps (PyInstaller) keep spawn's own handling.
    """
    main = sys.modules.get("__main__")
    if main is None or getattr(sys, "frozen", False):
        yield
        return
    with _MAIN_LOCK:  # two models starting at once must not save each other's None
        saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
        for key in saved:
            setattr(main, key, None)
        try:
            yield
        finally:
            for key, value in saved.items():
                setattr(main, key, value)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread while a child starts: the child inherits the mask and
    ignores SIGINT before unblocking it; a Ctrl-C meanwhile stays pending for this process.
    """
    if not hasattr(signal, "pthread_sigmask"):  # Windows: the child ignores it once running
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Unanswered(MedexamError):
    """The model process did not reply in time (and was killed)."""


class Stream(TextStream):
    """Iterate for text pieces as they are generated; :attr:`result` once finished."""

    def __init__(self, model: LocalModel, pieces: Iterator[Any]) -> None:
        self._model = model
        self._pieces = pieces
        self._request: Request | None = None  # once sent (at the first piece asked for)
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        for kind, value in self._pieces:
            if kind == "sent":
                self._request = value
            elif kind == "piece":
                yield value
            else:
                self.result = value

    def cancel(self) -> None:
        """Stop generating; the text so far becomes the result (finish_reason "cancelled").
        Other requests to the model go on; a stream that has ended cancels nothing."""
        if self.result is None and self._request is not None:
            self._model._cancel(self._request.rid)


class LocalModel(ChatModel):
    """A GGUF model served by a child process.

    ``n_threads`` defaults to :func:`physical_cores`, ``n_gpu_layers`` to the layers that fit
    the GPU's free memory when there is one (:mod:`engine.models.gpu`; ``info`` says where
    they went: ``device``, ``gpu_layers`` of ``layers``, ``gpu_memory``, ``gpu_note``), else 0
    (:meth:`ModelSettings.resolved`). Any thread may send requests: as many generations
    and log-probability requests as the model has slots (``info["slots"]``,
    ``capabilities.concurrency``) are decoded together (:mod:`engine.models.batch`), the
    others wait for a slot; :meth:`cancel` and :meth:`set_threads` may be called from any
    thread.

    The model process ignores SIGINT: a Ctrl-C (KeyboardInterrupt) in the caller while it
    waits for a reply cancels the request and leaves the model usable.
    """

    def __init__(
        self,
        path: str | Path,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int | None = None,
        seed: int = 0,
        slots: int | None = None,
        flash_attn: bool | None = None,
        **extra: Any,
    ) -> None:
        self.path = str(path)
        self.name = Path(self.path).stem
        if not Path(self.path).is_file():
            raise ModelError(f"model file not found: {self.path}")
        self.settings = ModelSettings(  # slots decided here (engine.models.slots)
            n_ctx, n_threads, n_gpu_layers, seed=seed, extra=extra, slots=slots,
            flash_attn=flash_attn,
        ).for_model(self.path)  # fmt: skip
        self._ctx = mp.get_context("spawn")
        self._lock = threading.RLock()
        self._proc: mp.process.BaseProcess | None = None
        self._link: Link | None = None  # the pipe to the process, read by a thread
        self._last: dict[int, Request] = {}  # each thread's latest request
        self._threads = int(self.settings.n_threads or 1)  # asked for by set_threads
        self._threads_lock = threading.Lock()  # set_threads against a (re)start
        self.info: dict[str, Any] = {}
        self._refused = ""  # why the chat template is refused, once it is
        self.start()

    # -- process life ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the model process and wait until the model is loaded.

        Interrupted (Ctrl-C while the model loads, say), the half-started process is killed.
        """
        with self._lock:
            parent, child = self._ctx.Pipe()
            with self._threads_lock:
                self._threads_wanted = self._ctx.Value("i", self._threads, lock=False)
            self._threads_applied = self._ctx.Value("i", self.settings.n_threads, lock=False)
            self._decoding = self._ctx.Value("i", 0, lock=False)
            proc = self._ctx.Process(
                target=_serve,
                args=(
                    self.path,
                    self.settings,
                    child,
                    (self._threads_wanted, self._threads_applied, self._decoding),
                ),
                daemon=True,
                name=f"medexam-model-{Path(self.path).stem}",
            )
            self._proc, self._link = None, None
            try:
                with _sigint_blocked():  # the child starts with SIGINT blocked, then ignores it
                    with _main_hidden():
                        proc.start()
                    self._proc = proc
                    # the pid is set once started; its busy time is medexam's, not another
                    # program's
                    model_started(proc.pid)  # type: ignore[arg-type]
                _, kind, value = first_message(parent, proc)
            except BaseException:
                if proc.is_alive():
                    proc.kill()
                    proc.join()
                parent.close()
                self._proc = None
                raise
            finally:
                child.close()
            if kind == "error":
                parent.close()
                self._reap()
                raise ModelError(f"could not load {Path(self.path).name}: {value[1]}")
            self.info = value
            self._link = Link(parent, proc)
            self._link.start()

    def restart(self) -> None:
        """Start a fresh model process (after a crash, say)."""
        self.close()
        self.start()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        """Stop the model process and free its memory (requests in flight are cancelled;
        their callers get :class:`ModelCrashed`)."""
        with self._lock:
            if self._link is not None and self.alive:
                self._link.cancel(None)
                with contextlib.suppress(OSError, ValueError):
                    self._link.send((0, "close", {}))
            self._reap(SETTLE_S)

    def _kill(self) -> None:
        """Stop the model process at once (it may be busy loading or generating)."""
        with self._lock:
            if self._proc is not None and self._proc.is_alive():
                self._proc.kill()
            self._reap()

    def _reap(self, wait: float = 5.0) -> None:
        if self._proc is not None:
            self._proc.join(timeout=wait)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        if self._link is not None:
            self._link.close()
        self._proc, self._link = None, None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown anything may be gone
            self.close()

    # -- transport ---------------------------------------------------------------------

    def _submit(self, op: str, kwargs: dict[str, Any]) -> Request:
        """Send a request. This thread's previous one, if its reader left it half read
        (an abandoned stream, a KeyboardInterrupt), is cancelled and drained first."""
        me = threading.get_ident()
        earlier = self._last.get(me)
        if earlier is not None and earlier.open:
            self._settle(earlier)
        link = self._link
        if link is None:
            raise ModelCrashed("the model is not running; restart it")
        try:
            req = link.submit(op, kwargs)
        except (OSError, ValueError):
            raise ModelCrashed(link.gone or "the model is not running; restart it") from None
        self._last[me] = req
        return req

    def _settle(self, req: Request) -> None:
        """Cancel ``req`` and read its replies to the end; a process that does not answer
        within :data:`SETTLE_S` (busy in native code, or in a chat template that never
        ends) is killed."""
        req.settled = True
        link = self._link
        if link is not None and req.open and self.alive:
            link.cancel(req.rid)
            since = time.monotonic()
            until = since + SETTLE_S
            while True:
                got = req.next()
                if got is not None and got[0] in ("done", "error", "crashed"):
                    break
                if got is None and time.monotonic() >= until:
                    later = self._stop_by(since)
                    if later is None:
                        self._kill()
                        break
                    until = later
        req.open = False
        if link is not None:
            link.forget(req)

    def _request(
        self, op: str, kwargs: dict[str, Any], within: float | None = None
    ) -> Iterator[tuple[str, Any]]:
        """``("sent", request)``, then the worker's replies to it, to its ``done``; the
        process is killed and :class:`_Unanswered` raised when the reply takes more than
        ``within`` seconds from the worker's ``started`` (time waiting behind other
        requests' decode steps, long on a big model or a busy machine, does not count).
        A request left half read is settled (:meth:`_settle`)."""
        req = self._submit(op, kwargs)
        link = self._link
        until: float | None = None
        try:
            yield "sent", req
            while not req.settled:
                got = req.next()
                if got is None:
                    if until is not None and time.monotonic() >= until:
                        self._kill()
                        raise _Unanswered(within)
                    continue
                kind, value = got
                if kind == "started":
                    if within is not None:
                        until = time.monotonic() + within
                    continue
                if kind in ("error", "done", "crashed"):
                    req.open = False
                if kind == "crashed":
                    raise ModelCrashed(value)
                if kind == "error" and value[0] == "Cancelled":
                    raise Cancelled()
                if kind == "error":
                    raise ModelError(value[1])
                yield kind, value
                if kind == "done":
                    return
        finally:
            if req.open and not req.settled:
                self._settle(req)  # the caller stopped reading early
            elif link is not None:
                link.forget(req)
            if not req.open and self._last.get(threading.get_ident()) is req:
                del self._last[threading.get_ident()]

    def _call(self, op: str, within: float | None = None, **kwargs: Any) -> Any:
        for kind, value in self._request(op, kwargs, within):
            if kind == "done":
                return value
        raise ModelCrashed("no answer from the model process")

    def _cancel(self, rid: int | None) -> None:
        if self._link is not None:
            self._link.cancel(rid)

    def cancel(self) -> None:
        """Ask every request in flight to stop: a generation after its current token (its
        text so far is its result), a long prompt between two of its blocks. A process that
        has not answered them all within :data:`SETTLE_S` (busy in native code, or in a chat
        template that never ends) is killed: their callers get :class:`ModelCrashed`; a
        decode step under way there is waited for (:meth:`_stop_by`)."""
        link = self._link
        if link is None:
            return
        link.cancel(None)
        waiting = link.unanswered()
        if waiting:
            self._watch(link, waiting, time.monotonic())

    def _stop_by(self, since: float) -> float | None:
        """When a process that has not answered a cancel sent at ``since`` (and waited for
        :data:`SETTLE_S`) is to be killed: None, now; or, while a decode step is under way
        there (a step always ends, but a big model's prompt takes long on a CPU, and the
        process's other sequences live on), :data:`SETTLE_S` later, to be asked again, at
        most :data:`STEP_S` after ``since``."""
        if self._decoding.value and time.monotonic() < since + STEP_S:
            return time.monotonic() + SETTLE_S
        return None

    def _watch(self, link: Link, waiting: list[Request], since: float) -> None:
        """In :data:`SETTLE_S`, kill the process unless ``waiting`` (cancelled at ``since``)
        have all been answered or a decode step is under way there (then watch again)."""
        timer = threading.Timer(SETTLE_S, self._unless_answered, (link, waiting, since))
        timer.daemon = True
        timer.start()

    def _unless_answered(self, link: Link, waiting: list[Request], since: float) -> None:
        with self._lock:
            if link is not self._link or all(r.answered for r in waiting):
                return
            if self._stop_by(since) is None:
                self._kill()
                return
        self._watch(link, waiting, since)

    def set_threads(self, n: int) -> None:
        """Use ``n`` CPU threads from the next decode step on (a pool sharing the cores
        among busy models calls it). Any thread may call it, also while a request runs;
        the count holds until changed again, across :meth:`restart` too.
        ``info["n_threads"]`` keeps the count the model was loaded with.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"the thread count must be a positive integer, not {n!r}")
        with self._threads_lock:
            self._threads = n
            self._threads_wanted.value = n

    @property
    def threads(self) -> int:
        """The thread count in force in the model process (a change made by
        :meth:`set_threads` shows once the process applied it: at its next decode step,
        within 0.1 s when idle)."""
        return int(self._threads_applied.value)

    # -- the API -------------------------------------------------------------------------

    @property
    def has_chat_template(self) -> bool:
        return bool(self.info.get("has_chat_template"))

    @property
    def capabilities(self) -> Capabilities:
        return _capabilities(self)

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the GGUF's chat template makes of ``messages``. A template that
        takes more than :data:`TEMPLATE_S` is refused: its process is stopped
        (:class:`ModelCrashed`), and every later conversation is refused at once
        (:class:`ModelError`)."""
        if self._refused:
            raise ModelError(self._refused)
        try:
            return self._call(
                "chat_prompt",
                within=TEMPLATE_S,
                messages=list(messages),
                add_generation_prompt=add_generation_prompt,
            )
        except _Unanswered:
            self._refused = (
                f"the chat template of {Path(self.path).name} takes more than {TEMPLATE_S:g} s "
                "to render a conversation: medexam refuses it"
            )
            raise ModelCrashed(f"{self._refused} (its process was stopped)") from None

    def tokenize(self, text: str, add_bos: bool = False) -> list[int]:
        return self._call("tokenize", text=text, add_bos=add_bos)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def stream_complete(  # type: ignore[override]  # the options it takes, by name
        self,
        prompt: str,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        stop: Sequence[str] = (),
        top_p: float = 0.95,
        top_k: int = 40,
        repeat_penalty: float = 1.0,
        json_schema: JSONDict | None = None,
        _chat: bool = False,
        _stream: bool = True,
    ) -> Stream:
        """Generate a continuation of ``prompt``, streamed piece by piece.

        ``temperature`` 0 is greedy (deterministic); otherwise ``seed`` fixes the sampling.
        ``json_schema`` holds the text to JSON of that schema (a llama.cpp grammar).
        ``_stream`` False: the text comes whole with the result, no piece before it.
        """
        seed = self.settings.seed if seed is None else seed
        options: JSONDict = {"max_tokens": max_tokens, "temperature": temperature, "seed": seed}
        options |= {"stop": list(stop), "top_p": top_p, "top_k": top_k}
        if json_schema:
            options["json_schema"] = json.dumps(json_schema)
        pieces = self._request(
            "generate",
            {"prompt": prompt, "chat": _chat, "repeat_penalty": repeat_penalty, **options}
            | {"stream": _stream},
        )
        return Stream(self, pieces)

    def stream_chat(self, messages: Sequence[Message], **kwargs: Any) -> Stream:
        """Chat through the model's own chat template, streamed piece by piece. A base model
        (no template) continues the conversation written out as a plain transcript
        (:func:`~engine.models.protocol.plain_transcript`), stopping at the next turn."""
        prompt, options = chat_as_prompt(self, messages, kwargs)
        return self.stream_complete(prompt, _chat=self.has_chat_template, **options)

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation:
        """Chat (see :meth:`stream_chat`), its text whole: the model process sends no piece
        of it before its end (a run's many generations at once cost no message per token)."""
        prompt, options = chat_as_prompt(self, messages, options)
        return self.complete(prompt, _chat=self.has_chat_template, **options)

    def complete(self, prompt: str, **options: Any) -> Generation:
        """Plain completion (see :meth:`stream_complete`), its text whole, as :meth:`chat`."""
        return self.stream_complete(prompt, _stream=False, **options).text()

    def _logprobs(
        self, prompt: str, candidates: list[str], reuse_prefix: bool, chat_formatted: bool
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` for each candidate.

        Single-token candidates (the letters A–E, say) cost one forward pass together. With
        ``reuse_prefix`` the KV cache of the part of ``prompt`` shared with the previous
        request is kept, so a fixed few-shot prefix is evaluated once for a whole exam.
        Pass ``chat_formatted=True`` when ``prompt`` came from :meth:`chat_prompt` (no BOS
        is added: the template wrote its own).
        """
        return self._call(
            "logprobs",
            prompt=prompt,
            candidates=candidates,
            reuse_prefix=reuse_prefix,
            chat=chat_formatted,
        )

    def _crash_for_test(self) -> None:
        """Make the model process abort, as a native crash would (tests use it)."""
        for _ in self._request("crash", {}):
            pass


# -- the backend ---------------------------------------------------------------------------


def _capabilities(model: LocalModel) -> Capabilities:
    """Everything, as many requests at once as the model has slots, on this machine's
    cores; chat where the file has a chat template."""
    template = model.has_chat_template
    slots = int(model.info.get("slots", 1))
    return Capabilities(
        chat_template=template, chats=template, concurrency=slots, shares_cores=True
    )


def _open(info: GGUFInfo, load: dict[str, Any]) -> LocalModel:
    if info.lora:  # checked before it can end the model process (engine.models.adapters)
        from engine.models.adapters import check_adapter

        check_adapter(info.name, info.lora, info.path)
        load = {**load, "lora_path": info.lora}
    return LocalModel(info.path, **load)


def _footprint(info: GGUFInfo) -> int:
    """The weights and a quarter more for the context and buffers, roughly."""
    return int(info.file_size * 1.25)


def _from_entry(name: str, entry: dict[str, Any]) -> GGUFInfo:
    source = entry.get("quantized_from")
    said = f"{source} quantized to {entry.get('type')} by llama.cpp" if source else ""
    return GGUFInfo.read(name, Path(entry["path"]), "added", said)


GGUF = register(
    "backend",
    Backend(
        name="gguf",
        open=_open,
        footprint=_footprint,
        capabilities=_capabilities,
        from_entry=_from_entry,
    ),
)
