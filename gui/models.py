"""The app's plain state: settings, the loaded model, and Qt table models over store rows.

Nothing here decides anything about exams, consultations or scores: those answers come from
the engine; this module only holds them for the screens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSettings,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor

# Labels and summaries are the engine's; the screens import them from here.
from engine.activities import activity_name as activity_name
from engine.activities import headline_value
from engine.reports.label import label_matches, run_label
from engine.results import summary_rows as summary_rows

if TYPE_CHECKING:
    from engine.models.pool import ModelPool

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
    (the selected one, :meth:`get`). ``changed`` fires whenever the pool reports a change —
    a model loading, ready, working, crashed or unloaded — from whatever thread.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.RLock()
        self._pool: ModelPool | None = None
        self._unsubscribe: Callable[[], None] = lambda: None
        self.model: Any = None  # the host's own lease
        self.name: str | None = None
        self.error = ""
        self.last_speed: float | None = None

    @property
    def pool(self) -> ModelPool:
        """The process's model pool, shared with engine calls (set up on first use, after
        the window is on screen)."""
        if self._pool is None:
            from engine.models.pool import default_pool

            self._pool = default_pool()
            self._pool.settings_for = lambda name: self.load_settings()
            self._unsubscribe = self._pool.subscribe(self._on_event)
        return self._pool

    def _on_event(self, event: Any) -> None:
        if event.name == self.name and event.kind in ("failed", "crashed"):
            self.error = event.error
        elif event.name == self.name and event.kind == "ready":
            self.error = ""
        self.changed.emit()

    @property
    def selected(self) -> str:
        """The model chosen in the app (remembered between sessions)."""
        return str(setting("model/name", "smollm2"))

    def load_settings(self) -> dict[str, Any]:
        """``n_ctx``, ``n_threads`` and ``n_gpu_layers`` as saved (None = automatic)."""
        threads = setting("model/n_threads", 0, int)
        layers = setting("model/n_gpu_layers", -2, int)
        return {
            "n_ctx": setting("model/n_ctx", 4096, int),
            "n_threads": threads or None,
            "n_gpu_layers": None if layers == -2 else layers,
        }

    @property
    def state(self) -> str:
        """unloaded, loading, ready or crashed: the state of the host's model."""
        if self._pool is None:
            return "unloaded"
        return self._pool.state(self.name or self.selected)

    def get(self, name: str | None = None) -> Any:
        """The model called ``name`` (default: the selected one), leased by the host and
        loaded if needed. Blocks while loading: call from a worker thread."""
        name = name or self.selected
        with self._lock:
            if self.model is not None and self.name == name:
                if not self.model.alive:
                    self.model.restart()
                return self.model
            self._release()
            self.name = name
            try:
                self.model = self.pool.acquire(name)
            except Exception as exc:
                self.error = str(exc)
                self.changed.emit()
                raise
            self.name = self.model.name
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


# -- table models ---------------------------------------------------------------------------


Column = tuple[str, Callable[[dict[str, Any]], Any]]


class RowsModel(QAbstractTableModel):
    """A read-only table over a list of dicts; each column is a title and a getter.

    ``Qt.UserRole`` gives the value to sort on, ``Qt.UserRole + 1`` the whole row.
    """

    ROW_ROLE = Qt.ItemDataRole.UserRole + 1

    def __init__(self, columns: Sequence[Column], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.rows: list[dict[str, Any]] = []
        self.colour: Callable[[dict[str, Any]], str | None] | None = None
        self.colour_columns: set[int] | None = None  # None: every column
        self.tooltip: Callable[[dict[str, Any]], str | None] | None = None

    def set_rows(self, rows: Sequence[dict[str, Any]]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section][0]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == self.ROW_ROLE:
            return row
        value = self.columns[index.column()][1](row)
        if role == Qt.ItemDataRole.DisplayRole:
            if value is None:
                return ""
            if isinstance(value, float):
                return f"{value:.1f}"
            return str(value)
        if role == Qt.ItemDataRole.UserRole:
            return value if value is not None else ""
        if role == Qt.ItemDataRole.ForegroundRole and self.colour is not None:
            if self.colour_columns is not None and index.column() not in self.colour_columns:
                return None
            c = self.colour(row)
            return QColor(c) if c else None
        if role == Qt.ItemDataRole.ToolTipRole and self.tooltip is not None:
            return self.tooltip(row)
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, int | float):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def row(self, i: int) -> dict[str, Any]:
        return self.rows[i]


def _score(run: dict[str, Any]) -> float | None:
    return headline_value(run)


def _who(run: dict[str, Any]) -> str:
    return "You" if run.get("runner") == "person" else run.get("model", "")


RUN_COLUMNS: list[Column] = [
    ("#", lambda r: r["id"]),
    ("Activity", lambda r: activity_name(r["activity"])),
    ("Who", _who),
    ("Setting", run_label),
    ("Data set", lambda r: r["dataset"]),
    ("Date", lambda r: (r.get("started") or "")[:16].replace("T", " ")),
    ("Done", lambda r: f"{r.get('n_done', 0)}/{r.get('n_total', 0)}"),
    ("Score", _score),
    ("Status", lambda r: r.get("status", "")),
]


class RunsModel(RowsModel):
    """Every run of the store (newest first), for the Results table."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(RUN_COLUMNS, parent)
        self.colour = lambda r: {"failed": "#b91c1c", "cancelled": "#92400e",
                                 "running": "#1d4ed8", "interrupted": "#92400e"}.get(r.get("status", ""))  # fmt: skip
        self.colour_columns = {len(RUN_COLUMNS) - 1}
        self.tooltip = lambda r: r.get("error") or None

    def reload(self, store: Any) -> None:
        self.set_rows(store.runs())


class RunsFilter(QSortFilterProxyModel):
    """Filters runs by activity, who ran them and free text (in the setting label, model,
    data set or status)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.activity = ""
        self.text = ""
        self.who = ""
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_filter(self, activity: str | None = None, text: str | None = None,
                   who: str | None = None) -> None:  # fmt: skip
        modern = hasattr(self, "beginFilterChange")  # Qt 6.9 and later
        if modern:
            self.beginFilterChange()
        if activity is not None:
            self.activity = activity
        if text is not None:
            self.text = text.strip().lower()
        if who is not None:
            self.who = who
        if modern:
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Any) -> bool:
        model = self.sourceModel()
        assert isinstance(model, RowsModel)
        run = model.row(source_row)
        if self.activity and run["activity"] != self.activity:
            return False
        if self.who and _who(run) != self.who:
            return False
        return not self.text or label_matches(run, self.text)

    def runs(self) -> list[dict[str, Any]]:
        """The runs passing the filter, in the shown order."""
        src = self.sourceModel()
        assert isinstance(src, RowsModel)
        return [src.row(self.mapToSource(self.index(i, 0)).row()) for i in range(self.rowCount())]


def _mark(correct: Any) -> str:
    return {1: "✓", 0: "✗"}.get(correct, "·")


ANSWER_COLUMNS: list[Column] = [
    ("", lambda a: _mark(a.get("correct"))),
    ("Item", lambda a: a["item_key"]),
    ("Chosen", lambda a: a.get("chosen")),
    ("Gold", lambda a: a.get("gold")),
    ("Time (s)", lambda a: a.get("latency_s")),
    ("Response", lambda a: " ".join((a.get("response") or "").split())[:200]),
]


class AnswersModel(RowsModel):
    """The per-item answers of one run."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(ANSWER_COLUMNS, parent)
        self.colour = lambda a: {1: "#15803d", 0: "#b91c1c"}.get(a.get("correct"))
        self.colour_columns = {0, 2}
        self.tooltip = lambda a: a.get("response") or None


# -- reading summaries for display ---------------------------------------------------------


def format_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1 and value != 0 else f"{value:.1f}"
    return str(value)


def category_scores(
    run: dict[str, Any], store: Any = None
) -> tuple[str, list[tuple[str, float, int]]]:
    """Scores by category of one run: :func:`engine.results.category_scores`."""
    from engine.results import category_scores as scores

    return scores(run, store)


def compare_runs(store: Any, a: int, b: int) -> dict[str, Any]:
    """Two runs side by side: :func:`engine.results.compare_runs`."""
    from engine.results import compare_runs as compare

    return compare(store, a, b)


# -- adapters over engine calls (see the notes on each) ------------------------------------


class StoreTap:
    """A store that tells ``on_write(kind, data)`` about each run, turn and answer written
    through it, so a screen can show a model run's transcript live. Everything else goes to
    the wrapped :class:`~engine.store.Store` unchanged."""

    def __init__(self, store: Any, on_write: Callable[[str, dict[str, Any]], None]) -> None:
        self._store = store
        self._on_write = on_write

    def start_run(self, *args: Any, **kwargs: Any) -> int:
        run_id = self._store.start_run(*args, **kwargs)
        self._on_write("run", {"run_id": run_id})
        return run_id

    def add_turn(self, run_id: int, item_key: str, turn: int, role: str, text: str,
                 **kwargs: Any) -> None:  # fmt: skip
        self._store.add_turn(run_id, item_key, turn, role, text, **kwargs)
        self._on_write(
            "turn",
            {
                "run_id": run_id,
                "item_key": item_key,
                "turn": turn,
                "role": role,
                "text": text,
                "extra": kwargs.get("extra") or {},
            },
        )

    def delete_turns(self, run_id: int, item_key: str) -> None:
        self._store.delete_turns(run_id, item_key)
        self._on_write("reset", {"run_id": run_id, "item_key": item_key})

    def add_answer(self, run_id: int, item_key: str, **kwargs: Any) -> None:
        self._store.add_answer(run_id, item_key, **kwargs)
        self._on_write("answer", {"run_id": run_id, "item_key": item_key, **kwargs})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
