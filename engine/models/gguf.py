"""The GGUF header: what a model file is, read without loading it.

:func:`read_gguf_info` reads a file's header (its metadata and tensor table, nothing else)
and raises :class:`BadModelFile` with one clear sentence for a missing, truncated or foreign
file, or an architecture llama.cpp does not know. :func:`cached_info` remembers the answer
per file (its path, size and modification time), so listing models reads each header once.

>>> read_gguf_info("SmolLM2-135M-Instruct.Q4_1.gguf").architecture     # doctest: +SKIP
'llama'
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from engine.models.protocol import ModelError

__all__ = ["BadModelFile", "GGUFHeader", "Tensor", "cached_info", "read_gguf_info", "read_header"]

GGUF_MAGIC = b"GGUF"


class BadModelFile(ModelError):
    """A file that is not a usable GGUF model; the message says why in one line, and
    ``reason`` says it without the file's name ("truncated: 12 MB of 253 MB expected")."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF file's header says of its model."""

    architecture: str
    parameters: int
    quantization: str
    context_length: int  # the trained context, in tokens (0: not said)
    chat_template: bool  # whether the file carries a chat template
    file_size: int
    model_name: str  # ``general.name``, "" when absent


def _bad(p: Path, reason: str) -> BadModelFile:
    return BadModelFile(f"{p.name}: {reason}", reason)


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def _known_architectures() -> set[str]:
    import gguf

    return set(gguf.MODEL_ARCH_NAMES.values())


class Tensor(NamedTuple):
    """A tensor of a GGUF file's table: its shape as GGUF stores it (the fastest-varying
    dimension first), its elements, its bytes and its offset in the data."""

    name: str
    elements: int
    nbytes: int
    offset: int
    shape: tuple[int, ...]
    kind: str = ""  # its numbers' type as ggml names it: F32, Q4_K, I32…


F16 = 2  # bytes of a KV cache entry


@dataclass(frozen=True)
class KVShape:
    """What a model's KV cache is made of, from its GGUF header."""

    layers: int  # ``block_count``
    kv_heads: int  # ``attention.head_count_kv`` (``head_count`` when absent)
    key_length: int  # per head (``embedding_length / head_count`` when absent)
    value_length: int

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> KVShape:
        """The shape a GGUF header's metadata gives (llama.cpp's ``n_embd_k_gqa`` is
        ``kv_heads × key_length``)."""
        arch = meta.get("general.architecture", "")

        def key(name: str) -> int:
            return int(meta.get(f"{arch}.{name}") or 0)

        heads = key("attention.head_count") or 1
        kv_heads = key("attention.head_count_kv") or heads
        k_dim = key("attention.key_length") or key("embedding_length") // heads
        return cls(key("block_count"), kv_heads, k_dim, key("attention.value_length") or k_dim)

    def token_bytes(self) -> int:
        """One token's keys and values in every layer (f16)."""
        return self.layers * self.kv_heads * (self.key_length + self.value_length) * F16

    def slot_bytes(self, n_ctx: int) -> int:
        """One slot's KV cache: ``n_ctx`` tokens."""
        return n_ctx * self.token_bytes()


def _parse_gguf(p: Path) -> tuple[dict[str, Any], list[Tensor], int]:
    """Read a GGUF header: its metadata (arrays skipped, except their length), its tensors
    (:class:`Tensor`) and where tensor data starts.

    Written for speed: gguf's ``GGUFReader`` maps every token of the vocabulary into numpy
    views, which takes seconds; listing models should not.
    """
    import gguf

    vt = gguf.GGUFValueType
    scalar = {
        vt.UINT8: "<B",
        vt.INT8: "<b",
        vt.UINT16: "<H",
        vt.INT16: "<h",
        vt.UINT32: "<I",
        vt.INT32: "<i",
        vt.FLOAT32: "<f",
        vt.BOOL: "<?",
        vt.UINT64: "<Q",
        vt.INT64: "<q",
        vt.FLOAT64: "<d",
    }
    with p.open("rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # only the header is read
    pos = 4

    def take(fmt: str) -> Any:
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = take("<Q")
        raw = data[pos : pos + n]
        if len(raw) < n:
            raise EOFError("header ends early")
        pos += n
        return raw.decode("utf-8", "replace")

    def value(kind: int) -> Any:
        nonlocal pos
        kind = vt(kind)
        if kind == vt.STRING:
            return string()
        if kind == vt.ARRAY:
            item, count = vt(take("<I")), take("<Q")
            if item in scalar:
                pos += struct.calcsize(scalar[item]) * count
            else:
                for _ in range(count):
                    value(item)
            return count
        return take(scalar[kind])

    version = take("<I")
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        ttype, offset = take("<I"), take("<Q")
        n = 1
        for d in dims:
            n *= d
        kind = gguf.GGMLQuantizationType(ttype)
        block, type_size = gguf.GGML_QUANT_SIZES[kind]
        tensors.append(Tensor(name, n, n // block * type_size, offset, tuple(dims), kind.name))
    align = int(meta.get("general.alignment", 32))
    data.close()
    return meta, tensors, (pos + align - 1) // align * align


def _quantization(file_type: Any) -> str:
    import gguf

    try:
        return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
    except ValueError:
        return "unknown" if file_type is None else f"type {file_type}"


def read_header(
    path: str | Path, what: str = "model", size: int | None = None
) -> tuple[dict[str, Any], list[Tensor], int]:
    """The metadata and tensor table of the GGUF file at ``path`` and its size, once it is a
    GGUF file whose data is all there (:class:`BadModelFile` says why not, calling it a
    ``what`` file); nothing is checked of what it holds. ``size``: the whole file's, when
    ``path`` is only its first part (a file assembled from parts, not yet assembled)."""
    p = Path(path)
    if not p.exists():
        raise BadModelFile(f"{p}: no such file", "no such file")
    if not p.is_file():
        raise BadModelFile(f"{p}: not a file", "not a file")
    size = size or p.stat().st_size
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise _bad(p, f"not a GGUF {what} file (it does not start with 'GGUF')")
    import gguf  # noqa: F401 - loaded first: a failure to load it is not the file's fault

    try:
        meta, tensors, data_start = _parse_gguf(p)
    except (struct.error, EOFError) as exc:
        raise _bad(p, f"truncated: the file ends inside its header ({_mb(size)})") from exc
    except Exception as exc:  # noqa: BLE001 - unicode and enum errors alike
        raise _bad(p, f"damaged GGUF header ({exc})") from None
    end = max((data_start + t.offset + t.nbytes for t in tensors), default=0)
    if end > size:
        raise _bad(p, f"truncated: {_mb(size)} of {_mb(end)} expected")
    return meta, tensors, size


def read_gguf_info(path: str | Path, size: int | None = None) -> GGUFHeader:
    """Architecture, parameter count, quantization, context length and chat template of a
    GGUF file (``size``: see :func:`read_header`); :class:`BadModelFile` when it cannot be a
    working model."""
    p = Path(path)
    meta, tensors, size = read_header(p, size=size)
    if not tensors:
        raise _bad(p, "damaged GGUF file (it holds no tensors)")
    arch = meta.get("general.architecture") or "unknown"
    if arch not in _known_architectures():
        raise _bad(p, f"architecture {arch!r} is not supported by llama.cpp")
    return GGUFHeader(
        architecture=arch,
        parameters=sum(t.elements for t in tensors),
        quantization=_quantization(meta.get("general.file_type")),
        context_length=int(meta.get(f"{arch}.context_length") or 0),
        chat_template=bool(meta.get("tokenizer.chat_template")),
        file_size=size,
        model_name=str(meta.get("general.name") or ""),
    )


_CACHE: dict[tuple[str, int, float, int | None], GGUFHeader] = {}


def cached_info(path: str | Path, size: int | None = None) -> GGUFHeader:
    """:func:`read_gguf_info` (``size``: see :func:`read_header`), read once per version of
    the file."""
    p = Path(path)
    st = p.stat() if p.exists() else None
    key = (str(p), st.st_size if st else -1, st.st_mtime if st else -1, size)
    if key not in _CACHE:
        _CACHE[key] = read_gguf_info(p, size)
    return _CACHE[key]
