"""The app's plain state: its remembered settings and its view of the engine's model pool
(the table models over store rows are in :mod:`gui.tables`).

Nothing here decides anything about exams, consultations or scores: those answers come from
the engine; this module only holds them for the screens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QObject,
    QSettings,
    Signal,
)

if TYPE_CHECKING:
    from engine.models.load import LoadSettings
    from engine.models.pool import Lending, ModelPool

_SETTINGS_PATH: str | None = None


def use_settings_file(path: str | Path | None) -> None:
    """Keep the app's settings in ``path`` (an INI file); ``None``: the user data folder."""
    global _SETTINGS_PATH
    _SETTINGS_PATH = None if path is None else str(path)


def settings() -> QSettings:
    """The app's remembered settings: ``gui.ini`` in the user data folder (``MEDEXAM_HOME``)."""
    path = _SETTINGS_PATH
    if path is None:
        from engine.paths import data_dir

        path = str(data_dir() / "gui.ini")
    return QSettings(path, QSettings.Format.IniFormat)


def setting(key: str, default: Any = None, kind: type | None = None) -> Any:
    s = settings()
    if kind is None:
        return s.value(key, default)
    value = s.value(key, default)
    try:
        if kind is bool and isinstance(value, str):
            return value.lower() in ("1", "true", "yes")
        return kind(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def set_setting(key: str, value: Any) -> None:
    s = settings()
    s.setValue(key, value)
    s.sync()


# -- the models ----------------------------------------------------------------------------


class ModelHost(QObject):
    """The app's view of the engine's model pool (:mod:`engine.models.pool`).

    Runs lease their own models from :attr:`pool` (a doctor, a patient and a solver may all
    differ); the host itself holds one lease, on the model the app works with for a person
    (the engine's default chat model, :meth:`get`). ``changed`` fires whenever the pool
    reports a change — a model loading, ready, working, crashed or unloaded — from whatever
    thread. ``notice`` carries one sentence for the user when the default model cannot be
    used and the embedded one takes its place (:mod:`engine.models.checks`); the last one
    is kept in :attr:`notice_text`.
    """

    changed = Signal()
    notice = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.RLock()
        self._pool: ModelPool | None = None
        self._unsubscribe: Callable[[], None] = lambda: None
        self.model: Any = None  # the host's own lease
        self.name: str | None = None
        self.error = ""
        self.notice_text = ""
        self.last_speed: float | None = None

    @property
    def pool(self) -> ModelPool:
        """The process's model pool, shared with engine calls (set up on first use, after
        the window is on screen)."""
        if self._pool is None:
            from engine.models.pool import default_pool

            self._pool = default_pool()
            self._unsubscribe = self._pool.subscribe(self._on_event)
            self._check_default()
        return self._pool

    def _check_default(self) -> None:
        """Read the default model's file header; a damaged one gives way to the embedded
        model, said once (:func:`engine.models.checks.checked_default`)."""
        from engine.models.checks import checked_default

        _adopt_old_setting()
        _name, message = checked_default()
        self._tell(message)

    def _tell(self, message: str) -> None:
        if message:
            self.notice_text = message
            self.notice.emit(message)

    def _on_event(self, event: Any) -> None:
        if event.name == self.name and event.kind in ("failed", "crashed"):
            self.error = event.error
        elif event.name == self.name and event.kind == "ready":
            self.error = ""
        self.changed.emit()

    @property
    def selected(self) -> str:
        """The default chat model (the engine's ``model`` setting, shared with the command
        line), else the embedded one."""
        from engine.models.checks import default_model

        return default_model()

    def select(self, name: str) -> None:
        """Make ``name`` the default chat model; a model that cannot be used is not."""
        from engine.models.checks import set_default_model
        from engine.models.protocol import ModelError

        try:
            set_default_model(name)
        except ModelError as exc:
            self.error = str(exc)

    def load_settings(self) -> LoadSettings:
        """How the app's models load, as saved in the Models panel: its context (the default,
        4096, leaves it to each run: an exam's is sized to its prompts), threads, GPU layers
        and slots (None: automatic). Every lease and run of the app passes them."""
        from engine.models.load import DEFAULT_CONTEXT, LoadSettings

        n_ctx = setting("model/n_ctx", DEFAULT_CONTEXT, int)
        layers = setting("model/n_gpu_layers", -2, int)
        return LoadSettings(
            n_ctx=None if n_ctx == DEFAULT_CONTEXT else n_ctx,
            threads=setting("model/n_threads", 0, int) or None,
            gpu_layers=None if layers == -2 else layers,
            slots=setting("model/slots", 0, int) or None,
        )

    def lending(self) -> Lending:
        """The pool lending with :meth:`load_settings`: what the app's runs lease from."""
        return self.pool.lending(self.load_settings())

    @property
    def state(self) -> str:
        """unloaded, loading, ready or crashed: the state of the host's model."""
        if self._pool is None:
            return "unloaded"
        return self._pool.state(self.name or self.selected)

    def get(self, name: str | None = None) -> Any:
        """The model called ``name`` (default: the default chat model, or the embedded one
        when that cannot be loaded, said through ``notice``), leased by the host and loaded
        if needed. Blocks while loading: call from a worker thread."""
        from engine.models.checks import acquire_default

        wanted = name or self.selected
        with self._lock:
            if self.model is not None and self.name == wanted:
                if not self.model.alive:
                    self.model.restart()
                return self.model
            self._release()
            self.name = wanted
            message = ""
            try:
                if name is None:
                    self.model, message = acquire_default(self.lending())
                else:
                    self.model = self.pool.acquire(name, self.load_settings())
            except Exception as exc:
                self.error = str(exc)
                self.changed.emit()
                raise
            self.name = self.model.name
        self._tell(message)
        if message:
            self.changed.emit()  # another model than the one asked for
        return self.model

    def _release(self) -> None:
        if self.model is not None:
            self.model.close()
        self.model = None

    def unload(self) -> None:
        """Give back the host's model and free every model no run is using."""
        with self._lock:
            self._release()
            self.pool.unload()
        self.changed.emit()

    def restart(self) -> Any:
        """Start every crashed model afresh, the host's own first (after a crash). Blocks:
        call from a worker."""
        with self._lock:
            if self.model is None:
                self.get(self.name)
            elif not self.model.alive:
                self.model.restart()
            for m in self.pool.status():
                if m["state"] == "crashed":
                    self.pool.restart(m["name"])
            return self.model

    def mark_crashed(self, message: str) -> None:
        self.error = message
        self.changed.emit()

    def close(self) -> None:
        """When the window closes: stop observing the pool and give back the lease (the
        pool closes its models at exit)."""
        self._unsubscribe()
        self._release()
        if self._pool is not None:
            self._pool.unload()

    @property
    def description(self) -> str:
        """One line for the status bar."""
        name = self.name or self.selected
        status = self._pool.status() if self._pool is not None else []
        working = [m["name"] for m in status if m["working"]]
        busy = f" · working: {', '.join(working)}" if working else ""
        return {
            "unloaded": f"Model: {name} (not loaded)",
            "loading": f"Model: {name} — loading…",
            "ready": f"Model: {name} — ready{busy}",
            "crashed": f"Model: {name} — stopped, restart it",
        }.get(self.state, f"Model: {name}")


def _adopt_old_setting() -> None:
    """The model an older medexam remembered in ``gui.ini`` becomes the engine's default
    (once; the damaged-file check follows)."""
    from engine import settings as engine_settings
    from engine.models.catalog import DEFAULT_MODEL

    old = settings()
    name = old.value("model/name")
    if name is None:
        return
    if not engine_settings.get("model") and name != DEFAULT_MODEL:
        engine_settings.set("model", str(name))
    old.remove("model/name")
    old.sync()
