"""Local GGUF models through llama-cpp-python, each in a child process of its own.

A :class:`LocalModel` starts a worker process that loads the model and serves requests over
a pipe: chat through the GGUF's own chat template, plain completion, token streaming with
cancel, and the log-probabilities of candidate continuations. A segfault, an out-of-memory
kill or any other death of that process raises :class:`ModelCrashed` in the caller, which
stays alive and may :meth:`LocalModel.restart` the model.

>>> with LocalModel("SmolLM2-135M-Instruct.Q4_1.gguf") as model:          # doctest: +SKIP
...     print(model.chat([{"role": "user", "content": "Hi"}], max_tokens=8).text)
...     model.logprobs("The capital of France is", [" Paris", " Rome"])
"""

from __future__ import annotations

import codecs
import contextlib
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Message = dict[str, str]

_POLL_S = 0.05
BLOCK = 64  # prompt tokens decoded per batch, at positions aligned to multiples of it


class ModelError(Exception):
    """A request the model cannot serve (bad file, no chat template, prompt too long…)."""


class ModelCrashed(ModelError):
    """The model process died (segfault, killed, out of memory). ``restart()`` recovers."""


@dataclass
class Generation:
    """A finished generation and its cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str  # "stop" (end of text or a stop string), "length" or "cancelled"
    prompt_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        """Generation speed: completion tokens over the time spent producing them."""
        gen = self.seconds - self.prompt_seconds
        return self.completion_tokens / gen if gen > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"tokens_per_second": round(self.tokens_per_second, 2)}


@dataclass
class ModelSettings:
    """How a model is loaded. ``None`` means: decide from this machine."""

    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int | None = None
    n_batch: int = 512
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> ModelSettings:
        threads = self.n_threads or available_cores()
        layers = self.n_gpu_layers
        if layers is None:
            layers = -1 if gpu_offload_supported() else 0
        return ModelSettings(self.n_ctx, threads, layers, self.n_batch, self.seed, self.extra)


def available_cores() -> int:
    """Cores this process may run on (llama.cpp's own default is half of them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def gpu_offload_supported() -> bool:
    """Whether the installed llama-cpp-python was built with CUDA, Metal or another GPU."""
    try:
        import llama_cpp
    except ImportError:
        return False
    return bool(llama_cpp.llama_supports_gpu_offload())


# ---------------------------------------------------------------------------------------
# The worker: runs in the child process and owns the llama_cpp.Llama object.
# ---------------------------------------------------------------------------------------


class _Worker:
    def __init__(self, path: str, settings: ModelSettings, conn: Connection, cancel: Any) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llama_cpp = llama_cpp
        self.conn = conn
        self.cancel = cancel
        self.llm = llama_cpp.Llama(
            model_path=path,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_threads_batch=settings.n_threads,
            n_gpu_layers=settings.n_gpu_layers,
            n_batch=settings.n_batch,
            seed=settings.seed,
            logits_all=False,
            verbose=False,
            **settings.extra,
        )
        self.n_vocab = self.llm.n_vocab()
        self.aligned = 0  # how many cached tokens were decoded in aligned prompt blocks
        self.vocab = self.llm._model.vocab
        template = self.llm.metadata.get("tokenizer.chat_template")
        self.formatter = None
        if template:
            model = self.llm._model
            self.formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=model.token_get_text(model.token_eos()),
                bos_token=model.token_get_text(model.token_bos()),
            )
        self.info = {
            "n_ctx": self.llm.n_ctx(),
            "n_vocab": self.n_vocab,
            "has_chat_template": self.formatter is not None,
            "n_threads": settings.n_threads,
            "n_gpu_layers": settings.n_gpu_layers,
            "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
        }

    # -- helpers ---------------------------------------------------------------------

    def tokenize(self, text: str, add_bos: bool = True) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        if self.formatter is None:
            raise ModelError("this model has no chat template: use plain completion")
        self.formatter.add_generation_prompt = add_generation_prompt
        return self.formatter(messages=list(messages)).prompt

    def _fit(self, tokens: list[int], max_tokens: int) -> None:
        if len(tokens) >= self.llm.n_ctx():
            raise ModelError(
                f"the prompt has {len(tokens)} tokens; the context holds {self.llm.n_ctx()}"
            )

    def _logits(self) -> Any:
        import numpy as np

        ptr = self.llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def _eval_prompt(self, tokens: list[int], reuse: bool) -> None:
        """Evaluate ``tokens``, keeping the cached prefix when ``reuse`` is set.

        The prompt is decoded in blocks aligned to fixed positions (multiples of ``BLOCK``),
        and only whole blocks of an earlier prompt are kept, so every prompt token's cache
        entry is computed from the same batch whether or not a prefix was reused: results
        are bit-identical with and without reuse.
        """
        llm = self.llm
        keep = 0
        if reuse and self.aligned:
            cached = llm.input_ids[: min(llm.n_tokens, self.aligned)]
            for a, b in zip(cached, tokens, strict=False):
                if a != b:
                    break
                keep += 1
            keep = min(keep, len(tokens) - 1) // BLOCK * BLOCK
        if keep == 0:
            llm.reset()
        llm.n_tokens = keep  # eval() drops the cache past n_tokens
        for i in range(keep, len(tokens), BLOCK):
            llm.eval(tokens[i : i + BLOCK])
        self.aligned = len(tokens)

    def _logits_after(self, tokens: list[int], reuse: bool) -> Any:
        self._eval_prompt(tokens, reuse)
        return self._logits()

    # -- requests ----------------------------------------------------------------------

    def generate(
        self,
        prompt: str,
        chat: bool,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str],
        top_p: float,
        top_k: int,
        repeat_penalty: float,
    ) -> None:
        llm = self.llm
        t0 = time.perf_counter()
        tokens = self.tokenize(prompt, add_bos=not chat)
        self._fit(tokens, max_tokens)
        max_tokens = min(max_tokens, llm.n_ctx() - len(tokens))
        if seed is not None:
            llm.set_seed(seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = [s for s in stop if s]
        hold = max((len(s) for s in stops), default=1) - 1
        text, sent, n_out, finish = "", 0, 0, "length"
        t_first = None
        self._eval_prompt(tokens, reuse=True)
        for token in llm.generate(
            [],
            reset=False,
            temp=temperature,
            top_p=top_p,
            top_k=top_k,
            min_p=0.0 if temperature <= 0 else 0.05,
            repeat_penalty=repeat_penalty,
        ):
            if t_first is None:
                t_first = time.perf_counter()
            if self.llama_cpp.llama_vocab_is_eog(self.vocab, token):
                finish = "stop"
                break
            n_out += 1
            text += decoder.decode(llm.detokenize([token]))
            cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
            if cut >= 0:
                text, finish = text[:cut], "stop"
                break
            ready = len(text) - hold if stops else len(text)
            if ready > sent:
                self.conn.send(("piece", text[sent:ready]))
                sent = ready
            if self.cancel.is_set():
                finish = "cancelled"
                break
            if n_out >= max_tokens:
                break
        text += decoder.decode(b"", final=True)
        if len(text) > sent:
            self.conn.send(("piece", text[sent:]))
        t_end = time.perf_counter()
        prompt_s = (t_first or t_end) - t0
        self.conn.send(("done", Generation(text, len(tokens), n_out, t_end - t0, finish, prompt_s)))

    def logprobs(
        self, prompt: str, candidates: Sequence[str], reuse_prefix: bool, chat: bool
    ) -> None:
        """log P(candidate | prompt) for each candidate, summed over its tokens.

        A candidate's tokens are those of ``prompt + candidate`` past the prompt's own (the
        way lm-evaluation-harness splits them), so a candidate merging with the prompt's last
        token is scored correctly. Candidates sharing a context need one forward pass for
        their first token; only multi-token candidates cost one more step per extra token.
        """
        import numpy as np

        base = self.tokenize(prompt, add_bos=not chat)
        self._fit(base, 1)
        groups: dict[int, list[tuple[str, list[int]]]] = {}
        full_by_cand: dict[str, list[int]] = {}
        for cand in candidates:
            full = self.tokenize(prompt + cand, add_bos=not chat)
            n = 0
            for a, b in zip(base, full, strict=False):
                if a != b:
                    break
                n += 1
            n = min(n, len(full) - 1) if len(full) > n else n
            if n == len(full):
                raise ModelError(f"candidate {cand!r} adds no token to the prompt")
            groups.setdefault(n, []).append((cand, full[n:]))
            full_by_cand[cand] = full
        out: dict[str, float] = {}
        reuse = reuse_prefix
        for n, members in sorted(groups.items(), reverse=True):
            context = full_by_cand[members[0][0]][:n]
            logits = self._logits_after(context, reuse)
            first = logits - np.logaddexp.reduce(logits)
            for cand, cont in members:
                total = float(first[cont[0]])
                if len(cont) > 1:
                    self.llm.n_tokens = n
                    for i in range(len(cont) - 1):
                        self.llm.eval([cont[i]])
                        lg = self._logits()
                        total += float(lg[cont[i + 1]] - np.logaddexp.reduce(lg))
                    self.llm.n_tokens = n
                out[cand] = total
                if not reuse_prefix:
                    self.llm.reset()
            reuse = reuse_prefix
        self.conn.send(("done", out))

    def serve(self) -> None:
        self.conn.send(("ready", self.info))
        while True:
            try:
                op, kwargs = self.conn.recv()
            except EOFError:
                return
            if op == "close":
                return
            try:
                if op == "generate":
                    self.generate(**kwargs)
                elif op == "logprobs":
                    self.logprobs(**kwargs)
                elif op == "chat_prompt":
                    self.conn.send(("done", self.chat_prompt(**kwargs)))
                elif op == "tokenize":
                    self.conn.send(("done", self.tokenize(**kwargs)))
                elif op == "detokenize":
                    text = self.llm.detokenize(kwargs["tokens"]).decode("utf-8", "replace")
                    self.conn.send(("done", text))
                elif op == "crash":  # used by tests: die the way a native crash does
                    os.abort()
                else:
                    raise ModelError(f"unknown request {op!r}")
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                self.conn.send(("error", (type(exc).__name__, str(exc))))


def _serve(path: str, settings: ModelSettings, conn: Connection, cancel: Any) -> None:
    try:
        worker = _Worker(path, settings, conn, cancel)
    except Exception as exc:  # noqa: BLE001
        conn.send(("error", (type(exc).__name__, str(exc))))
        return
    worker.serve()


# ---------------------------------------------------------------------------------------
# The caller's side.
# ---------------------------------------------------------------------------------------


class Stream:
    """Iterate for text pieces as they are generated; :attr:`result` once finished."""

    def __init__(self, model: LocalModel, pieces: Iterator[Any]) -> None:
        self._model = model
        self._pieces = pieces
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        for kind, value in self._pieces:
            if kind == "piece":
                yield value
            else:
                self.result = value

    def cancel(self) -> None:
        """Stop generating; the text so far becomes the result (finish_reason "cancelled")."""
        self._model.cancel()

    def text(self) -> Generation:
        """Consume the stream and return the finished generation."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class LocalModel:
    """A GGUF model served by a child process.

    ``n_threads`` defaults to every available core, ``n_gpu_layers`` to all layers when this
    llama-cpp-python build can offload to a GPU (CUDA, Metal…), else 0. Requests are
    serialised: one runs at a time; :meth:`cancel` may be called from any thread.
    """

    def __init__(
        self,
        path: str | Path,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int | None = None,
        seed: int = 0,
        **extra: Any,
    ) -> None:
        self.path = str(path)
        if not Path(self.path).is_file():
            raise ModelError(f"model file not found: {self.path}")
        self.settings = ModelSettings(
            n_ctx, n_threads, n_gpu_layers, seed=seed, extra=extra
        ).resolved()
        self._ctx = mp.get_context("spawn")
        self._lock = threading.RLock()
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self.info: dict[str, Any] = {}
        self.start()

    # -- process life ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the model process and wait until the model is loaded."""
        with self._lock:
            parent, child = self._ctx.Pipe()
            self._cancel = self._ctx.Event()
            self._proc = self._ctx.Process(
                target=_serve,
                args=(self.path, self.settings, child, self._cancel),
                daemon=True,
                name=f"medexam-model-{Path(self.path).stem}",
            )
            self._proc.start()
            child.close()
            self._conn = parent
            kind, value = self._receive()
            if kind == "error":
                self._reap()
                raise ModelError(f"could not load {Path(self.path).name}: {value[1]}")
            self.info = value

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
        """Stop the model process and free its memory."""
        with self._lock:
            if self._conn is not None and self.alive:
                with contextlib.suppress(BrokenPipeError, OSError):
                    self._conn.send(("close", {}))
            self._reap()

    def _reap(self) -> None:
        if self._proc is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None

    def __enter__(self) -> LocalModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown anything may be gone
            self.close()

    # -- transport ---------------------------------------------------------------------

    def _crashed(self) -> ModelCrashed:
        if self._proc is not None:
            self._proc.join(timeout=5)  # a closed pipe may be seen before the process is reaped
        code = self._proc.exitcode if self._proc is not None else None
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self._reap()
        return ModelCrashed(f"the model process stopped ({how}); restart the model to go on")

    def _receive(self) -> tuple[str, Any]:
        conn, proc = self._conn, self._proc
        if conn is None or proc is None:
            raise ModelCrashed("the model is not running; restart it")
        while True:
            try:
                if conn.poll(_POLL_S):
                    return conn.recv()
            except (EOFError, OSError):
                raise self._crashed() from None
            if not proc.is_alive():
                # The process may have sent its last words just before dying.
                try:
                    if conn.poll(0):
                        return conn.recv()
                except (EOFError, OSError):
                    pass
                raise self._crashed()

    def _request(self, op: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        with self._lock:
            if self._conn is None or not self.alive:
                raise ModelCrashed("the model is not running; restart it")
            self._cancel.clear()
            try:
                self._conn.send((op, kwargs))
            except (BrokenPipeError, OSError):
                raise self._crashed() from None
            settled = False
            try:
                while True:
                    kind, value = self._receive()
                    if kind in ("error", "done"):
                        settled = True
                    if kind == "error":
                        raise ModelError(value[1])
                    yield kind, value
                    if kind == "done":
                        return
            finally:
                if not settled and self.alive:
                    # The caller stopped reading early: stop the worker and drain its reply
                    # so the next request starts clean.
                    self._cancel.set()
                    while self._receive()[0] not in ("done", "error"):
                        pass

    def _call(self, op: str, **kwargs: Any) -> Any:
        for kind, value in self._request(op, **kwargs):
            if kind == "done":
                return value
        raise ModelCrashed("no answer from the model process")

    def cancel(self) -> None:
        """Ask the running generation to stop after its current token."""
        self._cancel.set()

    # -- the API -------------------------------------------------------------------------

    @property
    def has_chat_template(self) -> bool:
        return bool(self.info.get("has_chat_template"))

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the GGUF's chat template makes of ``messages``."""
        return self._call(
            "chat_prompt", messages=list(messages), add_generation_prompt=add_generation_prompt
        )

    def tokenize(self, text: str, add_bos: bool = False) -> list[int]:
        return self._call("tokenize", text=text, add_bos=add_bos)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def stream_complete(
        self,
        prompt: str,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        stop: Sequence[str] = (),
        top_p: float = 0.95,
        top_k: int = 40,
        repeat_penalty: float = 1.0,
        _chat: bool = False,
    ) -> Stream:
        """Generate a continuation of ``prompt``, streamed piece by piece.

        ``temperature`` 0 is greedy (deterministic); otherwise ``seed`` fixes the sampling.
        """
        seed = self.settings.seed if seed is None else seed
        pieces = self._request(
            "generate",
            prompt=prompt,
            chat=_chat,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            stop=list(stop),
            top_p=top_p,
            top_k=top_k,
            repeat_penalty=repeat_penalty,
        )
        return Stream(self, pieces)

    def complete(self, prompt: str, **kwargs: Any) -> Generation:
        """Plain completion (for base models); the same options as :meth:`stream_complete`."""
        return self.stream_complete(prompt, **kwargs).text()

    def stream_chat(self, messages: Sequence[Message], **kwargs: Any) -> Stream:
        """Chat through the model's own chat template, streamed piece by piece."""
        return self.stream_complete(self.chat_prompt(messages), _chat=True, **kwargs)

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> Generation:
        """Chat through the model's own chat template; the same options as :meth:`complete`."""
        return self.stream_chat(messages, **kwargs).text()

    def logprobs(
        self,
        prompt: str,
        candidates: Sequence[str],
        reuse_prefix: bool = True,
        chat_formatted: bool = False,
    ) -> dict[str, float]:
        """``log P(candidate | prompt)`` for each candidate.

        Single-token candidates (the letters A–E, say) cost one forward pass together. With
        ``reuse_prefix`` the KV cache of the part of ``prompt`` shared with the previous
        request is kept, so a fixed few-shot prefix is evaluated once for a whole exam.
        Pass ``chat_formatted=True`` when ``prompt`` came from :meth:`chat_prompt` (no BOS
        is added: the template wrote its own).
        """
        if not candidates:
            return {}
        return self._call(
            "logprobs",
            prompt=prompt,
            candidates=list(candidates),
            reuse_prefix=reuse_prefix,
            chat=chat_formatted,
        )

    def _crash_for_test(self) -> None:
        """Make the model process abort, as a native crash would (tests use it)."""
        for _ in self._request("crash"):
            pass
