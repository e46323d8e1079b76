"""Quantizations of a GGUF model, written by llama.cpp's own quantizer (``llama_model_quantize``
through the bindings): the file converted to F32 or F16, or quantized to Q8_0, Q4_K_M, Q2_K….

A quantized source is read back to F32 tensor by tensor first (``allow_requantize``), so a
ladder made from an already quantized file (the embedded smollm2 is Q4_1) is relative to that
file's own F32 conversion, its highest precision, not to the original weights.

The file is written beside the target under a temporary name and renamed when complete: a
target already there is a finished quantization and is kept, not redone (``redo`` to redo).
Progress is llama.cpp's own, one report per tensor it writes, read from its log.

>>> TYPES["Q4_K_M"], TYPES["F32"]
(15, 0)
>>> ftype("q4_k_m")
15
>>> quantize(Path("model-f32.gguf"), Path("model-q8_0.gguf"), "Q8_0")   # doctest: +SKIP
PosixPath('model-q8_0.gguf')
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from engine.errors import UserError
from engine.progress import ProgressCallback, report

__all__ = ["TYPES", "QuantizeError", "ftype", "quantize"]

#: The types written, by name, with their ``llama_ftype`` (llama.h). Left out: the types
#: llama.cpp will not write without an importance matrix (IQ1/IQ2, Q2_K_S) and those for
#: other hardware or model shapes (TQ, MXFP4, NVFP4).
TYPES: dict[str, int] = {
    "F32": 0,
    "F16": 1,
    "BF16": 32,
    "Q8_0": 7,
    "Q6_K": 18,
    "Q5_K_M": 17,
    "Q5_K_S": 16,
    "Q5_1": 9,
    "Q5_0": 8,
    "Q4_K_M": 15,
    "Q4_K_S": 14,
    "Q4_1": 3,
    "Q4_0": 2,
    "IQ4_NL": 25,
    "IQ4_XS": 30,
    "Q3_K_L": 13,
    "Q3_K_M": 12,
    "Q3_K_S": 11,
    "Q2_K": 10,
}

_TENSOR = re.compile(r"^\[\s*(\d+)\s*/\s*(\d+)\]\s+(\S+)")  # "[  12/ 272]  blk.0.attn_q.weight"


class QuantizeError(UserError):
    """A type not known, or a file llama.cpp could not quantize."""


def ftype(kind: str) -> int:
    """The ``llama_ftype`` of the type named ``kind`` (any case); :class:`QuantizeError`
    listing the types known otherwise."""
    found = TYPES.get(kind.strip().upper())
    if found is None:
        raise QuantizeError(f"unknown quantization type {kind!r}; known: {', '.join(TYPES)}")
    return found


def _threads() -> int:
    """The cores other programs leave a quantization (llama.cpp's threads spin as they wait):
    the load read for a moment, as a model pool reads it (:mod:`engine.models.cores`)."""
    from engine.models.cores import counts_load
    from engine.models.cores_load import (
        busy_elsewhere,
        cores_held,
        own_family,
        reading,
        thread_share,
    )
    from engine.models.hardware import physical_cores

    cores = physical_cores()
    if not counts_load():
        return cores
    before = reading(own_family())
    time.sleep(0.3)
    held = cores_held(busy_elsewhere(before, reading(own_family())))
    return thread_share(cores=cores, working=1, others=0, held=held)


def _on_log(kind: str, progress: ProgressCallback | None) -> Callable[[str], None]:
    """A reader of llama.cpp's log lines reporting each tensor written to ``progress``."""

    def line(text: str) -> None:
        found = _TENSOR.match(text.strip())
        if found:
            done, total = int(found.group(1)), int(found.group(2))
            report(progress, done, total, f"{kind}: {found.group(3)}")

    return line


def quantize(
    source: Path,
    target: Path,
    kind: str,
    *,
    progress: ProgressCallback | None = None,
    threads: int | None = None,
    redo: bool = False,
) -> Path:
    """Write ``source`` (a GGUF file) as type ``kind`` ("F32", "F16", "Q8_0", "Q4_K_M"…) to
    ``target`` with llama.cpp's quantizer, on ``threads`` threads (the cores others leave when
    None); ``target``. A ``target`` already there is kept unless ``redo``."""
    code = ftype(kind)
    source, target = Path(source), Path(target)
    if target.is_file() and not redo:
        return target
    if not source.is_file():
        raise QuantizeError(f"no model file {source.name} to quantize")
    import llama_cpp

    from engine.models.gpu import LoadLog

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = code
    params.nthread = threads or _threads()
    params.allow_requantize = True  # a quantized source is read back to F32 first
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f".{target.name}.part")
    log = LoadLog(on_line=_on_log(kind.upper(), progress))
    try:
        with log.capture():
            failed = llama_cpp.llama_model_quantize(
                str(source).encode(), str(part).encode(), llama_cpp.byref(params)
            )
        if failed or not part.is_file():
            said = next((x for x in reversed(log.lines) if "error" in x.lower()), "")
            raise QuantizeError(
                f"llama.cpp could not write {source.name} as {kind.upper()}"
                + (f": {said.strip()}" if said else "")
            )
        os.replace(part, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
    return target
