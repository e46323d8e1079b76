"""The model process: loads a GGUF model with llama-cpp-python and serves the requests of a
:class:`~engine.models.local.LocalModel` over a pipe (generation with streaming and cancel,
log-probabilities of candidates, tokenizing, the chat template).

It ends as soon as its parent is gone, however the parent died (a thread waits on the
parent's sentinel, which multiprocessing gives every process it spawns), and a cancel
stops a long prompt between two of its blocks."""

from __future__ import annotations

import codecs
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from engine.errors import MedexamError
from engine.models.hardware import ModelSettings
from engine.models.protocol import Generation, Message, ModelError

_IDLE_POLL_S = 0.1  # how often an idle worker looks for a new thread count
BLOCK = 64  # prompt tokens decoded per batch, at positions aligned to multiples of it


class _Cancelled(MedexamError):
    """The caller cancelled the request while its prompt was being read."""


class _Worker:
    def __init__(
        self,
        path: str,
        settings: ModelSettings,
        conn: Connection,
        cancel: Any,
        threads: tuple[Any, Any],
    ) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llama_cpp = llama_cpp
        self._grammars: dict[str, Any] = {}
        self.conn = conn
        self.cancel = cancel
        # Shared with the caller: the thread count it asks for, and the one in force here.
        self.threads_wanted, self.threads_applied = threads
        self.n_threads = settings.n_threads
        self.llm, offload = _load(llama_cpp, path, settings)
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
            if self.cancel.is_set():
                self.aligned = 0  # the cache holds part of this prompt: start afresh next time
                raise _Cancelled("the request was cancelled")
            self.apply_threads()
            llm.eval(tokens[i : i + BLOCK])
        self.aligned = len(tokens)

    def _logits_after(self, tokens: list[int], reuse: bool) -> Any:
        self._eval_prompt(tokens, reuse)
        return self._logits()

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
    ) -> None:
        llm = self.llm
        t0 = time.perf_counter()
        grammar = self._grammar(json_schema)
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
        try:
            self._eval_prompt(tokens, reuse=True)
        except _Cancelled:
            seconds = time.perf_counter() - t0
            self.conn.send(("done", Generation("", len(tokens), 0, seconds, "cancelled", seconds)))
            return
        for token in llm.generate(
            [],
            reset=False,
            temp=temperature,
            top_p=top_p,
            top_k=top_k,
            min_p=0.0 if temperature <= 0 else 0.05,
            repeat_penalty=repeat_penalty,
            grammar=grammar,
        ):
            if t_first is None:
                t_first = time.perf_counter()
            self.apply_threads()  # before the next token is decoded
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
                        self.apply_threads()
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
        self.apply_threads()
        self.conn.send(("ready", self.info))
        while True:
            try:
                while not self.conn.poll(_IDLE_POLL_S):
                    self.apply_threads()  # so that ``threads`` is right while idle too
                op, kwargs = self.conn.recv()
            except (EOFError, OSError):
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
            except _Cancelled as exc:
                self.conn.send(("error", ("Cancelled", str(exc))))
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                self.conn.send(("error", (type(exc).__name__, str(exc))))


def _load(llama_cpp: Any, path: str, settings: ModelSettings) -> tuple[Any, dict[str, Any]]:
    """The model loaded, and where its layers went (:func:`engine.models.gpu.outcome`).

    Automatic GPU layers (``None``) are those that fit the GPU's free memory
    (:func:`engine.models.gpu.plan`); a model that then fails to load on the GPU loads on
    the CPU."""
    from engine.models import gpu

    layers, plan, note = settings.n_gpu_layers, None, ""
    if layers is None:
        plan = gpu.plan(path, settings.n_ctx)
        layers, note = plan.layers, plan.note

    def load(n_gpu_layers: int) -> Any:
        return llama_cpp.Llama(
            model_path=path,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_threads_batch=settings.n_threads,
            n_gpu_layers=n_gpu_layers,
            n_batch=settings.n_batch,
            seed=settings.seed,
            logits_all=False,
            verbose=False,
            **settings.extra,
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
    return llm, {"n_gpu_layers": layers, **gpu.outcome(log, total, note)}


def _serve(
    path: str, settings: ModelSettings, conn: Connection, cancel: Any, threads: tuple[Any, Any]
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
        worker = _Worker(path, settings, conn, cancel, threads)
    except Exception as exc:  # noqa: BLE001
        conn.send(("error", (type(exc).__name__, str(exc))))
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
