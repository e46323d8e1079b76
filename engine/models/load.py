"""How a model is loaded: :class:`LoadSettings`, one object from the command line, the app or
an experiment down to the pool, stored with each run.

Every field left ``None`` means "the default": a context of :data:`DEFAULT_CONTEXT` tokens
(which an exam run sizes to its prompts, :func:`sized_context`), the physical cores' threads, the
GPU layers that fit the GPU's free memory (none when the ``gpu`` setting is ``cpu``), as many slots
as the memory holds (:mod:`engine.models.slots`), and flash attention as the ``flash_attn`` setting
says. The pool keeps one loaded model per name and load settings, so two runs of one process with
different settings each get theirs.

>>> LoadSettings(n_ctx=8192, slots=2).as_dict()
{'n_ctx': 8192, 'slots': 2}
>>> LoadSettings.from_dict({"n_ctx": 8192}) == LoadSettings(n_ctx=8192)
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import UserError

#: The context a model is loaded with when its settings do not say (tokens).
DEFAULT_CONTEXT = 4096
#: The most slots a user may ask for.
MAX_SLOTS = 64
#: A sized context is a multiple of this many tokens.
CONTEXT_STEP = 256


class LoadSettingsError(UserError, ValueError):
    """Load settings out of range: the message is one line."""


@dataclass(frozen=True)
class LoadSettings:
    """How a local model is loaded (``None``: the default, see the module docstring).
    A served model's server decides for itself and ignores them."""

    n_ctx: int | None = None  # tokens of context each slot holds
    threads: int | None = None  # CPU threads
    gpu_layers: int | None = None  # layers on the GPU: 0 the CPU only, -1 all
    slots: int | None = None  # sequences decoded at once
    flash_attn: bool | None = None  # llama.cpp's flash attention

    def __post_init__(self) -> None:
        checks = {
            "n_ctx": (1, None),
            "threads": (1, None),
            "gpu_layers": (-1, None),
            "slots": (1, MAX_SLOTS),
        }
        for name, (low, high) in checks.items():
            value = getattr(self, name)
            if value is None:
                continue
            bad = isinstance(value, bool) or not isinstance(value, int)
            if bad or value < low or (high is not None and value > high):
                upper = f" to {high}" if high is not None else " or more"
                raise LoadSettingsError(
                    f"{name} must be a whole number of {low}{upper}, not {value!r}"
                )
        if self.flash_attn is not None and not isinstance(self.flash_attn, bool):
            raise LoadSettingsError(f"flash_attn must be true or false, not {self.flash_attn!r}")

    def as_dict(self) -> dict[str, Any]:
        """The fields that are set (what a run stores as its ``load`` setting)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, given: dict[str, Any] | None) -> LoadSettings:
        """Load settings as :meth:`as_dict` wrote them; unknown keys refused in one line."""
        given = dict(given or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise LoadSettingsError(
                f"unknown load setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return cls(**given)

    def over(self, base: LoadSettings) -> LoadSettings:
        """These settings where set, ``base``'s elsewhere."""
        return dataclasses.replace(base, **self.as_dict())

    def kwargs(self) -> dict[str, Any]:
        """What a backend opens a model with (:class:`engine.models.local.LocalModel`'s
        keywords): the context (the default when unset) and each setting that is set."""
        names = {"threads": "n_threads", "gpu_layers": "n_gpu_layers"}
        found = {names.get(k, k): v for k, v in self.as_dict().items()}
        return {"n_ctx": DEFAULT_CONTEXT, **found}

    @property
    def context(self) -> int:
        """The context a model loads with: ``n_ctx``, else :data:`DEFAULT_CONTEXT`."""
        return self.n_ctx or DEFAULT_CONTEXT


def sized_context(
    prompt_tokens: Sequence[int], reply: int, trained: int, least: int = DEFAULT_CONTEXT
) -> int | str:
    """The context a run's model loads with to hold its prompts (their lengths in tokens)
    and the reply's ``reply`` tokens after each: ``least`` when that holds the longest (runs
    that fit the default keep it, and their numbers), else the need rounded up to a multiple
    of :data:`CONTEXT_STEP`, at most the model's ``trained`` context (GGUF
    ``<arch>.context_length``; 0: unknown, no bound), where the prompts longer than that are
    skipped one by one. When not even the shortest prompt fits: why, in one line.

    >>> sized_context([3000, 4380], 512, 8192)
    5120
    >>> sized_context([900, 1200], 512, 8192)
    4096
    >>> sized_context([9000], 512, 8192)  # doctest: +NORMALIZE_WHITESPACE
    "the shortest prompt takes 9000 tokens and the reply 512, more than the model's trained
    context of 8192"
    """
    if not prompt_tokens:
        return least
    need = max(prompt_tokens) + reply
    if need <= least:
        return least
    bound = max(trained, least) if trained > 0 else 0
    shortest = min(prompt_tokens)
    if bound and shortest + reply > bound:
        return (
            f"the shortest prompt takes {shortest} tokens and the reply {reply}, more than "
            f"the model's trained context of {trained}"
        )
    size = -(-need // CONTEXT_STEP) * CONTEXT_STEP
    return min(size, bound) if bound else size
