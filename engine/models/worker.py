"""The model process: loads a GGUF model with llama-cpp-python and serves the requests of a
:class:`~engine.models.local.LocalModel` over a pipe (generation with streaming and cancel,
log-probabilities of candidates, tokenizing, the chat template).

Messages are ``(request id, kind, value)`` both ways, so that several callers' requests are
in flight at once: the generations and log-probability requests join the batch that
:class:`~engine.models.batch.Scheduler` decodes (as many sequences at once as the model has
slots), and a ``cancel`` of one request (or of all) is read between two decode steps. What
one decode step has to say (the pieces of the generations that stream, the answers of those
that ended) goes to the parent as one list of such messages: one message per step, not one
per sequence and token.

It ends as soon as its parent is gone, however the parent died (a thread waits on the
parent's sentinel, which multiprocessing gives every process it spawns)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any

from engine.models.batch import Generate, Scheduler, Score
from engine.models.hardware import ModelSettings
from engine.models.protocol import Message, ModelError

_IDLE_POLL_S = 0.1  # how often an idle worker looks for a new thread count


class _Worker:
    def __init__(
        self, path: str, settings: ModelSettings, conn: Connection, shared: tuple[Any, Any, Any]
    ) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llama_cpp = llama_cpp
        self._grammars: dict[str, Any] = {}
        self.conn = conn
        self._held: list[tuple[int, str, Any]] | None = None  # a step's messages, sent at its end
        # Shared with the caller: the thread count it asks for, the one in force here, and
        # whether a decode step is under way (1: the caller waits for it to end before it
        # takes a process that does not answer for a hung one).
        self.threads_wanted, self.threads_applied, self.decoding = shared
        self.n_threads = settings.n_threads
        self.seed = settings.seed
        slots = settings.slots or 1
        self.llm, offload = _load(llama_cpp, path, settings, slots)
        self.n_ctx = int(llama_cpp.llama_n_ctx_seq(self.llm.ctx))  # each sequence's context
        self.vocab = self.llm._model.vocab
        self.batch = Scheduler(self.llm, llama_cpp, slots, self.send, self.apply_threads)
        self.batch.warm_up()
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
            "n_ctx": self.n_ctx,
            "n_vocab": self.llm.n_vocab(),
            "has_chat_template": self.formatter is not None,
            "n_threads": settings.n_threads,
            "slots": slots,
            "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
            **offload,
        }

    # -- helpers ---------------------------------------------------------------------

    def apply_threads(self) -> None:
        """Switch to the thread count the caller last asked for, if it changed.

        Called before every decode step; cheap when nothing changed (one shared int read).
        """
        n = self.threads_wanted.value
        if n == self.n_threads or n < 1:
            return
        llm = self.llm
        self.llama_cpp.llama_set_n_threads(llm.ctx, n, n)
        llm.n_threads = llm.n_threads_batch = n  # what Llama reports and pickles
        llm.context_params.n_threads = llm.context_params.n_threads_batch = n
        self.n_threads = n
        self.threads_applied.value = self.llama_cpp.llama_n_threads(llm.ctx)

    def tokenize(self, text: str, add_bos: bool = True) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        if self.formatter is None:
            raise ModelError("this model has no chat template: use plain completion")
        self.formatter.add_generation_prompt = add_generation_prompt
        # llama-cpp-python types each message by its role; a message is a plain dict here
        return self.formatter(messages=list(messages)).prompt  # type: ignore[arg-type]

    def _fit(self, tokens: list[int]) -> None:
        if len(tokens) >= self.n_ctx:
            raise ModelError(f"the prompt has {len(tokens)} tokens; the context holds {self.n_ctx}")

    def _grammar(self, json_schema: str | None) -> Any:
        """The llama.cpp grammar that holds a generation to ``json_schema`` (a JSON text),
        made once per schema."""
        if not json_schema:
            return None
        made = self._grammars.get(json_schema)
        if made is None:
            made = self.llama_cpp.LlamaGrammar.from_json_schema(json_schema, verbose=False)
            self._grammars[json_schema] = made
        return made

    # -- requests ----------------------------------------------------------------------

    def generate(
        self,
        rid: int,
        prompt: str,
        chat: bool,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str],
        top_p: float,
        top_k: int,
        repeat_penalty: float,
        json_schema: str | None = None,
        stream: bool = True,
    ) -> Generate:
        """A generation: the prompt's tokens and a sampler chain of its own (llama-cpp-python's
        own chain for these settings, seeded with ``seed``); its text comes in pieces as it
        is made when ``stream``, else whole with its answer."""
        llm = self.llm
        grammar = self._grammar(json_schema)
        tokens = self.tokenize(prompt, add_bos=not chat)
        self._fit(tokens)
        llm.set_seed(self.seed if seed is None else seed)
        sampler = llm._init_sampler(
            temp=temperature,
            top_p=top_p,
            top_k=top_k,
            min_p=0.0 if temperature <= 0 else 0.05,
            repeat_penalty=repeat_penalty,
            grammar=grammar,
        )
        max_tokens = min(max_tokens, self.n_ctx - len(tokens))
        return Generate(rid, tokens, self.vocab, max_tokens, stop, sampler, stream)

    def logprobs(
        self, rid: int, prompt: str, candidates: Sequence[str], reuse_prefix: bool, chat: bool
    ) -> Score:
        """log P(candidate | prompt) for each candidate, summed over its tokens.

        A candidate's tokens are those of ``prompt + candidate`` past the prompt's own (the
        way lm-evaluation-harness splits them), so a candidate merging with the prompt's last
        token is scored correctly. Candidates sharing a context need one forward pass for
        their first token; only multi-token candidates cost one more step per extra token.
        """
        base = self.tokenize(prompt, add_bos=not chat)
        self._fit(base)
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
        ordered = [
            (full_by_cand[members[0][0]][:n], members)
            for n, members in sorted(groups.items(), reverse=True)
        ]
        return Score(rid, ordered, reuse_prefix)

    def send(self, rid: int, kind: str, value: Any) -> None:
        """Send a message now, or with the others of the decode step under way."""
        if self._held is not None:
            self._held.append((rid, kind, value))
        else:
            self.conn.send((rid, kind, value))

    def handle(self, rid: int, op: str, kwargs: Any) -> None:
        """Serve one request: a decoding one joins the batch; the others answer at once."""
        if op == "cancel":
            self.batch.cancel(kwargs)
        elif op == "generate":
            self.batch.submit(self.generate(rid, **kwargs))
        elif op == "logprobs":
            self.batch.submit(self.logprobs(rid, **kwargs))
        elif op == "chat_prompt":  # the parent bounds the rendering from "started" on
            self.send(rid, "started", None)
            self.send(rid, "done", self.chat_prompt(**kwargs))
        elif op == "tokenize":
            self.send(rid, "done", self.tokenize(**kwargs))
        elif op == "detokenize":
            text = self.llm.detokenize(kwargs["tokens"]).decode("utf-8", "replace")
            self.send(rid, "done", text)
        elif op == "counts":  # used by tests: what the batches decoded and copied
            self.send(rid, "done", dict(self.batch.counts))
        elif op == "crash":  # used by tests: die the way a native crash does
            os.abort()
        elif op == "hold":  # used by tests: busy for a while, as in a long decode step
            self.decoding.value = 1
            try:
                time.sleep(float(kwargs["seconds"]))
            finally:
                self.decoding.value = 0
            self.send(rid, "done", None)
        else:
            raise ModelError(f"unknown request {op!r}")

    def serve(self) -> None:
        """Read every request waiting on the pipe, then decode one batch; idle, wait."""
        self.apply_threads()
        self.send(0, "ready", self.info)
        while True:
            try:
                if not self.conn.poll(0 if self.batch.busy else _IDLE_POLL_S):
                    if self.batch.busy:
                        self._step()
                    else:
                        self.apply_threads()  # so that ``threads`` is right while idle too
                    continue
                rid, op, kwargs = self.conn.recv()
            except (EOFError, OSError):
                return
            if op == "close":
                return
            try:
                self.handle(rid, op, kwargs)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                self.send(rid, "error", (type(exc).__name__, str(exc)))

    def _step(self) -> None:
        """Decode one batch; its messages go to the parent together, as one list."""
        self._held = []
        self.decoding.value = 1
        try:
            self.batch.step()
        except Exception as exc:  # noqa: BLE001 - a failed decode fails the jobs in it
            self.batch.fail_all(exc)
        finally:
            self.decoding.value = 0
            held, self._held = self._held, None
        if held:
            self.conn.send(held if len(held) > 1 else held[0])


def _load(
    llama_cpp: Any, path: str, settings: ModelSettings, slots: int
) -> tuple[Any, dict[str, Any]]:
    """The model loaded with a context of ``slots`` sequences of ``n_ctx`` tokens each, and
    where its layers went (:func:`engine.models.gpu.outcome`).

    Automatic GPU layers (``None``) are those that fit the GPU's free memory with every
    slot's KV cache (:func:`engine.models.gpu.plan`); a model that then fails to load on the
    GPU loads on the CPU."""
    from engine.models import gpu

    layers, plan, note = settings.n_gpu_layers, None, ""
    flash_attn = bool(settings.extra.get("flash_attn", settings.flash_attn))
    if layers is None:
        plan = gpu.plan(path, settings.n_ctx * slots)
        layers, note = plan.layers, plan.note

    def load(n_gpu_layers: int) -> Any:
        with _sequences(slots):
            return llama_cpp.Llama(
                model_path=path,
                n_ctx=settings.n_ctx * slots,
                n_threads=settings.n_threads,
                n_threads_batch=settings.n_threads,
                n_gpu_layers=n_gpu_layers,
                n_batch=settings.n_batch,
                seed=settings.seed,
                logits_all=False,
                verbose=False,
                **{**settings.extra, "flash_attn": flash_attn},
            )

    log = gpu.LoadLog()
    with log.capture():
        try:
            llm = load(layers)
        except ValueError:
            if plan is None or layers == 0:
                raise
            note = f"{plan.where} could not hold the model: it runs on the CPU"
            layers = 0
            log.lines.clear()
            llm = load(0)
    total = int(llama_cpp.llama_model_n_layer(llm.model)) + 1
    return llm, {"n_gpu_layers": layers, "flash_attn": flash_attn, **gpu.outcome(log, total, note)}


@contextlib.contextmanager
def _sequences(n: int) -> Iterator[None]:
    """Contexts made meanwhile hold ``n`` sequences, each with a KV cache of its own (a
    ``1/n`` share of the context): llama-cpp-python's ``Llama`` takes no such setting, and
    reads its context parameters from ``llama_context_default_params``."""
    from llama_cpp import llama_cpp as bindings

    default = bindings.llama_context_default_params

    def params() -> Any:
        made = default()
        made.n_seq_max = n
        made.kv_unified = False
        return made

    bindings.llama_context_default_params = params
    try:
        yield
    finally:
        bindings.llama_context_default_params = default


def _serve(
    path: str, settings: ModelSettings, conn: Connection, shared: tuple[Any, Any, Any]
) -> None:
    # Ctrl-C in a terminal reaches the whole process group: the caller handles it (cancels
    # the request or closes the model); this process must not die of it mid-request.
    # SIGINT was blocked while this process started (see LocalModel.start): ignore it first,
    # then unblock, so that no Ctrl-C slips in between.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _end_with_parent()
    try:
        worker = _Worker(path, settings, conn, shared)
    except Exception as exc:  # noqa: BLE001
        conn.send((0, "error", (type(exc).__name__, str(exc))))
        return
    worker.serve()


def _end_with_parent() -> None:
    """End this process as soon as its parent is gone (killed, crashed, or exited without
    closing the model), whatever this process is busy with."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def wait() -> None:
        parent.join()  # returns once the parent's end of the sentinel pipe closes
        os._exit(0)

    threading.Thread(target=wait, name="medexam-parent-watch", daemon=True).start()
