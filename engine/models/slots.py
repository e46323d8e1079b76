"""Slots: how many sequences a local model decodes at once, decided when it loads.

llama.cpp decodes several sequences in one batch for little more than the cost of one (a
batch reads the weights once for all its sequences), but each sequence (a *slot*) needs a
KV cache of its own: f16 keys and values of every layer for the ``n_ctx`` tokens its context
holds, ``n_ctx × layers × kv_heads × (key_length + value_length) × 2`` bytes, read from the
GGUF header (:class:`KVShape`). So a model gets as many slots as the memory its KV caches
would take holds, up to a cap:

* on the CPU (and a model only partly on a GPU), the machine's available memory less the
  weights and :data:`RAM_MARGIN`, at most :data:`CPU_CAP` (8): a CPU batch still computes
  every sequence, so the gain flattens there (llama.cpp's own server on a 2-core machine:
  1.7–2× at 8 sequences), while each slot more only adds memory and latency;
* with every layer on the GPU, the devices' free memory less the weights and
  :data:`engine.models.gpu.MARGIN` each, at most :data:`GPU_CAP` (16): a GPU keeps gaining up
  to there (llama.cpp's batched-bench: 5.8× at 16 sequences on a 7B model), and a run rarely
  keeps more items in flight.

A number set by the user (the load settings' ``slots``, :class:`engine.models.load.LoadSettings`:
``--slots N``, the app's Models panel) is taken as it is when it fits, reduced to what fits
otherwise (said in the note); when not even one slot fits, the model is refused in one line (lower
its context).

>>> decide("SmolLM2-135M-Instruct.Q4_1.gguf", ModelSettings().resolved()).note  # doctest: +SKIP
'8 slots (the most on a CPU), 90 MiB of KV cache each for 4,096 tokens; 21.7 GiB free for them
in RAM'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.models.gguf import KVShape
from engine.models.protocol import ModelError

if TYPE_CHECKING:
    from engine.models.gpu import Device

CPU_CAP = 8  # slots at most on a CPU (see the module docstring)
GPU_CAP = 16  # slots at most with every layer on a GPU
RAM_MARGIN = 512 << 20  # memory left to the rest of the machine


class SlotSettings(Protocol):
    """What the slots depend on of a load's settings: those of
    :class:`engine.models.hardware.ModelSettings`, which asks this module for its slots."""

    @property
    def n_ctx(self) -> int: ...
    @property
    def n_gpu_layers(self) -> int | None: ...
    @property
    def slots(self) -> int | None: ...


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


@functools.cache
def _shape(path: str, size: int, mtime: float) -> KVShape:
    from engine.models.gguf import _parse_gguf

    meta, _, _ = _parse_gguf(Path(path))
    return KVShape.from_meta(meta)


def kv_shape(path: str | Path) -> KVShape:
    """The KV shape of the GGUF file at ``path`` (its header read once per version)."""
    st = Path(path).stat()
    return _shape(str(path), st.st_size, st.st_mtime)


@dataclass(frozen=True)
class Slots:
    """How many slots a model gets (0: not even one fits), and why in one line."""

    slots: int
    slot_bytes: int  # one slot's KV cache
    note: str
    reduced: bool = False  # fewer than were set, for want of memory

    def checked(self) -> int:
        """The slots; :class:`ModelError` with the note when not even one fits."""
        if self.slots < 1:
            raise ModelError(self.note)
        return self.slots

    def as_dict(self) -> dict[str, Any]:
        return {"slots": self.slots, "slot_memory": self.slot_bytes, "slots_note": self.note}


def fit_slots(
    slot_bytes: int,
    room: int,
    *,
    cap: int,
    requested: int | None = None,
    where: str = "RAM",
    n_ctx: int = 0,
) -> Slots:
    """The slots of ``slot_bytes`` each that ``room`` bytes free in ``where`` (RAM, or the
    GPU's name) hold: all ``requested`` when they fit, else as many as fit (the note says
    it was reduced); without ``requested``, as many as fit up to ``cap``. 0 when not even
    one fits."""
    fits = max(0, room) // max(1, slot_bytes)
    each = f"{_size(slot_bytes)} of KV cache each" + (f" for {n_ctx:,} tokens" if n_ctx else "")
    free = f"{_size(max(0, room))} free for them in {where}"
    if fits < 1:
        return Slots(0, slot_bytes, (
            f"not even one slot fits: its KV cache ({_size(slot_bytes)}"
            + (f" for {n_ctx:,} tokens" if n_ctx else "")
            + f") is more than the {_size(max(0, room))} free in {where}; lower the context"
        ))  # fmt: skip
    if requested is not None:
        if fits >= requested:
            return Slots(requested, slot_bytes, f"{requested} slots as set, {each}; {free}")
        note = f"{requested} slots set but only {fits} fit ({each}; {free}): {fits} slots"
        return Slots(fits, slot_bytes, note, reduced=True)
    if fits >= cap:
        most = "the most on a CPU" if where == "RAM" else "the most on a GPU"
        return Slots(cap, slot_bytes, f"{cap} slots ({most}), {each}; {free}")
    return Slots(fits, slot_bytes, f"{fits} slots: as many as fit ({each}; {free})")


_told: list[Callable[[str], None]] = []  # who hears of slots reduced at load


def tell_reduced(listener: Callable[[str], None]) -> None:
    """Have ``listener`` called with one line whenever a model loads with fewer slots than
    were set (the command line prints it as a warning)."""
    if listener not in _told:
        _told.append(listener)


def for_load(path: str | Path, settings: SlotSettings) -> Slots:
    """:func:`decide` for a model about to load: a reduction is told to the listeners of
    :func:`tell_reduced`."""
    found = decide(path, settings)
    if found.reduced:
        for listener in list(_told):
            listener(f"{Path(path).name}: {found.note}")
    return found


def available_ram() -> int:
    """Memory the machine can still give without swapping, in bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


def decide(
    path: str | Path,
    settings: SlotSettings,
    ram: int | None = None,
    found: Sequence[Device] | None = None,
) -> Slots:
    """The slots of the GGUF file at ``path`` loaded with ``settings`` (resolved: its GPU
    layers known or automatic), from its header and the free memory: ``ram`` bytes of
    available memory (default: this machine's), the GPUs ``found`` (default: those a model
    would use, none when the settings keep it on the CPU)."""
    from engine.models import gpu
    from engine.models.gguf import cached_info

    cached_info(path)  # a file that is not a model: one line (BadModelFile)
    shape = kv_shape(path)
    one = shape.slot_bytes(settings.n_ctx)
    requested = settings.slots
    if found is None:
        found = [] if settings.n_gpu_layers == 0 else gpu.devices()
    if found and settings.n_gpu_layers != 0:
        plan = gpu.plan(path, settings.n_ctx, found, settings.n_gpu_layers)
        if plan.layers and plan.layers >= plan.offloadable:  # all on the GPU: its memory
            room = sum(d.free for d in found) - gpu.MARGIN * len(found) - (plan.device_bytes - one)
            where = " + ".join(d.description for d in found)
            return fit_slots(one, room, cap=GPU_CAP, requested=requested, where=where,
                             n_ctx=settings.n_ctx)  # fmt: skip
    weights = Path(path).stat().st_size
    room = (available_ram() if ram is None else ram) - weights - RAM_MARGIN
    return fit_slots(one, room, cap=CPU_CAP, requested=requested, where="RAM", n_ctx=settings.n_ctx)
