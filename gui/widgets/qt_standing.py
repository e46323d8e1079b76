"""The Where I stand tab of the Review screen (:mod:`engine.bank.standing`): for an activity
with subject fields (its descriptor's ``topic_fields``: wording, kind of question, subject),
per field a table of the subjects with the questions answered, the profile's score and each
model's score on those same questions, the subjects to work on first highlighted; the trend
of session scores; why questions were missed. An activity may bring a page of its own
instead (its descriptor's ``standing``, a :class:`StandingPage`: the consultation's practice
log).

The work is quick SQLite reads, done on the UI thread's store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, cast

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import activities
from engine.bank.notebook import REASONS
from engine.bank.standing import FIELD_NAMES
from gui.tables import ROOT, table_view
from gui.widgets import charts
from gui.widgets.common import AppContext, Card, combo, esc, flush_column, muted, selectable

if TYPE_CHECKING:
    from engine.activities import Activity
    from engine.bank.standing import Standing, Subject
    from engine.store.store import Store
    from engine.types import JSONDict

EMPTY = (
    "Answer some questions in {name} → Practice first: your score per subject is shown "
    "here, beside the models run on the same questions."
)
NO_MODELS = (
    "No model has answered these questions yet: run one on them in {name} to see its score "
    "beside yours."
)
WORK_FIRST = "#fef3c7"  # the background of a subject to work on first
HEADING = "#eef2f7"


class StandingPage(Protocol):
    """An activity's own page of Where I stand (its descriptor's ``standing``), made with the
    app's context: ``empty`` is said while the profile has nothing to show."""

    empty: str

    def show_standing(self, profile: str) -> str | None:
        """Show where ``profile`` stands; return the line over the page (None: nothing to
        show yet)."""
        ...


def standing_activities() -> list[Activity]:
    """The activities Where I stand is shown for: those with subject fields, then those
    with a page of their own, in the registry's order."""
    found = [a for a in activities().values() if a.topic_fields or a.standing]
    return sorted(found, key=lambda a: a.standing is not None)


def empty_text(activity_id: str) -> str:
    """What Where I stand says while the profile has nothing to show in the activity."""
    found = activities()[activity_id]
    if found.standing is not None:
        page = cast("type[StandingPage]", found.standing.load())  # a page class
        return str(page.empty)
    return EMPTY.format(name=found.name)


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

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.FIXED) + len(self.models)

    def headerData(  # noqa: N802
        self, section: int, orientation: Qt.Orientation, role: int = 0
    ) -> str | None:
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


def among_html(found: JSONDict, trend: list[JSONDict]) -> str:
    """Where someone stands among the real candidates (a
    :class:`engine.exam.candidates.Standing` as a dict), and how it moved over the sessions
    of ``trend`` (:func:`engine.bank.standing.trend`), in a few lines of HTML."""
    from engine.exam.candidates import ASSUMPTION, Standing, ordinal

    s = Standing(**found)
    moved = [ordinal(t["candidates"]["percentile"]) for t in trend if t.get("candidates")]
    sessions = (
        f"<br>Your sessions, oldest first: {' → '.join(moved[-8:])}"
        + (f" (the last 8 of {len(moved)})" if len(moved) > 8 else "")
        if moved
        else ""
    )
    return (
        f"<span style='font-size:15pt'><b>{ordinal(s.percentile)} percentile</b></span> among "
        f"the real candidates (95% interval {s.low:.0f}–{s.high:.0f})<br>You {s.score:.0f}% · "
        f"candidates {s.candidates:.0f}% on these {s.n} question{'s' if s.n != 1 else ''} "
        f"({s.answers_per_question:.0f} answers each on average){sessions}"
        f"<br><small style='color:#6b7280'>Estimated from {esc(ASSUMPTION)}.</small>"
    )


def percentile_of(t: JSONDict) -> object:
    """A trend's session standing among candidates, as a percentile (None when unknown)."""
    return (t.get("candidates") or {}).get("percentile")


def trend_points(
    store: Store,
    trend: list[JSONDict],
    value: Callable[[JSONDict], object] = lambda t: t.get("score"),
) -> list[tuple[datetime, float]]:
    """The scored sessions of a standing's trend (``value`` of each: its score), by the
    time each started."""
    points = []
    for t in trend:
        score = value(t)
        if not isinstance(score, int | float):
            continue
        started = store.run(int(str(t["run_id"]))).get("started")
        if started:
            points.append((local_time(str(started)), float(score)))
    return points


class StandingPanel(QWidget):
    """Where the profile ``profile()`` names (the Review screen's choice) stands."""

    def __init__(self, ctx: AppContext, profile: Callable[[], str]) -> None:
        super().__init__()
        self.ctx, self.profile = ctx, profile
        self.found: Standing | None = None
        self.pages: dict[str, QWidget] = {}  # the activities' own pages, made when first shown
        lay = flush_column(self, spacing=10)
        lay.setContentsMargins(0, 10, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Activity"))
        self.activity = combo([(a.id, a.name) for a in standing_activities()])
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
        lay.addWidget(self.stack, 1)

    # -- layout ----------------------------------------------------------------------------

    def _subjects_page(self) -> QWidget:
        left = Card("By subject")
        self.work_first = selectable(QLabel(""))
        left.add(self.work_first)
        self.among = selectable(QLabel(""))
        self.among.setWordWrap(True)
        left.add(self.among)
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
        return side_by_side(left, self.trend_view, "Why you missed questions", self.reasons, 1)

    def page(self, activity_id: str) -> QWidget:
        """The activity's own page (its descriptor's ``standing``), made on first use."""
        if activity_id not in self.pages:
            found = activities()[activity_id].standing
            assert found is not None
            self.pages[activity_id] = found.load()(self.ctx)
            self.stack.addWidget(self.pages[activity_id])
        return self.pages[activity_id]

    # -- content ---------------------------------------------------------------------------

    @property
    def activity_id(self) -> str:
        return str(self.activity.currentData())

    def refresh(self) -> None:
        """Read the standing of the profile in the chosen activity and show it."""
        if activities()[self.activity_id].standing is not None:
            self._show_page()
        else:
            self._show_standing()

    def _say_empty(self) -> None:
        self.summary.setText("")
        self.empty.setText(empty_text(self.activity_id))
        self.stack.setCurrentIndex(0)

    def _show_page(self) -> None:
        page = self.page(self.activity_id)
        self.found = None
        line = cast("StandingPage", page).show_standing(self.profile())
        if line is None:
            self._say_empty()
            return
        self.summary.setText(line)
        self.stack.setCurrentWidget(page)

    def _show_standing(self) -> None:
        from engine.bank.standing import standing

        found = standing(self.ctx.store, self.profile(), self.activity_id)
        self.found = found
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
            "<b>Work on first:</b> "
            f"<span style='background:{WORK_FIRST}'>&nbsp;{first}&nbsp;</span>"
            if first
            else "No subject stands out below your overall score yet."
        )
        self.models_note.setText(
            "Each model's score counts the questions you answered, by its latest answer to each."
            if found.models
            else NO_MODELS.format(name=activities()[self.activity_id].name)
        )
        self.among.setText(among_html(found.candidates, found.trend) if found.candidates else "")
        self.among.setVisible(found.candidates is not None)
        lines = {"Your score": trend_points(self.ctx.store, found.trend)}
        ranked = trend_points(self.ctx.store, found.trend, percentile_of)
        if ranked:
            lines["Percentile among candidates"] = ranked
        chart = charts.scores_over_time(lines, "Your sessions")
        chart.legend().setVisible(len(lines) > 1)
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

    def shown(self) -> None:
        """The tab is shown: new sessions may have been stored meanwhile."""
        self.refresh()


def side_by_side(left: Card, chart: QWidget, title: str, label: QLabel, below: int) -> QWidget:
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
