"""The app's plain state: settings, the loaded model, and Qt table models over store rows.

Nothing here decides anything about exams, consultations or scores: those answers come from
the engine; this module only holds them for the screens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


# -- the loaded model -------------------------------------------------------------------


class _Borrowed:
    """A loaded model lent to an engine function that closes what it opened: ``close()`` is
    ignored, everything else goes to the model."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


class ModelHost(QObject):
    """The model the app works with (one at a time, like LM Studio), in its own process.

    :meth:`get` loads it on first use (call it from a worker thread: loading takes a moment);
    ``changed`` fires when it is loaded, unloaded, crashes or restarts.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.RLock()
        self.model: Any = None
        self.name: str | None = None
        self.state = "unloaded"  # unloaded, loading, ready, crashed
        self.error = ""
        self._owned = True
        self.last_speed: float | None = None

    # settings remembered between sessions
    @property
    def selected(self) -> str:
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

    def _set_state(self, state: str, error: str = "") -> None:
        self.state, self.error = state, error
        self.changed.emit()

    def get(self, name: str | None = None) -> Any:
        """The loaded model called ``name`` (default: the selected one), loading it if needed.

        Blocks while loading: call from a worker thread.
        """
        from engine.catalog import open_model

        name = name or self.selected
        with self._lock:
            if self.model is not None and self.name == name and self.model.alive:
                return self.model
            self._close()
            self.name = name
            self._set_state("loading")
            try:
                self.model = open_model(name, **self.load_settings())
            except Exception as exc:
                self.model = None
                self._set_state("unloaded", str(exc))
                raise
            self._owned = True
            self._set_state("ready")
            return self.model

    def borrowed(self, name: str | None = None) -> _Borrowed:
        """:meth:`get`, wrapped so an engine function's ``close()`` leaves it loaded."""
        return _Borrowed(self.get(name))

    def opener(self, name: str | None) -> _Borrowed:
        """An ``opener(name)`` for engine runs: ``None`` or ``"model"`` means the selected one."""
        return self.borrowed(None if name in (None, "model") else name)

    def adopt(self, model: Any, name: str) -> None:
        """Use an already loaded model (it is not closed by :meth:`unload`)."""
        with self._lock:
            self._close()
            self.model, self.name, self._owned = model, name, False
            self._set_state("ready")

    def _close(self) -> None:
        if self.model is not None and self._owned:
            self.model.close()
        self.model = None

    def unload(self) -> None:
        """Free the model's memory."""
        with self._lock:
            self._close()
            self._set_state("unloaded")

    def restart(self) -> Any:
        """Start the model process afresh (after a crash). Blocks: call from a worker."""
        with self._lock:
            if self.model is None:
                return self.get(self.name)
            self._set_state("loading")
            self.model.restart()
            self._set_state("ready")
            return self.model

    def mark_crashed(self, message: str) -> None:
        self._set_state("crashed", message)

    @property
    def description(self) -> str:
        """One line for the status bar."""
        name = self.name or self.selected
        return {
            "unloaded": f"Model: {name} (not loaded)",
            "loading": f"Model: {name} — loading…",
            "ready": f"Model: {name} — ready",
            "crashed": f"Model: {name} — stopped, restart it",
        }[self.state]


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
    from engine.export import headline_value

    return headline_value(run)


def _who(run: dict[str, Any]) -> str:
    return "You" if run.get("runner") == "person" else run.get("model", "")


ACTIVITY_NAMES = {"exam": "Exam", "consult": "Consultation", "french": "French QA"}


def activity_name(activity: str) -> str:
    return ACTIVITY_NAMES.get(activity, activity)


RUN_COLUMNS: list[Column] = [
    ("#", lambda r: r["id"]),
    ("Activity", lambda r: activity_name(r["activity"])),
    ("Who", _who),
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
                                 "running": "#1d4ed8"}.get(r.get("status", ""))  # fmt: skip
        self.colour_columns = {len(RUN_COLUMNS) - 1}
        self.tooltip = lambda r: r.get("error") or None

    def reload(self, store: Any) -> None:
        self.set_rows(store.runs())


class RunsFilter(QSortFilterProxyModel):
    """Filters runs by activity, status and free text (model or data set)."""

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
        if self.text:
            hay = f"{run['model']} {run['dataset']} {run.get('status', '')}".lower()
            return self.text in hay
        return True

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

# Readable names for the summary keys the engines write.
METRIC_NAMES = {
    "accuracy": "Accuracy (%)",
    "hamming": "Hamming score (%)",
    "emr": "Exact match ratio (%)",
    "n": "Items",
    "rouge1": "ROUGE-1",
    "rouge2": "ROUGE-2",
    "rougeL": "ROUGE-L",
    "patient_recall": "Patient recall (%)",
    "patient_precision": "Patient precision (%)",
    "patient_f1": "Patient F1 (%)",
    "doctor_recall": "Doctor recall (%)",
    "doctor_precision": "Doctor precision (%)",
    "doctor_f1": "Doctor F1 (%)",
    "avg_turns": "Questions per case",
    "avg_length": "Words per question",
    "diversity": "Question diversity (%)",
    "leakage": "Leakage (%)",
    "similarity": "Diagnosis similarity (%)",
    "passed": "Passed",
    "pass_mark": "Pass mark (%)",
    "correct": "Correct",
    "seconds": "Time (s)",
    "mean_seconds": "Seconds per question",
    "seconds_per_question": "Seconds per question",
    "answered": "Answered",
    "accuracy_answered": "Accuracy of the answered (%)",
    "no_letter": "Replies without a letter",
    "score": "Score (%)",
    "recall_at_k": "Recall at k",
}


def metric_name(key: str) -> str:
    return METRIC_NAMES.get(key, key.replace("_", " ").capitalize())


def summary_rows(summary: dict[str, Any] | None) -> list[tuple[str, str, Any]]:
    """The scalar entries of a run summary as ``(key, label, value)``, nested blocks of
    scalars flattened one level (``recall_at_k`` → "Recall at k: recall")."""
    out: list[tuple[str, str, Any]] = []
    skip = {"run_id", "dataset", "model", "settings", "status", "items", "error"}
    for key, value in (summary or {}).items():
        if key in skip or key.startswith("by_"):
            continue
        if isinstance(value, dict):
            for sub, v in value.items():
                if isinstance(v, int | float | str | bool) or v is None:
                    out.append((f"{key}.{sub}", f"{metric_name(key)}: {sub}", v))
        elif isinstance(value, int | float | str | bool) or value is None:
            out.append((key, metric_name(key), value))
    return out


def format_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1 and value != 0 else f"{value:.1f}"
    return str(value)


# The question type fields of ExplainCPE, in words.
TYPE_NAMES = {"type1": "wording", "type2": "kind of question", "type3": "subject"}


def category_scores(
    run: dict[str, Any], store: Any = None
) -> tuple[str, list[tuple[str, float, int]]]:
    """Scores by category of one run, as ``(what, [(category, score %, n)])``.

    Taken from the run's summary where the engine gave a breakdown (``by_type`` of exams,
    ``by_n_answers`` of French runs); otherwise the share of correct answers per item
    category of the data set.
    """
    summary = run.get("summary") or {}
    by_type = summary.get("by_type")
    if isinstance(by_type, dict) and by_type:
        field = next((f for f in ("type2", "type1", "type3") if f in by_type), next(iter(by_type)))
        block = by_type[field]
        if isinstance(block, dict) and all(isinstance(v, dict) for v in block.values()):
            return f"Accuracy by {TYPE_NAMES.get(field, field)}", [
                (k, float(v.get("accuracy") or 0.0), int(v.get("n") or 0)) for k, v in block.items()
            ]
    by_n = summary.get("by_n_answers")
    if isinstance(by_n, dict) and by_n:
        return "Hamming score by number of right answers", [
            (f"{k} right", float(v.get("hamming") or 0.0), int(v.get("n") or 0))
            for k, v in by_n.items()
            if isinstance(v, dict)
        ]
    if store is None:
        return "", []
    try:
        items = {str(i["id"]): i for i in store.items(run["dataset"])}
    except Exception:  # noqa: BLE001 - the data set may have been deleted
        return "", []
    groups: dict[str, list[bool]] = {}
    for a in store.answers(run["id"]):
        item = items.get(str(a["item_key"]), {})
        cat = item.get("type1") or item.get("category")
        if cat and a.get("correct") is not None:
            groups.setdefault(str(cat), []).append(bool(a["correct"]))
    return "Accuracy by category", [
        (k, 100.0 * sum(v) / len(v), len(v)) for k, v in sorted(groups.items())
    ]


def compare_runs(store: Any, a: int, b: int) -> dict[str, Any]:
    """Two runs side by side: their summary metrics and the items they answered differently.

    ``metrics``: ``[(label, value_a, value_b)]``; ``items``: ``[(key, answer_a, answer_b,
    correct_a, correct_b)]`` for items both answered; ``agree``: how many they answered alike.
    """
    ra, rb = store.run(a), store.run(b)
    sa = {k: v for k, _l, v in summary_rows(ra["summary"])}
    sb = {k: v for k, _l, v in summary_rows(rb["summary"])}
    labels = {
        k: label for k, label, _v in summary_rows(ra["summary"]) + summary_rows(rb["summary"])
    }
    keys = list(dict.fromkeys([*sa, *sb]))
    metrics = [(labels[k], sa.get(k), sb.get(k)) for k in keys]
    ans_a = {x["item_key"]: x for x in store.answers(a)}
    ans_b = {x["item_key"]: x for x in store.answers(b)}
    both = [k for k in ans_a if k in ans_b]
    items = [
        (k, ans_a[k].get("chosen"), ans_b[k].get("chosen"), ans_a[k].get("correct"),
         ans_b[k].get("correct"))
        for k in both
    ]  # fmt: skip
    agree = sum(1 for _k, x, y, _cx, _cy in items if x == y)
    return {"a": ra, "b": rb, "metrics": metrics, "items": items, "agree": agree}


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


def start_person_consultation(store: Any, dataset: str, case: Any, patient_model: Any,
                              max_turns: int = 10) -> Any:  # fmt: skip
    """A person's consultation of one case, stored as a ``person`` run of one item.

    (The consultation engine runs model doctors over whole data sets; a person's single
    consultation is this run around :class:`engine.consult.session.Consultation`.)
    """
    from engine.consult.cases import ACTIVITY
    from engine.consult.session import Consultation

    run_id = store.start_run(ACTIVITY, dataset, "person",
                             {"doctor": "person", "case": case.id, "max_turns": max_turns},
                             runner="person", n_total=1)  # fmt: skip
    consultation = Consultation(case, patient_model, store=store, run_id=run_id,
                                max_turns=max_turns, position=0)  # fmt: skip
    consultation.start()
    return consultation


def finish_person_consultation(consultation: Any, answer: str) -> Any:
    """Score the person's answer, close the run with the engine's summary; the result."""
    from engine.consult.metrics import summarize

    result = consultation.finish(answer)
    store, run_id = consultation.store, consultation.run_id
    store.finish_run(run_id, summarize([result.metrics]))
    return result


def abandon_person_consultation(consultation: Any) -> None:
    """Close the run of a consultation left before its task was answered (``cancelled``,
    no score)."""
    consultation.store.finish_run(consultation.run_id, {"n": 0}, status="cancelled")
