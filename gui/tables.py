"""Qt table models over store rows and engine summaries, for the screens: runs (filterable),
answers, values formatted for display, and the table view every screen shows them in.
Nothing here decides a score: the engine does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTableView

from engine.activities import activity_name
from engine.core.scoring import headline_value
from engine.reports.label import label_matches, run_label
from engine.reports.render import fmt_number

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONValue, Row

# -- table models ---------------------------------------------------------------------------


#: A column: its title and the getter of its value in a row (a dict, or a tuple).
Column = tuple[str, Callable[[Any], "JSONValue"]]
#: The invalid index: the parent of a table's top-level rows (a table model's default).
ROOT = QModelIndex()


class RowsModel(QAbstractTableModel):
    """A read-only table over a list of rows (dicts, or tuples); each column is a title and
    a getter.

    ``Qt.UserRole`` gives the value to sort on, ``Qt.UserRole + 1`` the whole row.
    """

    ROW_ROLE = Qt.ItemDataRole.UserRole + 1

    def __init__(self, columns: Sequence[Column], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.rows: list[Any] = []
        self.colour: Callable[[Any], str | None] | None = None
        self.colour_columns: set[int] | None = None  # None: every column
        self.tooltip: Callable[[Any], str | None] | None = None

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> str | None:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section][0]
        return None

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = 0
    ) -> Row | JSONValue | QColor:
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

    def row(self, i: int) -> Row:
        return self.rows[i]


def _score(run: Row) -> float | None:
    return headline_value(run)


def _who(run: Row) -> str:
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
        self.colour = lambda r: {
            "failed": "#b91c1c",
            "cancelled": "#92400e",
            "running": "#1d4ed8",
            "interrupted": "#92400e",
        }.get(r.get("status", ""))
        self.colour_columns = {len(RUN_COLUMNS) - 1}
        self.tooltip = lambda r: r.get("error") or None

    def reload(self, store: Store) -> None:
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

    def set_filter(
        self, activity: str | None = None, text: str | None = None, who: str | None = None
    ) -> None:
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

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        model = self.sourceModel()
        assert isinstance(model, RowsModel)
        run = model.row(source_row)
        if self.activity and run["activity"] != self.activity:
            return False
        if self.who and _who(run) != self.who:
            return False
        return not self.text or label_matches(run, self.text)

    def runs(self) -> list[Row]:
        """The runs passing the filter, in the shown order."""
        src = self.sourceModel()
        assert isinstance(src, RowsModel)
        return [src.row(self.mapToSource(self.index(i, 0)).row()) for i in range(self.rowCount())]


def _mark(correct: int | None) -> str:
    return "✓" if correct == 1 else "✗" if correct == 0 else "·"


ANSWER_COLUMNS: list[Column] = [
    ("", lambda a: _mark(a.get("correct"))),
    ("#", lambda a: a["number"]),
    ("Question", lambda a: a["question"]),
    ("Chosen", lambda a: a.get("chosen")),
    ("Gold", lambda a: a.get("gold")),
    ("Time (s)", lambda a: a.get("latency_s")),
    ("Response", lambda a: " ".join((a.get("response") or "").split())[:200]),
]
QUESTION_COLUMN = 2


class AnswersModel(RowsModel):
    """The answers of one run as :func:`engine.reports.answers.run_answers` gives them: numbered
    from 1, each with its question's text; the tooltip is the whole question."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(ANSWER_COLUMNS, parent)
        self.colour = lambda a: {1: "#15803d", 0: "#b91c1c"}.get(a.get("correct"))
        self.colour_columns = {0, 3}
        self.tooltip = lambda a: a.get("question_full") or None

    def reload(self, store: Store, run_id: int) -> None:
        from engine.reports.answers import run_answers

        self.set_rows(run_answers(store, run_id))


def table_view(
    model: QAbstractItemModel,
    *,
    stretch: int | None = None,
    fit: Sequence[int] = (),
    header: bool = True,
    wrap: bool = False,
) -> QTableView:
    """The app's plain table over ``model``: no grid, alternating rows, whole rows selected.
    Column ``stretch`` takes the spare width (every column when it is -1), columns in
    ``fit`` are as wide as their contents; ``header=False`` hides the column titles."""
    view = QTableView()
    view.setModel(model)
    view.verticalHeader().setVisible(False)
    view.setShowGrid(False)
    view.setAlternatingRowColors(True)
    view.setWordWrap(wrap)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    columns = view.horizontalHeader()
    columns.setHighlightSections(False)
    columns.setVisible(header)
    for i in fit:
        columns.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
    if stretch == -1:
        columns.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    elif stretch is not None:
        columns.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


# -- reading summaries for display ---------------------------------------------------------


def format_value(value: JSONValue) -> str:
    """A summary's value as the reports write it (:func:`engine.reports.render.fmt_number`),
    an em dash for none."""
    return fmt_number(value, missing="—")
