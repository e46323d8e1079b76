"""The consultation's page of Where I stand (the Review screen): the practice log of a
profile (:func:`engine.consult.practice_log.consult_log`): the cases seen, right or not, the facts
elicited per case over time and the facts most often left unasked."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from gui.tables import RowsModel, table_view
from gui.widgets import charts
from gui.widgets.common import AppContext, Card, esc, flush_column, selectable
from gui.widgets.qt_standing import local_time, side_by_side

if TYPE_CHECKING:
    from engine.types import JSONDict

EMPTY = (
    "See a patient in Consultation first: each case you close is logged here, "
    "with the facts you asked about."
)
CASE_COLUMNS = [
    ("Date", lambda c: c["date"]),
    ("Case", lambda c: c["case"]),
    ("Diagnosis", lambda c: "right" if c["correct"] else "wrong"),
    ("Facts elicited", lambda c: f"{c['elicited']} of {c['facts']}"),
]


class PracticeLog(QWidget):
    """The consultations a profile closed (:class:`gui.widgets.qt_standing.StandingPage`)."""

    empty = EMPTY

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.log: JSONDict | None = None
        left = Card("Cases seen")
        self.cases = RowsModel(CASE_COLUMNS)
        self.cases.colour = lambda c: "#15803d" if c["correct"] else "#b91c1c"
        self.cases.colour_columns = {2}
        left.add(table_view(self.cases, stretch=1, fit=(0, 2, 3)), 1)
        self.facts_view = charts.view()
        self.most_missed = selectable(QLabel(""))
        page = side_by_side(
            left, self.facts_view, "Facts most often left unasked", self.most_missed, 2
        )
        flush_column(self).addWidget(page)

    def show_standing(self, profile: str) -> str | None:
        """Show the log of ``profile``; return its summary line (None: no case closed yet)."""
        from engine.consult.practice_log import consult_log

        log = consult_log(self.ctx.store, profile)
        self.log = log
        cases = cast("list[JSONDict]", log["cases"])
        if not cases:
            return None
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
        n, right = len(cases), log["right"]
        return (
            f"{n} consultation{'s' if n != 1 else ''}, {right} right diagnos"
            f"{'es' if right != 1 else 'is'}"
        )
