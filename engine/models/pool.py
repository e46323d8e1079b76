"""The model pool: every model the engine uses is leased from here.

* :meth:`ModelPool.lease` gives a model by catalog name (``None``: the default chat model)
  and load settings (:class:`~engine.models.load.LoadSettings`: context, threads, GPU
  layers, slots, flash attention; laid over the pool's own, ``None``: the pool's), loading
  it on first use; a model is one name loaded with one set of load settings, so two runs of
  one process that load the same file differently each get theirs. Leases are
  reference-counted, so a doctor, a patient and a solver may be one model or three
  different ones, all loaded at once.
* Models nobody holds stay loaded for the next lease while they fit under a memory bound
  (``max_bytes``); past it the least recently used idle model is closed. A held model is
  never closed.
* CPU threads: llama.cpp's threads spin while they wait, so two models each using every
  core slow each other down badly. The pool gives each local model that is working right now
  its share of the physical cores (re-shared whenever one starts or finishes a request),
  counting the models working in the other medexam processes of this machine too, and
  leaving out the cores other programs keep busy (:mod:`engine.models.cores`;
  ``machine_wide=False`` or ``MEDEXAM_SHARE_CORES=process``: this pool's models only).
* A model whose process crashed is restarted by the next lease (or :meth:`restart`).

Names are looked up in the catalog (:func:`engine.models.catalog.lookup`: a model given by
its file's path is added to it), or by the
pool's own ``resolve``; each model is opened and sized by its backend
(:mod:`engine.models.backend`), whatever it is: a GGUF file, a served model, a scripted one.

Observers (:meth:`subscribe`) hear of every change, from whatever thread made it; the desktop
app shows the pool through them.

>>> pool = ModelPool()                                             # doctest: +SKIP
>>> with pool.lease("smollm2") as doctor, pool.lease("gemma3-270m") as patient:
...     ...                                                        # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.models.backend import Backend, Capabilities, ModelInfo, backend
from engine.models.cores import SharedCores
from engine.models.load import LoadSettings
from engine.models.protocol import ChatModel, ModelCrashed, ModelError, TextStream
from engine.models.usage import Meter

if TYPE_CHECKING:
    from engine.models.protocol import Generation, Message

Resolver = Callable[[str | None], ModelInfo]
Observer = Callable[["PoolEvent"], None]


@dataclass(frozen=True)
class PoolEvent:
    """Something happened to a pooled model: ``kind`` is loading, ready, failed, crashed,
    unloaded, busy or idle; ``error`` says why for failed and crashed."""

    kind: str
    name: str
    error: str = ""


@dataclass
class _Entry:
    name: str
    info: ModelInfo
    backend: Backend
    load: LoadSettings = field(default_factory=LoadSettings)
    model: Any = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    refs: int = 0
    busy: int = 0
    size: int = 0
    threads_cap: int = 1
    threads: int = 0
    state: str = "unloaded"  # loading, ready, crashed, unloaded
    error: str = ""
    last_used: float = field(default_factory=time.monotonic)
    load_lock: threading.Lock = field(default_factory=threading.Lock)
    load_s: float | None = None  # how long its last load took

    @property
    def key(self) -> str:
        """The model among the pool's: its name, with its load settings when it has any."""
        given = self.load.as_dict()
        return self.name + (f" {given}" if given else "")


def _cores() -> int:
    from engine.models.hardware import physical_cores

    return physical_cores()


def _memory_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def _catalog(name: str | None) -> ModelInfo:
    from engine.models.catalog import lookup

    return lookup(name)


class ModelPool:
    """Loads models by name and lends them out; see the module docstring.

    ``load`` are the load settings of a lease that gives none of its own (default: every
    one left to its default, :mod:`engine.models.load`); ``max_bytes``
    bounds the memory of loaded models kept while idle (default: half of this machine's RAM);
    ``resolve(name)`` describes the model a name stands for (``None``: the default one;
    default: the catalog's lookup); ``machine_wide`` whether the cores are shared with the
    models of other processes (default: unless ``MEDEXAM_SHARE_CORES=process``; its
    ``machine`` attribute, a :class:`~engine.models.cores.SharedCores`, is this pool's side of
    that sharing).
    """

    def __init__(
        self,
        load: LoadSettings | None = None,
        max_bytes: int | None = None,
        cores: int | None = None,
        resolve: Resolver | None = None,
        machine_wide: bool | None = None,
    ) -> None:
        self.load = load or LoadSettings()
        self.resolve: Resolver = resolve or _catalog
        self.max_bytes = max_bytes if max_bytes is not None else _memory_bytes() // 2
        self.cores = cores or _cores()
        self._entries: dict[tuple[str, LoadSettings], _Entry] = {}
        self._lock = threading.RLock()
        self._observers: list[Observer] = []
        self.machine = SharedCores(self._reshare, enabled=machine_wide)

    # -- observers -----------------------------------------------------------------------

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` on every change; returns the function that unsubscribes."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

    def _emit(self, kind: str, name: str, error: str = "") -> None:
        event = PoolEvent(kind, name, error)
        for observer in list(self._observers):
            with contextlib.suppress(Exception):  # an observer's fault is not the pool's
                observer(event)

    # -- leasing -------------------------------------------------------------------------

    def lending(self, load: LoadSettings | None) -> Lending:
        """This pool lending its models loaded with ``load`` (over the pool's own)."""
        return Lending(self, load or LoadSettings())

    def acquire(self, name: str | None = None, load: LoadSettings | None = None) -> PooledModel:
        """A lease of the model called ``name`` loaded with ``load`` laid over the pool's
        load settings (loaded, or restarted after a crash, as needed; this blocks while it
        loads). Release it with ``close()``."""
        info = self.resolve(name or None)
        kind = backend(info.backend)
        settings = load.over(self.load) if load is not None else self.load
        with self._lock:
            entry = self._entries.get((info.name, settings))
            if entry is None:
                entry = _Entry(info.name, info, kind, settings, size=kind.footprint(info))
                self._entries[(info.name, settings)] = entry
            entry.refs += 1
            entry.last_used = time.monotonic()
        try:
            self._ensure_loaded(entry)
        except BaseException:
            self._release(entry)
            raise
        return PooledModel(self, entry)

    @contextlib.contextmanager
    def lease(
        self, name: str | None = None, load: LoadSettings | None = None
    ) -> Iterator[PooledModel]:
        """``with pool.lease(name) as model:`` — :meth:`acquire`, released on exit."""
        model = self.acquire(name, load)
        try:
            yield model
        finally:
            model.close()

    def _ensure_loaded(self, entry: _Entry) -> None:
        with entry.load_lock:
            model = entry.model
            if model is not None and getattr(model, "alive", True):
                return
            self._make_room(entry)
            settings = entry.load.kwargs()
            self._set_state(entry, "loading")
            started = time.perf_counter()
            try:
                if model is not None:
                    model.restart()
                else:
                    entry.model = entry.backend.open(entry.info, settings)
            except BaseException as exc:
                entry.model = None
                self._set_state(entry, "unloaded", str(exc))
                self._emit("failed", entry.name, str(exc))
                raise
            entry.capabilities = entry.backend.capabilities(entry.model)
            entry.threads_cap = int(
                (getattr(entry.model, "info", {}) or {}).get("n_threads") or self.cores
            )
            entry.threads = entry.threads_cap
            entry.load_s = round(time.perf_counter() - started, 3)
            self._set_state(entry, "ready")

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.refs = max(0, entry.refs - 1)
            entry.last_used = time.monotonic()
            self._make_room(None)

    def _set_state(self, entry: _Entry, state: str, error: str = "") -> None:
        entry.state, entry.error = state, error
        self._emit(state, entry.name, error)

    # -- memory ----------------------------------------------------------------------------

    def _make_room(self, coming: _Entry | None) -> None:
        """Close idle models, least recently used first, until ``coming`` fits."""
        with self._lock:
            need = coming.size if coming is not None else 0
            loaded = [e for e in self._entries.values() if e.model is not None and e is not coming]
            used = sum(e.size for e in loaded)
            idle = sorted((e for e in loaded if e.refs == 0), key=lambda e: e.last_used)
            while idle and used + need > self.max_bytes:
                victim = idle.pop(0)
                used -= victim.size
                self._unload(victim)

    def _unload(self, entry: _Entry) -> None:
        model, entry.model = entry.model, None
        if model is not None:
            with contextlib.suppress(Exception):
                model.close()
        self._set_state(entry, "unloaded")

    def unload(self, name: str | None = None) -> None:
        """Close an idle model (``None``: every idle model); a held one stays loaded."""
        with self._lock:
            for entry in list(self._entries.values()):
                if name in (None, entry.name) and entry.refs == 0:
                    self._unload(entry)

    def restart(self, name: str) -> None:
        """Start the process of the model called ``name`` afresh (after a crash, say): of
        each of its loads that crashed, else of each. Blocks while they load."""
        found = [e for e in list(self._entries.values()) if e.name == name]
        if not found:
            raise ModelError(f"{name} is not loaded")
        for entry in [e for e in found if e.state == "crashed"] or found:
            self._restart(entry)

    def _restart(self, entry: _Entry) -> None:
        with entry.load_lock:
            if entry.model is not None:
                with contextlib.suppress(Exception):
                    entry.model.close()
        self._ensure_loaded(entry)

    def close(self) -> None:
        """Close every model, held or not (at exit)."""
        with self._lock:
            for entry in list(self._entries.values()):
                self._unload(entry)
            self._entries.clear()
            self.machine.close()

    # -- CPU threads -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _working(self, entry: _Entry) -> Iterator[None]:
        with self._lock:
            entry.busy += 1
            entry.last_used = time.monotonic()
            if entry.busy == 1 and entry.capabilities.shares_cores:
                self.machine.start(entry.key, getattr(entry.model, "pid", None))
            self._share_cores()
        if entry.busy == 1:
            self._emit("busy", entry.name)
        try:
            with self._watching(entry):
                yield
        finally:
            with self._lock:
                entry.busy -= 1
                if entry.busy == 0:
                    self.machine.stop(entry.key)
                self._share_cores()
            if entry.busy == 0 and entry.state == "ready":
                self._emit("idle", entry.name)

    @contextlib.contextmanager
    def _watching(self, entry: _Entry) -> Iterator[None]:
        """Mark the model crashed when a request finds its process dead."""
        try:
            yield
        except ModelCrashed as exc:
            if entry.state != "crashed":
                self._set_state(entry, "crashed", str(exc))
            raise

    def _share_cores(self) -> None:
        """Give each working local model an equal share of the cores other programs leave
        (at most its own setting) with the models working in other processes; a model
        working alone on a quiet machine gets its whole setting back."""
        working = [
            e
            for e in self._entries.values()
            if e.busy and e.model is not None and e.capabilities.shares_cores
        ]
        if not working:
            return
        share = self.machine.share(self.cores, len(working))
        for e in working:
            want = max(1, min(e.threads_cap, share))
            if want != e.threads:
                e.model.set_threads(want)
                e.threads = want

    def _reshare(self) -> None:
        """The models working elsewhere changed (called by :attr:`machine`'s watcher)."""
        with self._lock:
            self._share_cores()

    # -- what the app shows ------------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """Every model the pool knows: name, load settings, state, leases, whether working,
        threads, size."""
        with self._lock:
            return [
                {
                    "name": e.name,
                    "load": e.load.as_dict(),
                    "state": e.state,
                    "error": e.error,
                    "leases": e.refs,
                    "working": e.busy > 0,
                    "threads": e.threads if e.model is not None else None,
                    "bytes": e.size,
                }
                for e in self._entries.values()
            ]

    def state(self, name: str) -> str:
        """The state of the model called ``name``: of its load with a process, if any."""
        found = [e for e in list(self._entries.values()) if e.name == name]
        running = [e for e in found if e.model is not None or e.state == "loading"]
        return (running or found)[0].state if found else "unloaded"


class Lending:
    """A pool that lends its models loaded with given load settings, laid over the pool's:
    what a run's job leases through (:func:`engine.core.runs.run`), so that the models a run
    loads load as the run says. Anything else is the pool's."""

    def __init__(self, pool: ModelPool, load: LoadSettings) -> None:
        self.pool = pool
        self.load = load.over(pool.load)

    def lending(self, load: LoadSettings | None) -> Lending:
        """This pool lending with ``load`` laid over these load settings."""
        return Lending(self.pool, (load or LoadSettings()).over(self.load))

    def acquire(self, name: str | None = None, load: LoadSettings | None = None) -> PooledModel:
        """:meth:`ModelPool.acquire` with these load settings (``load`` laid over them)."""
        return self.pool.acquire(name, load.over(self.load) if load is not None else self.load)

    lease = ModelPool.lease  # acquire (this lending's), released on exit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


class PooledModel(ChatModel):
    """One lease of a pooled model: the :class:`~engine.models.protocol.ChatModel` API, with
    the pool told when the model works; :meth:`close` ends the lease (the model stays
    loaded for the next one). Its ``meter`` adds up the generations it gave
    (:mod:`engine.models.usage`)."""

    def __init__(self, pool: ModelPool, entry: _Entry) -> None:
        self._pool = pool
        self._entry = entry
        self._released = False
        self.name = entry.name
        self.meter = Meter()

    @property
    def load(self) -> LoadSettings:
        """The load settings the model was loaded with (those left to their default unset)."""
        return self._entry.load

    @property
    def load_seconds(self) -> float | None:
        """How long the model's last load took (seconds)."""
        return self._entry.load_s

    @property
    def _model(self) -> Any:
        model = self._entry.model
        if self._released or model is None:
            raise ModelCrashed(f"{self.name} is not running; restart it")
        return model

    @property
    def info(self) -> dict[str, Any]:  # type: ignore[override]  # a copy: set by its model
        return dict(getattr(self._entry.model, "info", {}) or {})

    @property
    def has_chat_template(self) -> bool:
        return bool(self._model.has_chat_template)

    @property
    def capabilities(self) -> Capabilities:
        """What the model can do (:class:`~engine.models.backend.Capabilities`)."""
        return self._entry.capabilities

    @property
    def model_info(self) -> ModelInfo:
        """What the catalog knows of the model (its backend's description)."""
        return self._entry.info

    @property
    def alive(self) -> bool:
        return bool(getattr(self._entry.model, "alive", False))

    @property
    def path(self) -> str:
        return str(getattr(self._model, "path", ""))

    @property
    def pid(self) -> int | None:
        """The model process's id (a local model's)."""
        return getattr(self._entry.model, "pid", None)

    @property
    def threads(self) -> int | None:
        """The CPU threads in force in the model's process now (a local model's; the
        pool's :meth:`~ModelPool.status` shows the count it asked for)."""
        threads = getattr(self._entry.model, "threads", None)
        return int(threads) if threads is not None else None

    def chat(self, messages: Sequence[Message], **options: Any) -> Generation:
        with self._pool._working(self._entry):
            result = self._model.chat(messages, **options)
        self.meter.add(result)
        return result

    def complete(self, prompt: str, **options: Any) -> Generation:
        with self._pool._working(self._entry):
            result = self._model.complete(prompt, **options)
        self.meter.add(result)
        return result

    def stream_chat(self, messages: Sequence[Message], **options: Any) -> TextStream:
        return _WorkingStream(self, lambda: self._model.stream_chat(messages, **options))

    def stream_complete(self, prompt: str, **options: Any) -> TextStream:
        return _WorkingStream(self, lambda: self._model.stream_complete(prompt, **options))

    def _logprobs(
        self, prompt: str, candidates: list[str], reuse_prefix: bool, chat_formatted: bool
    ) -> dict[str, float]:
        with self._pool._working(self._entry):
            return self._model.logprobs(prompt, candidates, reuse_prefix, chat_formatted)

    def chat_prompt(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        with self._pool._watching(self._entry):
            return self._model.chat_prompt(messages, add_generation_prompt)

    def count_tokens(self, text: str) -> int:
        with self._pool._watching(self._entry):
            return self._model.count_tokens(text)

    def cancel(self) -> None:
        model = self._entry.model
        if model is not None:
            model.cancel()

    def restart(self) -> None:
        """Restart the model's process (after a crash)."""
        self._pool._restart(self._entry)

    def close(self) -> None:
        """End this lease (once); the pool decides when the model itself is closed."""
        if not self._released:
            self._released = True
            self._pool._release(self._entry)


class _WorkingStream(TextStream):
    """A model's stream that keeps the pool told the model is working while it is read."""

    def __init__(self, lease: PooledModel, start: Callable[[], TextStream]) -> None:
        self._lease = lease
        self._start = start
        self._stream: TextStream | None = None
        self.result: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        with self._lease._pool._working(self._lease._entry):
            self._stream = self._start()
            yield from self._stream
            self.result = self._stream.result
        self._lease.meter.add(self.result)

    def cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        else:
            self._lease.cancel()


_default: ModelPool | None = None
_default_lock = threading.Lock()


def default_pool() -> ModelPool:
    """This process's pool (created on first use, closed at exit)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ModelPool()
            atexit.register(_default.close)
        return _default
