"""Several sequences decoded together in the model process, with llama.cpp's batch API.

The model process (:mod:`engine.models.worker`) holds a context of ``slots`` sequences, each
with its own KV cache of the model's per-sequence context. Every request that decodes (a
generation, the log-probabilities of candidates) is a :class:`Job`; the :class:`Scheduler`
gives each a slot as one frees (continuous batching), and each :meth:`Scheduler.step` decodes
with ``llama_decode`` the next token of every generating sequence in one ``llama_batch`` and
the next prompt block of every sequence still reading its prompt in one of its own, and
samples each sequence with its own sampler chain (its settings, seed and grammar).

Prompts are read in blocks aligned to multiples of :data:`BLOCK`, and a slot keeps the whole
blocks of its last prompt: a request sharing them (a few-shot prefix) starts after them.
A prefix another slot holds is copied from it (``llama_memory_seq_cp``) rather than computed
again, and a request whose prefix another one is computing right now waits for it. With one
slot the batches are those of a model reading one request at a time, so its answers are too.

A request with no prefix in any free slot takes the one freed longest ago (an empty one
first), so the caches a conversation's next turn will want are the last to go.

llama.cpp decodes a batch of sequences with KV caches of their own in one pass only when their
ids are consecutive (it splits the batch into runs of consecutive ids, one pass each, each
reading all the weights again). So the busy slots are kept together: a sequence ending
between busy ones leaves a gap that the last busy sequence moves into (its cache copied
there once), rather than every later step taking two passes. Moving there drops the cache
the gap holds, which the ended sequence's next turn (a consultation's patient, say) would
have read again, so the gap waits first: until the extra passes paid since it opened have
taken as long as reading its cache again would (each measured as the model goes).
"""

from __future__ import annotations

import codecs
import itertools
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.models.protocol import Generation, ModelError

BLOCK = 64  # prompt tokens decoded per block, at positions aligned to multiples of it

Send = Callable[[int, str, Any], None]
_order = itertools.count()


def aligned_common(cached: Sequence[int], tokens: Sequence[int]) -> int:
    """How many leading ``tokens`` a cache holding ``cached`` serves: their common prefix in
    whole blocks, leaving at least one token of ``tokens`` to decode."""
    n = len(os.path.commonprefix([list(cached), list(tokens)]))
    return min(n, len(tokens) - 1) // BLOCK * BLOCK


@dataclass
class Slot:
    """One sequence of the context: its id, the prompt tokens its cache holds at positions
    ``0..len(cached)`` (decoded in aligned blocks), and the job in it."""

    seq: int
    cached: list[int] = field(default_factory=list)
    job: Job | None = None
    freed: int = -1  # the step its last job ended at (-1: none yet)


class Job:
    """A request that decodes: a ``context`` to read into its slot's cache (in aligned
    blocks), then tokens decoded one at a time (``pending``) until it is done."""

    def __init__(self, rid: int, context: list[int], reuse: bool) -> None:
        self.rid = rid
        self.context = context
        self.reuse = reuse
        self.slot: Slot | None = None
        self.n_past = 0  # tokens in the slot's cache
        self.pending: list[int] = []
        self.done = False
        self.order = next(_order)
        self.t0 = time.perf_counter()
        self.t_slot: float | None = None  # when it first had a slot
        self.read_s = 0.0  # the passes that read its context (each a pass of its own)
        self.alone = [0, 0.0]  # next-token passes that decoded it alone: count, seconds

    @property
    def reading(self) -> bool:
        """Whether the job still reads its context."""
        return self.n_past < len(self.context)

    def chunk(self) -> list[int]:
        """The tokens this job decodes in the next step."""
        if self.reading:
            end = min(len(self.context), (self.n_past // BLOCK + 1) * BLOCK)
            return self.context[self.n_past : end]
        return self.pending[:1]

    def advance(self, sched: Scheduler, n: int, idx: int) -> None:
        """``n`` tokens of :meth:`chunk` were decoded; the logits of the last are at ``idx``."""
        assert self.slot is not None
        was_reading = self.reading
        self.n_past += n
        if was_reading:
            self.slot.cached = self.context[: self.n_past]
            if not self.reading:
                self.read(sched, idx)
        else:
            self.pending.pop(0)
            self.decoded(sched, idx)

    def read(self, sched: Scheduler, idx: int) -> None:
        """The context is read; its last token's logits are at ``idx``."""
        raise NotImplementedError

    def decoded(self, sched: Scheduler, idx: int) -> None:
        """A pending token was decoded; its logits are at ``idx``."""
        raise NotImplementedError

    def cancel(self, sched: Scheduler) -> None:
        """End now, answering the caller."""
        raise NotImplementedError


class Scheduler:
    """The slots of one llama.cpp context and the jobs waiting for them; :meth:`step`
    decodes one batch."""

    def __init__(
        self, llm: Any, llama_cpp: Any, slots: int, send: Send, before: Callable[[], None]
    ) -> None:
        from llama_cpp import _internals

        self.llm, self.llama_cpp, self.send = llm, llama_cpp, send
        self.before_decode = before  # the worker's thread-count check
        self.slots = [Slot(i) for i in range(slots)]
        self.waiting: deque[Job] = deque()
        self.n_batch = int(llm.n_batch)
        self.n_vocab = int(llm.n_vocab())
        self._batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=1)
        self.mem = llama_cpp.llama_get_memory(llm.ctx)
        # tokens decoded, prompt tokens a cache served, prefixes copied, sequences moved to
        # close a gap
        self.counts = {"decoded": 0, "reused": 0, "copied": 0, "moved": 0}
        self.steps = 0
        # seconds a pass of next tokens takes, and a prompt token read (moving averages)
        self.pass_s: dict[str, float | None] = {"token": None, "read": None}

    def warm_up(self) -> None:
        """Decode one token and forget it, as llama.cpp's own tools do after loading: the
        first decode allocates and touches the compute buffers (seconds for a context of
        many slots), which a first request should not wait for, nor a cancel of it."""
        token = int(self.llama_cpp.llama_vocab_bos(self.llm._model.vocab))
        if token < 0:
            token = 0
        batch = self._batch.batch
        batch.token[0], batch.pos[0], batch.n_seq_id[0] = token, 0, 1
        batch.seq_id[0][0], batch.logits[0], batch.n_tokens = 0, True, 1
        self.llama_cpp.llama_decode(self.llm.ctx, batch)
        self.llama_cpp.llama_memory_clear(self.mem, True)

    # -- jobs ------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or any(s.job is not None for s in self.slots)

    def submit(self, job: Job) -> None:
        self.waiting.append(job)

    def jobs(self) -> list[Job]:
        """The jobs in slots, in the order they came."""
        return sorted((s.job for s in self.slots if s.job is not None), key=lambda j: j.order)

    def cancel(self, rid: int | None) -> None:
        """Cancel request ``rid`` (None: every request) wherever it is."""
        for job in [*self.waiting, *self.jobs()]:
            if rid is None or job.rid == rid:
                job.cancel(self)

    def finish(self, job: Job) -> None:
        """Take ``job`` out of its slot (or the queue); the slot keeps its cache."""
        job.done = True
        if job.slot is not None:
            job.slot.job, job.slot.freed = None, self.steps
        elif job in self.waiting:
            self.waiting.remove(job)

    def fail_all(self, exc: Exception) -> None:
        """Answer every job with ``exc`` (a failed decode) and forget what the caches hold."""
        for job in [*self.waiting, *self.jobs()]:
            self.send(job.rid, "error", (type(exc).__name__, str(exc)))
            self.finish(job)
        for slot in self.slots:
            self.forget(slot, 0)

    # -- the cache -------------------------------------------------------------------------

    def forget(self, slot: Slot, keep: int) -> None:
        """Drop ``slot``'s cache from position ``keep`` on."""
        self.llama_cpp.llama_memory_seq_rm(self.mem, slot.seq, keep, -1)
        slot.cached = slot.cached[:keep]

    def place(self, job: Job, slot: Slot) -> None:
        """Start ``job`` in ``slot``, after the whole blocks of its context the slot holds."""
        keep = aligned_common(slot.cached, job.context) if job.reuse else 0
        self.forget(slot, keep)
        slot.job, job.slot, job.n_past = job, slot, keep
        if job.t_slot is None:
            job.t_slot = time.perf_counter()
        self.counts["reused"] += keep

    def reread(self, job: Job, context: list[int]) -> None:
        """Let ``job`` read another ``context`` in its slot (a log-probability request's
        next group of candidates)."""
        assert job.slot is not None
        job.context, job.pending = context, []
        keep = aligned_common(job.slot.cached, context) if job.reuse else 0
        self.forget(job.slot, keep)
        job.n_past = keep
        self.counts["reused"] += keep

    def _admit(self) -> None:
        """Give waiting jobs the free slots, each the one holding most of its context."""
        while self.waiting:
            free = [s for s in self.slots if s.job is None]
            if not free:
                return
            job = self.waiting.popleft()
            best = max(
                free, key=lambda s: (aligned_common(s.cached, job.context), -s.freed, -s.seq)
            )
            self.place(job, best)

    def _share(self, job: Job) -> bool:
        """True when an earlier job is reading more of ``job``'s context right now (``job``
        waits for it); else copy into ``job``'s slot the longest part of its context another
        slot holds, if longer than its own."""
        if not job.reuse or len(self.slots) == 1 or job.slot is None:
            return False
        for other in self.jobs():
            if other.order < job.order and other.reading:
                shared = aligned_common(other.context, job.context)
                if shared > job.n_past and other.n_past < shared:
                    return True
        best, donor = job.n_past, None
        for slot in self.slots:
            if slot is not job.slot:
                k = aligned_common(slot.cached, job.context)
                if k > best:
                    best, donor = k, slot
        if donor is not None:
            mine = job.slot
            self.llama_cpp.llama_memory_seq_rm(self.mem, mine.seq, -1, -1)
            self.llama_cpp.llama_memory_seq_cp(self.mem, donor.seq, mine.seq, -1, -1)
            self.llama_cpp.llama_memory_seq_rm(self.mem, mine.seq, best, -1)
            self.counts["reused"] += best - job.n_past
            mine.cached, job.n_past = job.context[:best], best
            self.counts["copied"] += 1
        return False

    # -- one step --------------------------------------------------------------------------

    def _gap_due(self, slot: Slot) -> bool:
        """Whether the free ``slot`` between busy ones has kept its cache long enough: the
        extra pass of every step since it opened has taken as long as reading the cache
        again would."""
        token_s, read_s = self.pass_s["token"], self.pass_s["read"]
        if not slot.cached or token_s is None or read_s is None:
            return True
        return (self.steps - slot.freed) * token_s >= len(slot.cached) * read_s

    def _close_gaps(self) -> None:
        """Move the last busy slots' jobs into the free slots between busy ones that are due
        (:meth:`_gap_due`), so that the busy slots are consecutive (one pass of llama.cpp
        for them all)."""
        while True:
            busy = [s for s in self.slots if s.job is not None]
            gaps = [s for s in self.slots if s.job is None and busy and busy[0].seq < s.seq]
            due = [s for s in gaps if s.seq < busy[-1].seq and self._gap_due(s)]
            if not due:
                return
            src, dst, job = busy[-1], due[0], busy[-1].job
            assert job is not None
            self.llama_cpp.llama_memory_seq_rm(self.mem, dst.seq, -1, -1)
            self.llama_cpp.llama_memory_seq_cp(self.mem, src.seq, dst.seq, -1, -1)
            self.llama_cpp.llama_memory_seq_rm(self.mem, src.seq, -1, -1)
            dst.cached, src.cached = src.cached, []
            dst.job, src.job, job.slot = job, None, dst
            self.counts["moved"] += 1

    def step(self) -> None:
        """Admit waiting jobs, decode one batch, and let each job in it go on."""
        self.steps += 1
        self._admit()
        self._close_gaps()
        plan: list[tuple[Job, list[int]]] = []
        budget = self.n_batch
        for job in sorted(self.jobs(), key=lambda j: (j.reading, j.order)):
            if job.reading and self._share(job):
                continue
            chunk = job.chunk()
            if chunk and len(chunk) <= budget:
                plan.append((job, chunk))
                budget -= len(chunk)
        # The generating sequences' next tokens in one pass, each prompt block in a pass of
        # its own: a block read with other sequences' tokens is split by llama.cpp into other
        # micro-batches, which with flash attention changes its numbers (a sequence's answer
        # would then depend on what else the model was doing).
        tokens = [entry for entry in plan if not entry[0].reading]
        for part in ([tokens] if tokens else []) + [[e] for e in plan if e[0].reading]:
            self._decode(part)

    def _decode(self, plan: list[tuple[Job, list[int]]]) -> None:
        """Decode ``plan``'s chunks in one ``llama_decode`` and let each job go on."""
        # In sequence order: llama.cpp splits a batch of several sequences with a KV cache
        # each into micro-batches of consecutive sequence ids (one forward pass each).
        plan.sort(key=lambda entry: entry[0].slot.seq if entry[0].slot else 0)
        self._fill(plan)
        self.before_decode()
        started = time.perf_counter()
        rc = self.llama_cpp.llama_decode(self.llm.ctx, self._batch.batch)
        if rc != 0:
            raise ModelError(f"llama.cpp could not decode the batch (code {rc})")
        n = sum(len(chunk) for _, chunk in plan)
        self.counts["decoded"] += n
        took = time.perf_counter() - started
        self._timed(plan[0][0].reading, n, took)
        first = plan[0][0]
        if first.reading:  # a prompt block: a pass of its own
            first.read_s += took
        elif len(plan) == 1:
            first.alone[0] += 1
            first.alone[1] += took
        idx = -1
        for job, chunk in plan:
            idx += len(chunk)
            job.advance(self, len(chunk), idx)

    def _timed(self, reading: bool, n: int, seconds: float) -> None:
        """Fold a pass's time into :attr:`pass_s` (a prompt block's per token read)."""
        kind, value = ("read", seconds / n) if reading else ("token", seconds)
        before = self.pass_s[kind]
        self.pass_s[kind] = value if before is None else 0.8 * before + 0.2 * value

    def _fill(self, plan: list[tuple[Job, list[int]]]) -> None:
        batch = self._batch.batch
        i = 0
        for job, chunk in plan:
            assert job.slot is not None
            for j, token in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = job.n_past + j
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = job.slot.seq
                batch.logits[i] = j == len(chunk) - 1
                i += 1
        batch.n_tokens = i

    def logits(self, idx: int) -> Any:
        """The logits of batch position ``idx``, as float64."""
        import numpy as np

        ptr = self.llama_cpp.llama_get_logits_ith(self.llm.ctx, idx)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)


class Generate(Job):
    """A generation: its own sampler chain (settings, seed, grammar), stop strings, a token
    budget; with ``stream``, its text goes out as ``piece`` messages as it is made (else only
    in its answer, so that a run's generations cost the parent no message per token)."""

    def __init__(
        self,
        rid: int,
        tokens: list[int],
        vocab: Any,
        max_tokens: int,
        stop: Sequence[str],
        sampler: Any,
        stream: bool = True,
    ) -> None:
        super().__init__(rid, tokens, reuse=True)
        self.vocab, self.sampler, self.max_tokens = vocab, sampler, max_tokens
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.stops = [s for s in stop if s]
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.text, self.sent, self.n_out = "", 0, 0
        self.t_first: float | None = None

    def read(self, sched: Scheduler, idx: int) -> None:
        self._sample(sched, idx)

    def decoded(self, sched: Scheduler, idx: int) -> None:
        self._sample(sched, idx)

    def _sample(self, sched: Scheduler, idx: int) -> None:
        llm = sched.llm
        token = self.sampler.sample(llm._ctx, idx)
        if self.t_first is None:
            self.t_first = time.perf_counter()
        if sched.llama_cpp.llama_vocab_is_eog(self.vocab, token):
            self._end(sched, "stop")
            return
        self.n_out += 1
        self.text += self.decoder.decode(llm.detokenize([token]))
        cut = min((i for i in (self.text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.text = self.text[:cut]
            self._end(sched, "stop")
            return
        ready = len(self.text) - self.hold if self.stops else len(self.text)
        if self.stream and ready > self.sent:
            sched.send(self.rid, "piece", self.text[self.sent : ready])
            self.sent = ready
        if self.n_out >= self.max_tokens:
            self._end(sched, "length")
        else:
            self.pending = [token]

    def cancel(self, sched: Scheduler) -> None:
        self._end(sched, "cancelled")

    def _end(self, sched: Scheduler, finish: str) -> None:
        self.text += self.decoder.decode(b"", final=True)
        if self.stream and len(self.text) > self.sent:
            sched.send(self.rid, "piece", self.text[self.sent :])
        t_end = time.perf_counter()
        prompt_s = (self.t_first or t_end) - self.t0
        n = len(self.context)
        result = Generation(
            self.text, n, self.n_out, t_end - self.t0, finish, prompt_s,
            wait_seconds=(self.t_slot or t_end) - self.t0, read_seconds=self.read_s,
            alone_tokens=int(self.alone[0]), alone_seconds=float(self.alone[1]),
        )  # fmt: skip
        sched.send(self.rid, "done", result)
        sched.finish(self)


class Score(Job):
    """``log P(candidate | prompt)`` for candidates grouped by the context they share: each
    group's context read once, its candidates' first tokens scored from its last logits, a
    longer candidate's further tokens decoded one at a time."""

    def __init__(
        self, rid: int, groups: list[tuple[list[int], list[tuple[str, list[int]]]]], reuse: bool
    ) -> None:
        super().__init__(rid, groups[0][0], reuse)
        self.groups = deque(groups)
        self.out: dict[str, float] = {}
        self.scoring: deque[tuple[str, list[int]]] = deque()

    def read(self, sched: Scheduler, idx: int) -> None:
        import numpy as np

        logits = sched.logits(idx)
        first = logits - np.logaddexp.reduce(logits)
        _, members = self.groups.popleft()
        for cand, cont in members:
            self.out[cand] = float(first[cont[0]])
            if len(cont) > 1:  # its further tokens are scored one decode at a time
                self.scoring.append((cand, cont))
        self._next(sched)

    def decoded(self, sched: Scheduler, idx: int) -> None:
        import numpy as np

        cand, cont = self.scoring[0]
        done = len(cont) - 1 - len(self.pending)  # continuation tokens decoded so far
        lg = sched.logits(idx)
        self.out[cand] += float(lg[cont[done]] - np.logaddexp.reduce(lg))
        if not self.pending:
            self.scoring.popleft()
            self._next(sched)

    def _next(self, sched: Scheduler) -> None:
        """Go on with the next multi-token candidate, the next group, or answer."""
        assert self.slot is not None
        n = len(self.context)
        if self.n_past > n:
            sched.forget(self.slot, n)  # a scored continuation leaves the cache
            self.n_past = n
        if self.scoring:
            self.pending = list(self.scoring[0][1][:-1])
        elif self.groups:
            sched.reread(self, self.groups[0][0])
        else:
            sched.send(self.rid, "done", self.out)
            sched.finish(self)

    def cancel(self, sched: Scheduler) -> None:
        sched.send(self.rid, "error", ("Cancelled", "the request was cancelled"))
        sched.finish(self)
