"""GPU offload: the devices llama.cpp can offload to, how many layers of a model fit their
free memory, and what llama.cpp did when it loaded a model.

:func:`devices` asks ggml which GPUs the installed llama-cpp-python build sees (Vulkan,
CUDA, Metal…), as llama.cpp itself picks them: discrete GPUs, else the integrated ones.
:func:`plan` counts how many of a model's layers fit their free memory, from the GGUF
header (each layer's weights and its share of the KV cache) with :data:`MARGIN` left free
for the compute buffers. :class:`LoadLog` reads llama.cpp's load log: the layers it
offloaded and the memory its buffers took on the device.

A model loaded with ``n_gpu_layers=N`` has its output layer and its last ``N - 1`` repeating
layers on the device (llama.cpp's order); one more than it has repeating layers
(:attr:`Plan.offloadable`) offloads them all.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARGIN = 1 << 30  # device memory left free for compute buffers (llama.cpp's own fit leaves 1 GiB)

_GPU, _IGPU = 1, 2  # enum ggml_backend_dev_type


@dataclass(frozen=True)
class Device:
    """A GPU llama.cpp can offload to."""

    name: str  # ggml's name for it: Vulkan0, CUDA0, MTL0…
    description: str  # the card, as its driver names it
    integrated: bool  # an integrated GPU, sharing the system's memory
    free: int  # bytes
    total: int

    def label(self) -> str:
        return f"{self.description} ({self.name}, {_mib(self.free)} free)"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


@functools.cache
def _ggml() -> Any:
    """llama-cpp-python's libggml with the device functions typed (None: not installed).
    Its back ends are started here, once, their log kept out of the terminal (each says
    what it found: the devices, or none)."""
    try:
        from llama_cpp import _ggml
    except ImportError:
        return None
    lib = _ggml.libggml
    ptr, size = ctypes.c_void_p, ctypes.c_size_t
    lib.ggml_backend_dev_count.restype = size
    lib.ggml_backend_dev_get.argtypes, lib.ggml_backend_dev_get.restype = [size], ptr
    for name in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, name).argtypes, getattr(lib, name).restype = [ptr], ctypes.c_char_p
    lib.ggml_backend_dev_type.argtypes, lib.ggml_backend_dev_type.restype = [ptr], ctypes.c_int
    lib.ggml_backend_dev_memory.argtypes = [ptr, ctypes.POINTER(size), ctypes.POINTER(size)]
    lib.ggml_backend_dev_memory.restype = None
    with LoadLog().capture():
        lib.ggml_backend_dev_count()  # the first call starts the back ends
    return lib


def started() -> Any:
    """Start llama.cpp's back ends quietly, once (None: llama-cpp-python is not installed);
    call before anything of llama.cpp that looks at the devices."""
    return _ggml()


# The GPU back ends a llama-cpp-python build may have, by the name of their library.
BUILT = {"vulkan": "Vulkan", "cuda": "CUDA", "metal": "Metal", "hip": "HIP", "sycl": "SYCL"}


def built_backends() -> list[str]:
    """The GPU back ends this build was built with, whether or not they started (a Vulkan
    back end without any Vulkan driver on the machine does not)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return []
    names = {p.name.lower() for p in (Path(spec.origin).parent / "lib").glob("*ggml-*")}
    return [label for key, label in BUILT.items() if any(f"ggml-{key}" in n for n in names)]


def devices() -> list[Device]:
    """The GPUs a model loaded now would use, with their free memory: every discrete GPU,
    or, when there is none, the integrated ones. Empty without a GPU, or with a CPU-only
    build of llama-cpp-python."""
    lib = _ggml()
    if lib is None:
        return []
    found: dict[int, list[Device]] = {_GPU: [], _IGPU: []}
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        kind = lib.ggml_backend_dev_type(dev)
        if kind not in found:
            continue
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        name = lib.ggml_backend_dev_name(dev).decode("utf-8", "replace")
        description = lib.ggml_backend_dev_description(dev).decode("utf-8", "replace")
        found[kind].append(Device(name, description, kind == _IGPU, free.value, total.value))
    return found[_GPU] or found[_IGPU]


# Where a model goes, as :meth:`Plan.as_dict` (planned) and :func:`outcome` (done) say it.
PLACEMENT = ("device", "gpu_layers", "layers", "gpu_memory", "gpu_note")


@dataclass(frozen=True)
class Plan:
    """How a model loads: ``layers`` is its ``n_gpu_layers`` (0: all on the CPU)."""

    layers: int
    offloadable: int  # the repeating layers and the output layer
    device_bytes: int  # estimated memory the offloaded layers take on the devices
    devices: tuple[Device, ...] = ()
    note: str = ""  # one line: where the model runs and why

    @property
    def where(self) -> str:
        return " + ".join(d.description for d in self.devices) or "CPU"

    def as_dict(self) -> dict[str, Any]:
        """The keys :func:`outcome` has, the memory estimated."""
        return {
            "device": self.where if self.layers else "CPU",
            "gpu_layers": self.layers,
            "layers": self.offloadable,
            "gpu_memory": self.device_bytes,
            "gpu_note": self.note,
        }


def layer_bytes(path: str | Path, n_ctx: int) -> tuple[list[int], int]:
    """Each repeating layer's weights and KV cache (f16, ``n_ctx`` tokens), in bytes, and
    the output layer's weights, read from the GGUF header."""
    from engine.models.gguf import KVShape, _parse_gguf

    meta, tensors, _ = _parse_gguf(Path(path))
    arch = meta.get("general.architecture", "")
    n_layer = int(meta.get(f"{arch}.block_count") or 0)
    sizes = [0] * n_layer
    output = 0
    for name, _, nbytes, *_ in tensors:
        found = re.match(r"blk\.(\d+)\.", name)
        if found and int(found.group(1)) < n_layer:
            sizes[int(found.group(1))] += nbytes
        elif name.startswith("output"):
            output += nbytes
    if not any(n.startswith("output.") for n, *_ in tensors):  # tied to the token embedding
        output += next((b for n, _, b, *_ in tensors if n == "token_embd.weight"), 0)
    shape = KVShape.from_meta(meta)
    kv = shape.slot_bytes(n_ctx) // max(1, shape.layers)
    return [s + kv for s in sizes], output


def plan(
    path: str | Path,
    n_ctx: int,
    found: Sequence[Device] | None = None,
    layers: int | None = None,
) -> Plan:
    """As many of the model's layers as fit the free memory of ``found`` (default: the
    :func:`devices` of this machine) less :data:`MARGIN` each, in llama.cpp's order; or
    ``layers`` of them when given (-1: all), with the memory they would take."""
    found = devices() if found is None else list(found)
    sizes, output = layer_bytes(path, n_ctx)
    offloadable = len(sizes) + 1
    if not found:
        return Plan(0, offloadable, 0, (), no_device_note())
    room = sum(d.free for d in found) - MARGIN * len(found)
    wanted = offloadable if layers is None or layers < 0 else min(layers, offloadable)
    used, n = 0, 0
    for size in [output, *reversed(sizes)][:wanted]:  # k layers: the output one, the last k-1
        if layers is None and used + size > room:
            break
        used += size
        n += 1
    where = Plan(0, 0, 0, tuple(found)).where
    if n == 0:
        why = "GPU layers set to 0" if layers == 0 else f"it does not fit the memory of {where}"
        return Plan(0, offloadable, 0, tuple(found), f"{why}: the model runs on the CPU")
    return Plan(n, offloadable, used, tuple(found), f"{n}/{offloadable} layers on {where}")


def backends() -> list[str]:
    """The GPU backends this build of llama-cpp-python has (Vulkan, CUDA, Metal…)."""
    lib = _ggml()
    if lib is None:
        return []
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_reg_get.restype = ctypes.c_void_p
    lib.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_name.restype = ctypes.c_char_p
    names = (
        lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(i))
        for i in range(lib.ggml_backend_reg_count())
    )
    return [n.decode() for n in names if n not in (b"CPU", b"BLAS", b"RPC")]


def no_device_note() -> str:
    """Why models run on the CPU when :func:`devices` finds none, in one line."""
    found = backends()
    if found:
        return f"no GPU found by {', '.join(found)}: models run on the CPU"
    built = built_backends()
    if built:
        return f"{', '.join(built)} found no GPU driver here: models run on the CPU"
    return "this build of llama.cpp has no GPU backend: models run on the CPU"


# -- what llama.cpp did ------------------------------------------------------------------

_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_BUFFER = re.compile(r"^\S+:\s+(\S+)\s+(?:model|KV|compute|RS|output) buffer size =\s+([\d.]+) MiB")


@dataclass
class LoadLog:
    """llama.cpp's log while a model loads, read for what it did with the devices.

    >>> log = LoadLog()                                                  # doctest: +SKIP
    >>> with log.capture():                                              # doctest: +SKIP
    ...     llm = llama_cpp.Llama(model_path=path, n_gpu_layers=-1, verbose=False)
    >>> log.offloaded, log.device_bytes(["Vulkan0"])                     # doctest: +SKIP
    """

    lines: list[str] = field(default_factory=list)
    on_line: Callable[[str], None] | None = None  # told each line as it comes

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Collect the log lines (llama-cpp-python's own logger gets them afterwards)."""
        import llama_cpp
        from llama_cpp import _logger

        pending: list[str] = []

        @llama_cpp.llama_log_callback
        def collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            piece = text.decode("utf-8", "replace")
            pending.append(piece)
            if piece.endswith("\n"):
                self.lines.append("".join(pending).rstrip("\n"))
                pending.clear()
                if self.on_line is not None:
                    self.on_line(self.lines[-1])

        llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
        try:
            yield
        finally:
            llama_cpp.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))

    @property
    def offloaded(self) -> tuple[int, int] | None:
        """(layers offloaded, layers the model has), as llama.cpp said it."""
        for line in self.lines:
            found = _OFFLOADED.search(line)
            if found:
                return int(found.group(1)), int(found.group(2))
        return None

    def device_bytes(self, names: Sequence[str]) -> int:
        """Bytes of the model's buffers (weights, KV cache, compute) on the devices
        ``names`` (Vulkan0, CUDA0…)."""
        total = 0.0
        for line in self.lines:
            found = _BUFFER.match(line.strip())
            if found and found.group(1) in names:
                total += float(found.group(2)) * 2**20
        return int(total)


def outcome(log: LoadLog, layers: int, note: str = "") -> dict[str, Any]:
    """Where a model's layers went, from its load log, with the keys of
    :meth:`Plan.as_dict`: ``gpu_layers`` offloaded of ``layers``, the ``device`` ("CPU" when
    none), ``gpu_memory`` (bytes of its buffers there) and ``gpu_note``, one line (``note``
    when the model runs on the CPU)."""
    done = (log.offloaded or (0, layers))[0]
    found = tuple(devices()) if done else ()
    if not found:
        if not note:
            note = no_device_note() if not devices() else "GPU layers set to 0: it runs on the CPU"
        return Plan(0, layers, 0, (), note).as_dict()
    used = log.device_bytes([d.name for d in found])
    where = Plan(0, 0, 0, found).where
    return Plan(done, layers, used, found, f"{done}/{layers} layers on {where}").as_dict()
