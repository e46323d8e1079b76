"""What a leased model cost a run: the tokens it generated and how fast, its time to first
token, how long it took to load, its peak memory (RAM and GPU) and its file's size.

Speeds are named for what they are, as a model sharing its slots between several sequences
makes each answer slower than the model is (:func:`with_speeds`): the model's decode speed
and time to first token for one sequence alone (what a chat user sees), its throughput over
the run at its slots (what an evaluation gets), and the time answers waited for a slot.

Every lease of the pool (:class:`~engine.models.pool.PooledModel`) keeps a :class:`Meter` of
the generations it gave; the run loop reads it with :func:`model_usage` when a run ends and
stores it in the run's summary (``usage``, by model, :func:`merge` adding a resumed run's
sessions together), where a comparison of models reads it back
(:mod:`engine.experiments.compare`).

>>> m = Meter()
>>> m.add(Generation("ok", 12, 20, 1.5, "stop", prompt_seconds=0.5))
>>> m.totals()["tokens_per_s"], m.totals()["first_token_s"]
(20.0, 0.5)
>>> m.add(Generation("ok", 12, 20, 3.0, "stop", 1.5, wait_seconds=1.0, read_seconds=0.25,
...                  alone_tokens=10, alone_seconds=0.2))
>>> t = m.totals()
>>> t["decode_alone_per_s"], t["first_token_alone_s"], t["slot_wait_s"]
(50.0, 0.25, 1.0)
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.models.protocol import Generation

if TYPE_CHECKING:
    from engine.types import JSONDict

#: The counts a meter adds up (a resumed run's sessions are added together).
COUNTS = (
    "generations",
    "prompt_tokens",
    "completion_tokens",
    "decode_s",
    "first_token_total_s",
    "run_s",
    "waits",
    "wait_total_s",
    "read_generations",
    "read_total_s",
    "alone_tokens",
    "alone_s",
)


class Meter:
    """The generations of one lease, added up (any thread may add)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, float] = dict.fromkeys(COUNTS, 0)

    def add(self, generation: Generation | None) -> None:
        """Count one finished generation (none: a stream abandoned before its end)."""
        if generation is None:
            return
        prompt_s = max(0.0, float(generation.prompt_seconds or 0.0))
        decode_s = max(0.0, float(generation.seconds or 0.0) - prompt_s)
        with self._lock:
            c = self.counts
            c["generations"] += 1
            c["prompt_tokens"] += int(generation.prompt_tokens or 0)
            c["completion_tokens"] += int(generation.completion_tokens or 0)
            c["decode_s"] += decode_s
            c["first_token_total_s"] += prompt_s
            if generation.wait_seconds is not None:
                c["waits"] += 1
                c["wait_total_s"] += max(0.0, float(generation.wait_seconds))
            if generation.read_seconds is not None:
                c["read_generations"] += 1
                c["read_total_s"] += float(generation.read_seconds)
            c["alone_tokens"] += int(generation.alone_tokens or 0)
            c["alone_s"] += float(generation.alone_seconds or 0.0)

    def totals(self) -> JSONDict:
        """The counts with the speeds they give (:func:`with_speeds`)."""
        with self._lock:
            return with_speeds(dict(self.counts))


def with_speeds(counts: JSONDict) -> JSONDict:
    """``counts`` with the speeds they give, None where nothing was generated or timed:

    * ``decode_alone_per_s``: the model's decode speed for one sequence, tokens per second
      of the passes that decoded a single sequence (None when none did: every pass decoded
      several, or the backend does not say);
    * ``first_token_alone_s``: the mean time to the first token of a request alone, the
      passes that read its prompt (a prompt block is always a pass of its own);
    * ``throughput_per_s``: tokens generated per second of the run, all its sequences
      together at the model's slots (where the run's answering time ``run_s`` is known);
    * ``slot_wait_s``: the mean time a request waited for one of the model's slots;
    * ``tokens_per_s`` and ``first_token_s``: each answer's own speed after its first token
      and mean time to it (waiting for a slot included), while it shared the model with
      the other sequences: slower than the model is when several decode at once."""
    n = int(counts.get("generations") or 0)
    tokens, decode = float(counts.get("completion_tokens") or 0), float(counts.get("decode_s") or 0)
    first, wall = float(counts.get("first_token_total_s") or 0), float(counts.get("run_s") or 0)
    alone, alone_s = float(counts.get("alone_tokens") or 0), float(counts.get("alone_s") or 0)
    reads, read_s = int(counts.get("read_generations") or 0), float(counts.get("read_total_s") or 0)
    waits = int(counts.get("waits") or 0)
    return {
        **counts,
        "tokens_per_s": round(tokens / decode, 2) if tokens and decode > 0 else None,
        "first_token_s": round(first / n, 4) if n and first > 0 else None,
        "throughput_per_s": round(tokens / wall, 2) if tokens and wall > 0 else None,
        "decode_alone_per_s": round(alone / alone_s, 2) if alone and alone_s > 0 else None,
        "first_token_alone_s": round(read_s / reads, 4) if reads and read_s > 0 else None,
        "slot_wait_s": round(float(counts.get("wait_total_s") or 0) / waits, 4) if waits else None,
    }


def peak_rss(pid: int | None) -> int | None:
    """The most resident memory process ``pid`` has used (bytes), where the system keeps
    it (Linux's VmHWM, Windows' peak working set); else its resident memory now; None
    without a process of its own."""
    if pid is None:
        return None
    status = Path(f"/proc/{pid}/status")
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        info = psutil.Process(pid).memory_info()
    except Exception:  # noqa: BLE001 - no such process, or none we may read
        return None
    return int(getattr(info, "peak_wset", 0) or info.rss)


def model_usage(model: Any) -> JSONDict:
    """What one lease (:class:`~engine.models.pool.PooledModel`) cost so far: its meter's
    totals, ``load_s``, ``memory`` (``ram_peak`` of its process and ``gpu`` bytes of its
    buffers on a GPU, None when unknown), ``device``, ``file_size`` and ``quantization``."""
    info = dict(getattr(model, "info", {}) or {})
    described = getattr(model, "model_info", None)
    meter = getattr(model, "meter", None)
    gpu = info.get("gpu_memory")
    try:
        location = str(described.location) if described is not None else None
    except (AttributeError, NotImplementedError):
        location = None
    remote = bool(getattr(described, "remote", False))
    return {
        **(meter.totals() if meter is not None else with_speeds({})),
        "file": (location if remote else Path(location).name) if location else None,
        "slots": info.get("slots"),
        "n_threads": info.get("n_threads"),
        "flash_attn": info.get("flash_attn"),
        "load_s": getattr(model, "load_seconds", None),
        "memory": {
            "ram_peak": peak_rss(getattr(model, "pid", None)),
            "gpu": int(gpu) if isinstance(gpu, int | float) else None,
        },
        "device": info.get("device"),
        "file_size": getattr(described, "file_size", None),
        "quantization": getattr(described, "quantization", None),
    }


def merge(earlier: JSONDict | None, now: JSONDict) -> JSONDict:
    """One model's usage over a run's sessions: ``earlier`` (as stored) and ``now`` added
    together, the peak memory the larger, the load time and file the latest."""
    if not earlier:
        return now
    counts = {k: (earlier.get(k) or 0) + (now.get(k) or 0) for k in COUNTS}
    peaks = {}
    for key in ("ram_peak", "gpu"):
        found = [m.get(key) for m in (earlier.get("memory") or {}, now.get("memory") or {})]
        values = [v for v in found if isinstance(v, int | float)]
        peaks[key] = max(values) if values else None
    return {**earlier, **now, **with_speeds(counts), "memory": peaks}


def run_usage(leases: list[Any], seconds: float, earlier: JSONDict | None = None) -> JSONDict:
    """The usage of a run's leased models by model name (two leases of one model, a doctor
    and its patient, added together) over a session that answered for ``seconds``, merged
    with the ``earlier`` sessions' as stored."""
    out: JSONDict = {}
    for lease in leases:
        name = str(getattr(lease, "name", "") or "model")
        mine = model_usage(lease)
        if name not in out:
            mine = {**mine, **with_speeds({**mine, "run_s": round(seconds, 3)})}
        out[name] = merge(out.get(name), mine)
    earlier = earlier or {}
    return {name: merge(earlier.get(name), value) for name, value in out.items()}
