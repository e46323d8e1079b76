"""What a model may use of this machine: its cores (physical ones, those this process may
run on) and whether llama.cpp can offload to a GPU; and :class:`ModelSettings`, how a model is
loaded once this machine decided what its load settings
(:class:`engine.models.load.LoadSettings`) leave open.

GPU layers: the load settings' (``--gpu-layers``); 0 when the ``gpu`` setting is ``cpu`` or
the build cannot offload; else ``None``, and the model process offloads the layers that fit
the GPU's free memory when it loads the model (:func:`engine.models.gpu.plan`).

Slots (sequences the model process decodes at once): the load settings' (``--slots``); else
as many as the memory left for their KV caches holds, up to a cap (:mod:`engine.models.slots`).
:meth:`ModelSettings.for_model` decides them, in the parent, before the model process starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.models.gpu import Plan
    from engine.models.load import LoadSettings


@dataclass
class ModelSettings:
    """How a model is loaded. ``None`` means: decide from this machine."""

    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int | None = None
    n_batch: int = 512
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: Sequences decoded at once, each with a context of ``n_ctx`` tokens (None: decide).
    slots: int | None = None
    slots_note: str = ""  # why that many, in one line (:meth:`for_model`)
    #: llama.cpp's flash attention (None: the ``flash_attn`` setting, off by default).
    flash_attn: bool | None = None

    @classmethod
    def of(cls, load: LoadSettings | None) -> ModelSettings:
        """The settings of a model loaded with ``load`` (None: the defaults)."""
        from engine.models.load import LoadSettings

        return cls(**(load or LoadSettings()).kwargs())

    def resolved(self) -> ModelSettings:
        """Threads decided; GPU layers decided unless the model process is to fit them to
        the GPU's free memory (``None``)."""
        threads = self.n_threads or physical_cores()
        layers = self.n_gpu_layers
        if layers is None and (cpu_forced() or not gpu_offload_supported()):
            layers = 0
        flash = self.flash_attn
        if flash is None:
            flash = _flash_setting() == "on"
        return dataclasses.replace(self, n_threads=threads, n_gpu_layers=layers, flash_attn=flash)

    def for_model(self, path: str | Path) -> ModelSettings:
        """:meth:`resolved`, with the slots decided for the GGUF file at ``path``: an int
        of at least 1, and ``slots_note`` saying why (:func:`engine.models.slots.for_load`).
        :class:`~engine.models.protocol.ModelError` when not even one slot fits."""
        from engine.models.slots import for_load

        s = self.resolved()
        found = for_load(path, s)
        return dataclasses.replace(s, slots=found.checked(), slots_note=found.note)


def _flash_setting() -> str:
    from engine import settings

    return str(settings.get("flash_attn"))


def cpu_forced() -> bool:
    """Whether the ``gpu`` setting keeps local models on the CPU."""
    from engine import settings

    return settings.get("gpu") == "cpu"


def available_cores() -> int:
    """Cores this process may run on (llama.cpp's own default is half of them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def physical_cores() -> int:
    """Physical cores this process may run on: the default thread count of a model.

    Hyperthread siblings count once (llama.cpp gains nothing from them, and its threads
    spin-wait: more threads than cores collapse throughput), and only the CPUs of this
    process's affinity mask count. Sources, the smallest wins: the sibling sets of the
    allowed CPUs (Linux sysfs, else ``/proc/cpuinfo``), ``psutil`` when installed, and
    the allowed logical CPUs themselves.
    """
    counts = [available_cores()]
    topology = _linux_cores(_allowed_cpus())
    if topology:
        counts.append(topology)
    try:
        import psutil
    except ImportError:
        pass
    else:
        counts.append(psutil.cpu_count(logical=False) or counts[0])
    return max(1, min(counts))


def _allowed_cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return set(range(os.cpu_count() or 1))


def _linux_cores(cpus: set[int]) -> int | None:
    """How many physical cores the logical CPUs ``cpus`` belong to (None: unknown)."""
    cores: set[str] = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        for name in ("core_cpus_list", "thread_siblings_list"):
            with contextlib.suppress(OSError):
                cores.add((topology / name).read_text().strip())
                break
        else:
            return _cpuinfo_cores(cpus)
    return len(cores) or None


def _cpuinfo_cores(cpus: set[int]) -> int | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    cores: set[tuple[str, str]] = set()
    for block in text.split("\n\n"):
        pairs = (line.partition(":") for line in block.splitlines())
        fields = {k.strip(): v.strip() for k, _, v in pairs}
        if "core id" in fields and int(fields.get("processor", -1)) in cpus:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def gpu_offload_supported() -> bool:
    """Whether the installed llama-cpp-python can offload to a GPU: built with Vulkan, CUDA,
    Metal… and such a device present."""
    from engine.models.gpu import started

    if started() is None:  # not installed
        return False
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def placement(path: str | Path, settings: ModelSettings | None = None) -> Plan:
    """Where a local model loaded now with ``settings`` would go (the ``gpu`` setting and
    the GPU layers heeded; memory estimated from its header: :func:`engine.models.gpu.plan`)."""
    from engine.models.gpu import Plan, devices, layer_bytes, plan

    s = (settings or ModelSettings()).resolved()
    if s.n_gpu_layers == 0 and cpu_forced() and devices():
        sizes, _ = layer_bytes(path, s.n_ctx)
        note = "the gpu setting is 'cpu': the model runs on the CPU"
        return Plan(0, len(sizes) + 1, 0, (), note)
    return plan(path, s.n_ctx, layers=s.n_gpu_layers)
