"""Model backends: how a kind of model is opened, what it takes of this machine and what it
can do, registered by name.

Each backend is one module of this package that registers a :class:`Backend` when it is
imported:

* ``gguf`` (:mod:`engine.models.local`): a GGUF file run by llama.cpp in a process of its own;
* ``openai`` (:mod:`engine.models.served`): a model behind an OpenAI-compatible server;
* ``scripted`` (:mod:`engine.models.scripted`): a model that follows a script, for tests.

The catalog describes each model it finds with its backend's kind of :class:`ModelInfo`, and
the pool opens it and sizes it through its backend. Nothing outside this package asks which
backend a model is: code that must know what a model can do reads its
:class:`Capabilities` (``model.capabilities``), and :func:`default_concurrency` says how many
requests the models of a run take at once.

A new backend is one more module here that calls ``register("backend", Backend(...))``
(:func:`engine.registry.register`) and is named in :data:`engine.registry.BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from engine.models.protocol import Capabilities
from engine.registry import entries, get

if TYPE_CHECKING:
    from engine.models.load import LoadSettings

__all__ = ["Backend", "Capabilities", "ModelInfo", "backend", "backends", "default_concurrency"]


class HasCapabilities(Protocol):
    @property
    def capabilities(self) -> Capabilities: ...


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What the catalog knows of a model before it is opened. Each backend describes its
    models with a subclass of its own (a GGUF file's header, a server's address…)."""

    backend: ClassVar[str]
    #: Whether the model runs elsewhere, so that :meth:`check` asks whether it answers now.
    remote: ClassVar[bool] = False

    name: str
    origin: str  # "embedded", "folder", "added" (remembered by the catalog) or "file"
    description: str = ""

    @property
    def location(self) -> str:
        """Where the model is: a file's path, a server's address."""
        raise NotImplementedError

    @property
    def removable(self) -> bool:
        """Whether the catalog may forget it (an added model)."""
        return self.origin == "added"

    def summary(self, long: bool = False) -> str:
        """One line for a list of models ("135M · Q4_1 · chat"); ``long``: with more of its
        facts, for a terminal ("llama · 135M · Q4_1 · chat · 8,192 ctx · 94 MiB")."""
        raise NotImplementedError

    def rows(self) -> list[tuple[str, str]]:
        """Its details for a person, as (label, value) rows."""
        raise NotImplementedError

    def check(self) -> dict[str, Any]:
        """Whether it answers now: ``{"answers", "models", "error"}`` (a model that is not
        :attr:`remote` answers whenever it is loaded)."""
        return {"answers": True, "models": [self.name], "error": ""}

    def placement(self, load: LoadSettings | None = None) -> dict[str, Any]:
        """Where it would run if loaded now with ``load``: ``{"device", "gpu_layers",
        "layers", "gpu_memory", "gpu_note"}``; empty when that is not this machine's to say
        (a served model)."""
        return {}

    def slots(self, load: LoadSettings | None = None) -> dict[str, Any]:
        """How many sequences it would decode at once if loaded now with ``load``, and
        why: ``{"slots", "slot_memory", "slots_note"}`` (:mod:`engine.models.slots`); empty
        when that is not this machine's to say (a served model)."""
        return {}

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, **asdict(self)}


@dataclass(frozen=True)
class Backend:
    """One kind of model.

    ``open(info, settings)`` gives a :class:`~engine.models.protocol.ChatModel` (``settings``:
    the keywords of the lease's load settings, :meth:`engine.models.load.LoadSettings.kwargs`,
    ``n_ctx``, ``n_threads``…, which a backend may ignore);
    ``footprint(info)`` the memory it takes on this machine, in bytes; ``capabilities(model)``
    what an opened model can do; ``from_entry(name, entry)`` reads a model the catalog
    remembered (``models.json``) back into its :class:`ModelInfo`.
    """

    name: str
    open: Callable[[Any, dict[str, Any]], Any]
    footprint: Callable[[Any], int]
    capabilities: Callable[[Any], Capabilities]
    from_entry: Callable[[str, dict[str, Any]], ModelInfo] | None = None


def backends() -> dict[str, Backend]:
    """Every registered backend, by name (the built-in modules imported first)."""
    return entries("backend")


def backend(name: str) -> Backend:
    """The backend called ``name``; :class:`~engine.models.protocol.ModelError` when there is
    none."""
    found: Backend = get("backend", name)
    return found


def default_concurrency(models: Iterable[HasCapabilities]) -> int:
    """Items in flight when the caller does not say: the fewest requests any of ``models``
    takes well (a local model's slots, :mod:`engine.models.slots`; eight for a served
    one); one without models."""
    return min((m.capabilities.concurrency for m in models), default=1)
