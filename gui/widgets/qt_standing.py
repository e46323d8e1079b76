"""The Where I stand tab of the Review screen (:mod:`engine.bank.standing`): per subject
field (wording, kind of question, subject) a table of the subjects with the questions
answered, the profile's score and each model's score on those same questions, the subjects
to work on first highlighted; the trend of session scores; why questions were missed; and
for the consultation, the practice log (cases seen, right diagnoses, facts elicited per
case, the facts most often missed).

The work is quick SQLite reads, done on the UI thread's store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.bank.notebook import REASONS
from engine.bank.standing import FIELD_NAMES
from gui.tables import RowsModel, table_view
from gui.widgets import charts
from gui.widgets.common import AppContext, Card, combo, esc, flush_column, muted, selectable

if TYPE_CHECKING:
    from engine.bank.standing import Standing, Subject
    from engine.store import Store
    from engine.types import JSONDict

#: The activities a standing is shown for.
ACTIVITIES = [("exam", "Exam"), ("french", "French QA"), ("consult", "Consultation")]
EMPTY = {
    "exam": "Answer some questions in Exam → Practice first: your score per subject is shown "
    "here, beside the models evaluated on the same questions.",
    "french": "Answer some questions in French QA → Practice first: your score per subject is "
    "shown here, beside the models run on the same questions.",
    "consult": "See a patient in Consultation first: each case you close is logged here, "
    "with the facts you asked about.",
}
NO_MODELS = (
    "No model has answered these questions yet: evaluate one (Exam → Model evaluation) to "
    "see its score beside yours."
)
WORK_FIRST = "#fef3c7"  # the background of a subject to work on first
HEADING = "#eef2f7"


def pct(value: float | None) -> str:
    """A score as the tables show it ("62%", "–" for none)."""
    return "–" if value is None else f"{value:.0f}%"


def field_name(name: str) -> str:
    """A subject field in words ("type2" → "Kind of question")."""
    words = FIELD_NAMES.get(name) or name.replace("_", " ")
    return words[:1].upper() + words[1:]


def local_time(iso: str) -> datetime:
    """A stored time as a local one without its zone (what the charts plot)."""
    return datetime.fromisoformat(iso).astimezone().replace(tzinfo=None)


class SubjectsModel(QAbstractTableModel):
    """The subjects of a standing, under a heading row per field: the subject, questions
    answered, right, the profile's score, then a column per model."""

    FIXED = ("Subject", "Answered", "Right", "You")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str | Subject] = []  # a field's heading, or a subject
        self.models: list[str] = []
        self.work_first: set[str] = set()

    def set_standing(self, found: Standing) -> None:
        self.beginResetModel()
        self.models = list(found.models)
        self.work_first = set(found.work_first)
        self.rows = []
        for s in found.subjects:
            if not self.rows or isinstance(self.rows[-1], str) or self.rows[-1].field != s.field:
                self.rows.append(field_name(s.field))
            self.rows.append(s)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.FIXED) + len(self.models)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> str | None:  # noqa: N802
        if role != Qt.ItemDataRole.DisplayRole or orientation != Qt.Orientation.Horizontal:
            return None
        fixed = len(self.FIXED)
        return self.FIXED[section] if section < fixed else self.models[section - fixed]

    def text(self, s: Subject, column: int) -> str:
        """What cell ``column`` of subject ``s``'s row says."""
        fixed = len(self.FIXED)
        if column >= fixed:
            return pct(s.models.get(self.models[column - fixed]))
        return [s.subject, str(s.n), str(s.right), pct(s.score)][column]

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> object:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if isinstance(row, str):
            return self._heading(row, index.column(), role)
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(row, index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        first = row.subject in self.work_first
        if role == Qt.ItemDataRole.BackgroundRole and first:
            return QBrush(QColor(WORK_FIRST))
        if role == Qt.ItemDataRole.ToolTipRole and first:
            return "Work on this first: below your overall score"
        if role == Qt.ItemDataRole.FontRole and index.column() == 3:
            font = QFont()
            font.setBold(True)
            return font
        return None

    def _heading(self, text: str, column: int, role: int) -> object:
        if role == Qt.ItemDataRole.DisplayRole:
            return text if column == 0 else ""
        if role == Qt.ItemDataRole.BackgroundRole:
            return QBrush(QColor(HEADING))
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(True)
            return font
        return None

    def cells(self, subject: str, field: str | None = None) -> dict[str, str]:
        """The row of ``subject`` (of ``field``, when given) by column title."""
        for row in self.rows:
            if isinstance(row, str) or row.subject != subject:
                continue
            if field is None or row.field == field:
                titles = [*self.FIXED, *self.models]
                return {t: self.text(row, i) for i, t in enumerate(titles)}
        raise KeyError(subject)


def trend_points(store: Store, trend: list[JSONDict]) -> list[tuple[datetime, float]]:
    """The scored sessions of a standing's trend, by the time each started."""
    points = []
    for t in trend:
        score = t.get("score")
        if not isinstance(score, int | float):
            continue
        started = store.run(int(str(t["run_id"]))).get("started")
        if started:
            points.append((local_time(str(started)), float(score)))
    return points


CASE_COLUMNS = [
    ("Date", lambda c: c["date"]),
    ("Case", lambda c: c["case"]),
    ("Diagnosis", lambda c: "right" if c["correct"] else "wrong"),
    ("Facts elicited", lambda c: f"{c['elicited']} of {c['facts']}"),
]


class StandingPanel(QWidget):
    """Where the profile ``profile()`` names (the Review screen's choice) stands."""

    def __init__(self, ctx: AppContext, profile: Callable[[], str]) -> None:
        super().__init__()
        self.ctx, self.profile = ctx, profile
        self.found: Standing | None = None
        self.log: JSONDict | None = None
        lay = flush_column(self, spacing=10)
        lay.setContentsMargins(0, 10, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Activity"))
        self.activity = combo(ACTIVITIES)
        self.activity.currentIndexChanged.connect(self.refresh)
        top.addWidget(self.activity)
        top.addSpacing(12)
        self.summary = QLabel("")
        self.summary.setObjectName("cardTitle")
        top.addWidget(self.summary, 1)
        lay.addLayout(top)
        self.stack = QStackedWidget()
        self.empty = selectable(muted(QLabel("")))
        self.empty.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self._subjects_page())
        self.stack.addWidget(self._consult_page())
        lay.addWidget(self.stack, 1)

    # -- layout ----------------------------------------------------------------------------

    def _subjects_page(self) -> QWidget:
        left = Card("By subject")
        self.work_first = selectable(QLabel(""))
        left.add(self.work_first)
        self.subjects = SubjectsModel()
        self.subject_table = table_view(self.subjects, stretch=0)
        self.subject_table.setAlternatingRowColors(False)
        self.subject_table.setSelectionMode(self.subject_table.SelectionMode.NoSelection)
        left.add(self.subject_table, 1)
        self.models_note = muted(QLabel(""))
        self.models_note.setWordWrap(True)
        left.add(self.models_note)
        self.trend_view = charts.view()
        self.reasons = selectable(QLabel(""))
        return _page(left, self.trend_view, "Why you missed questions", self.reasons, 1)

    def _consult_page(self) -> QWidget:
        left = Card("Cases seen")
        self.cases = RowsModel(CASE_COLUMNS)
        self.cases.colour = lambda c: "#15803d" if c["correct"] else "#b91c1c"
        self.cases.colour_columns = {2}
        left.add(table_view(self.cases, stretch=1, fit=(0, 2, 3)), 1)
        self.facts_view = charts.view()
        self.most_missed = selectable(QLabel(""))
        return _page(left, self.facts_view, "Facts most often left unasked", self.most_missed, 2)

    # -- content ---------------------------------------------------------------------------

    @property
    def activity_id(self) -> str:
        return str(self.activity.currentData())

    def refresh(self) -> None:
        """Read the standing of the profile in the chosen activity and show it."""
        if self.activity_id == "consult":
            self._show_log()
        else:
            self._show_standing()

    def _say_empty(self) -> None:
        self.summary.setText("")
        self.empty.setText(EMPTY[self.activity_id])
        self.stack.setCurrentIndex(0)

    def _show_standing(self) -> None:
        from engine.bank.standing import standing

        found = standing(self.ctx.store, self.profile(), self.activity_id)
        self.found, self.log = found, None
        if not found.answered:
            self._say_empty()
            return
        self.summary.setText(
            f"You: {found.right} of {found.answered} questions right ({pct(found.score)}), "
            "by your latest answer to each"
        )
        self.subjects.set_standing(found)
        self.subject_table.clearSpans()
        for i, row in enumerate(self.subjects.rows):
            if isinstance(row, str):
                self.subject_table.setSpan(i, 0, 1, self.subjects.columnCount())
        self._size_columns()
        first = esc(", ".join(found.work_first))
        self.work_first.setText(
            f"<b>Work on first:</b> <span style='background:{WORK_FIRST}'>&nbsp;{first}&nbsp;</span>"
            if first
            else "No subject stands out below your overall score yet."
        )
        self.models_note.setText(
            "Each model's score counts the questions you answered, by its latest answer to each."
            if found.models
            else NO_MODELS
        )
        points = trend_points(self.ctx.store, found.trend)
        chart = charts.scores_over_time({"You": points}, "Your sessions")
        chart.legend().setVisible(False)
        self.trend_view.setChart(chart)
        self.reasons.setText(
            "<br>".join(f"{esc(REASONS.get(r, r))}: <b>{n}</b>" for r, n in found.reasons.items())
            or "None tagged yet: say why you missed a question in the Notebook tab."
        )
        self.stack.setCurrentIndex(1)

    def _size_columns(self) -> None:
        header = self.subject_table.horizontalHeader()
        for i in range(1, self.subjects.columnCount()):
            header.setSectionResizeMode(i, header.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(64)

    def _show_log(self) -> None:
        from engine.bank.standing import consult_log

        log = consult_log(self.ctx.store, self.profile())
        self.found, self.log = None, log
        cases = cast("list[JSONDict]", log["cases"])
        if not cases:
            self._say_empty()
            return
        n = len(cases)
        self.summary.setText(
            f"{n} consultation{'s' if n != 1 else ''}, {log['right']} right diagnos"
            f"{'es' if log['right'] != 1 else 'is'}"
        )
        self.cases.set_rows(list(reversed(cases)))  # newest first
        points = []
        for c in cases:
            started = self.ctx.store.run(int(str(c["run_id"]))).get("started")
            facts, told = int(str(c["facts"])), int(str(c["elicited"]))
            if started and facts:
                points.append((local_time(str(started)), 100 * told / facts))
        chart = charts.scores_over_time({"Facts elicited": points}, "Facts elicited per case")
        chart.legend().setVisible(False)
        for axis in chart.axes(Qt.Orientation.Vertical):
            axis.setTitleText("Facts elicited (%)")
        self.facts_view.setChart(chart)
        missed = cast("list[JSONDict]", log["most_missed"])
        self.most_missed.setText(
            "<br>".join(f"{esc(m['fact'])}: <b>{m['times']}</b>" for m in missed)
            or "None: every fact was asked about."
        )
        self.stack.setCurrentIndex(2)

    def shown(self) -> None:
        """The tab is shown: new sessions may have been stored meanwhile."""
        self.refresh()


def _page(left: Card, chart: QWidget, title: str, label: QLabel, below: int) -> QWidget:
    """A page of the view: ``left`` (a table's card) beside a chart over a card ``title``
    holding ``label`` (``below``: its share of the column's height, against the chart's 3)."""
    page = QWidget()
    row = QHBoxLayout(page)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(12)
    row.addWidget(left, 3)
    right = QVBoxLayout()
    right.setSpacing(12)
    top = Card()
    top.add(chart, 1)
    right.addWidget(top, 3)
    bottom = Card(title)
    bottom.add(label)
    bottom.layout_.addStretch(1)
    right.addWidget(bottom, below)
    row.addLayout(right, 2)
    return page
