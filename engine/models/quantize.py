"""Quantizations of a GGUF model, written by llama.cpp's own quantizer (``llama_model_quantize``
through the bindings): the file converted to F32 or F16, or quantized to Q8_0, Q4_K_M, Q2_K….

A quantized source is read back to F32 tensor by tensor first (``allow_requantize``), so a
ladder made from an already quantized file (the embedded smollm2 is Q4_1) is relative to that
file's own F32 conversion, its highest precision, not to the original weights.

The file is written beside the target under a temporary name and renamed when complete: a
target already there is a finished quantization and is kept, not redone (``redo`` to redo).
Progress is llama.cpp's own, one report per tensor it writes, read from its log.

A model's ladder (:func:`quantize_model`, ``medexam models quantize``): its quantizations,
written from its highest precision into ``quantized/MODEL/`` of the models folder, each
added to the catalog as ``MODEL-TYPE`` with its type
(:func:`engine.models.catalog.add_quantization`); :func:`ladder` reads them back for the
``quantizations`` preset (:mod:`engine.exam.quantizations`).
The dequantized weights a training caches (:mod:`engine.train.base_cache`) are that same F32
reading of the file, so they would make the same reference.

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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.progress import ProgressCallback, report
from engine.errors import UserError

if TYPE_CHECKING:
    from engine.models.local import GGUFInfo

__all__ = [
    "HIGH",
    "TYPES",
    "Quantization",
    "QuantizeError",
    "ftype",
    "ladder",
    "quantize",
    "quantize_model",
    "quantized_name",
]

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


# -- a model's ladder ---------------------------------------------------------------------

#: The types that keep a model's weights whole, highest first: a file of one of them is its
#: own ladder's reference; a model in any other is quantized from its F32 conversion.
HIGH = ("F32", "BF16", "F16")


@dataclass(frozen=True)
class Quantization:
    """One model of a ladder: its catalog ``name``, ``kind`` (its type), file, size, and
    whether this call wrote it (``made``; False: a finished file kept from before)."""

    name: str
    kind: str
    path: str
    file_size: int
    made: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _type_of(info: GGUFInfo) -> str:
    """The header's type as :data:`TYPES` names it (``ALL_F32`` is F32)."""
    return info.quantization.removeprefix("ALL_")


def quantized_name(model: str, kind: str) -> str:
    """``smollm2-q8_0``: the catalog name of ``model`` quantized to ``kind``."""
    return f"{model}-{kind.lower()}"


def _local(model: str, assemble: bool = True) -> GGUFInfo:
    """``model`` as a local GGUF file (an embedded one's written first unless not
    ``assemble``); :class:`QuantizeError` for any other model."""
    from engine.models.catalog import resolve
    from engine.models.local import GGUFInfo

    info = resolve(model, assemble)
    if not isinstance(info, GGUFInfo) or info.lora:
        raise QuantizeError(f"{model}: only a local GGUF model (no LoRA over it) is quantized")
    return info


def ladder(model: str) -> tuple[tuple[str, str], list[tuple[str, str]]]:
    """The quantization ladder of ``model`` made so far (:func:`quantize_model`): its
    reference (the model itself when its file is F32, BF16 or F16, else its F32 conversion)
    and the others, each as ``(name, type)``, the largest type first;
    :class:`QuantizeError` saying how to make them when there are none."""
    from engine.models.catalog import quantizations

    made = quantizations(model)
    own = _type_of(_local(model, assemble=False)) if made else ""
    order = list(TYPES)
    ranked = sorted(made.items(), key=lambda nk: order.index(nk[1]) if nk[1] in order else 99)
    reference = (model, own) if own in HIGH else (quantized_name(model, "F32"), "F32")
    rungs = [(n, k) for n, k in ranked if n != reference[0] and k not in HIGH]
    if reference[0] not in (model, *made) or not rungs:
        raise QuantizeError(
            f"{model} has no quantizations yet: medexam models quantize {model} --types Q8_0,Q4_K_M"
        )
    return reference, rungs


def quantize_model(
    model: str,
    kinds: Sequence[str],
    *,
    progress: ProgressCallback | None = None,
    threads: int | None = None,
) -> list[Quantization]:
    """Write ``model`` (a local GGUF model) as each type of ``kinds`` from its highest
    precision — its own file when F32, BF16 or F16, else that file converted to F32 first,
    itself registered as ``MODEL-f32`` — into ``quantized/MODEL/`` of the models folder,
    each registered in the catalog as ``MODEL-TYPE`` (:func:`quantized_name`) with its type.
    A file finished before is kept. ``progress``: every tensor written, of all the files."""
    from engine.models.catalog import add_quantization
    from engine.paths import models_dir

    wanted = list(dict.fromkeys(k.strip().upper() for k in kinds if k.strip()))
    for kind in wanted:
        ftype(kind)  # one line naming the known types, before anything is written
    if not wanted:
        raise QuantizeError(f"no type given; known: {', '.join(TYPES)}")
    info = _local(model)
    own = _type_of(info)
    folder = models_dir() / "quantized" / model
    steps = [] if own in HIGH else ["F32"]
    steps += [k for k in wanted if k not in steps and not (own in HIGH and k == own)]
    tensors = len(_tensor_names(info.path))
    total = tensors * len(steps)
    out: list[Quantization] = []
    source = Path(info.path)
    for i, kind in enumerate(steps):
        target = folder / f"{quantized_name(model, kind)}.gguf"
        kept = target.is_file()
        step = None if progress is None else _offset(progress, i * tensors, total)
        quantize(source, target, kind, progress=step, threads=threads)
        report(progress, (i + 1) * tensors, total, f"{kind}: {'kept' if kept else 'written'}")
        if kind == "F32" and own not in HIGH:
            source = target  # the reference: the others are made from it
        name = quantized_name(model, kind)
        add_quantization(target, name, model, kind)
        out.append(Quantization(name, kind, str(target), target.stat().st_size, not kept))
    return out


def _tensor_names(path: str) -> list[str]:
    from engine.models.gguf import read_header

    return [t.name for t in read_header(Path(path))[1]]


def _offset(progress: ProgressCallback, before: int, total: int) -> ProgressCallback:
    """``progress`` told of one file's tensors as part of all the files' ``total``."""
    return lambda p: progress(p._replace(done=before + p.done, total=total))
