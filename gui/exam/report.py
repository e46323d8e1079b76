"""The report at the end of a person's exam session: the score against the pass mark, the
accuracy by question type, the time per question, and the missed questions to review. The
numbers are the engine's (:class:`engine.exam.person.SessionResult`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.bank.pools import GOES_ON
from engine.exam.dataset import LETTERS
from engine.text.columns import fmt_number
from gui.tables import RowsModel, table_view
from gui.widgets.common import (
    Card,
    button,
    esc,
    muted,
    primary,
    repolish,
    say_verdict,
    selectable,
    text_view,
)
from gui.widgets.qt_standing import among_html

if TYPE_CHECKING:
    from PySide6.QtCharts import QChartView

    from engine.exam.dataset import Question
    from engine.exam.person import ExamSitting, SessionResult
    from engine.store.store import Store
    from engine.types import Row


TOP_HEIGHT = 300  # the result and its two charts, as few types as fit in it
CHART_FRAME = 170  # what of that height is not the bars: the cards' titles, the axes


def duration(seconds: float | None) -> str:
    """Seconds in words: "42 s", "3 min 05 s", or "—"."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.0f} s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s"


class ReportPage(QWidget):
    """A finished session's result; ``review_clicked`` asks to go over its questions again
    (``missed``, ``all`` or ``marked``: :meth:`review_keys`), ``new_session_clicked`` to
    go back to the setup."""

    review_clicked = Signal(str)
    new_session_clicked = Signal()

    def __init__(self, store: Callable[[], Store], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store  # the store the sessions are in (for where they stood)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 6, 0)
        lay.setSpacing(14)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.setSpacing(16)
        top.addWidget(self._result_card(), 2)
        self.type_card = Card("By question type")
        top.addWidget(self.type_card, 3)
        self.time_card = Card("Time per question")
        top.addWidget(self.time_card, 3)
        self.top_box = QWidget()
        self.top_box.setLayout(top)
        self.top_box.setFixedHeight(TOP_HEIGHT)
        lay.addWidget(self.top_box)
        self.candidates_card = Card("Among real candidates")
        self.candidates_label = selectable(QLabel(""))
        self.candidates_label.setWordWrap(True)
        self.candidates_card.add(self.candidates_label)
        self.candidates_card.setVisible(False)
        lay.addWidget(self.candidates_card)
        self.type_chart: QChartView | None = None
        self.time_chart: QChartView | None = None
        missed = Card("Questions to review")
        self.missed_view = text_view(160)
        missed.add(self.missed_view, 1)
        lay.addWidget(missed, 1)

    def _result_card(self) -> Card:
        head = Card("Your result")
        self.session_label = muted(QLabel(""))
        head.add(self.session_label)
        self.score_label = QLabel("")
        self.score_label.setObjectName("bigNumber")
        head.add(self.score_label)
        self.pass_label = QLabel("")
        head.add(self.pass_label)
        self.stats_label = muted(QLabel(""))
        self.stats_label.setWordWrap(True)
        self.stats_label.setTextFormat(Qt.TextFormat.RichText)
        head.add(self.stats_label)
        head.layout_.addStretch(1)
        buttons = QGridLayout()  # two by two: the charts beside keep room to be read
        self.review_button = primary(QPushButton("Review missed questions"))
        self.review_button.clicked.connect(lambda: self.review_clicked.emit("missed"))
        self.review_all = QPushButton("Review all")
        self.review_all.clicked.connect(lambda: self.review_clicked.emit("all"))
        self.review_marked = QPushButton("Review marked")
        self.review_marked.clicked.connect(lambda: self.review_clicked.emit("marked"))
        for b in (self.review_button, self.review_all, self.review_marked):
            b.setToolTip("Untimed, each answer explained at once; never counted as an exam")
        again = QPushButton("New session")
        again.clicked.connect(self.new_session_clicked)
        for i, b in enumerate((self.review_button, self.review_all, self.review_marked, again)):
            buttons.addWidget(b, i // 2, i % 2)
        buttons.setColumnStretch(2, 1)
        head.add_layout(buttons)
        return head

    def show_result(self, result: SessionResult, questions: list[Question], dataset: str) -> None:
        """Fill the page for a :class:`~engine.exam.person.SessionResult` of a session over
        ``questions`` of ``dataset``."""
        mode = {"timed": "Timed exam", "review": "Review"}.get(result.mode, "Practice")
        self.session_label.setText(f"{mode} · {dataset}")
        self.score_label.setText(f"{fmt_number(result.score, unit='%')}%")
        if result.mode == "review":
            self.pass_label.setObjectName("")
            self.pass_label.setText("A review: no pass mark, not counted as an exam")
            repolish(self.pass_label)
        else:
            verdict = "Passed" if result.passed else "Not passed"
            said = f"{verdict} — the pass mark is {fmt_number(result.pass_mark, unit='%')}%"
            say_verdict(self.pass_label, result.passed, said)
        self.stats_label.setText(_stats(result))
        self._show_candidates(result, questions, dataset)
        self._charts(result)
        self.review_button.setEnabled(bool(result.missed))
        self.missed_view.setHtml(missed_html(result, questions))

    def _charts(self, result: SessionResult) -> None:
        from gui.widgets import charts

        by_type = result.by_type or {}
        field = "type2" if "type2" in by_type else "type1" if "type1" in by_type else None
        shown = by_type.get(field, {}) if field is not None else {}
        rows = [(k, v["accuracy"], v["n"]) for k, v in shown.items()]
        if self.type_chart is None or self.time_chart is None:  # made together
            self.type_chart = charts.view()
            self.time_chart = charts.view()
            self.type_card.add(self.type_chart, 1)
            self.time_card.add(self.time_chart, 1)
        mark = None if result.mode == "review" else result.pass_mark  # a review has none
        self.type_chart.setChart(charts.bars(rows, "Accuracy (%)", mark=mark))
        # each type's label is two lines (its name, its score): the charts grow with the types
        # rather than cut the labels to "药品知识题..."
        line = QFontMetrics(self.type_chart.chart().font()).lineSpacing()
        self.top_box.setFixedHeight(max(TOP_HEIGHT, CHART_FRAME + len(rows) * (2 * line + 12)))
        seconds = [(f.seconds, f.correct) for f in result.feedback]
        self.time_chart.setChart(charts.seconds_per_question(seconds))

    def _show_candidates(
        self, result: SessionResult, questions: list[Question], dataset: str
    ) -> None:
        """Where the session stands among the real candidates, how that moved over the
        sessions of the data set, and each question's share of candidates right."""
        self.candidates_card.setVisible(result.candidates is not None)
        if result.candidates is None:
            return
        from engine.bank.standing import trend
        from engine.review.profiles import run_profile

        store = self.store()
        rates = per_question_html(result, questions)
        if result.mode == "review":  # questions picked again, not a block: no standing
            self.candidates_label.setText(rates)
            return
        sessions = trend(store, run_profile(store.run(result.run_id)), "exam", dataset)
        self.candidates_label.setText(among_html(result.candidates, sessions) + "<br>" + rates)

    @staticmethod
    def review_keys(
        which: str, result: SessionResult, session: ExamSitting, store: Store
    ) -> list[str]:
        """The questions of a finished session to go over again: the ``missed`` ones,
        ``all`` of them, or those ``marked`` in the notebook."""
        if which == "missed":
            return list(result.missed)
        keys = [str(q["id"]) for q in session.questions]
        if which == "all":
            return keys
        from engine.bank.notebook import by_item

        marked = {
            k for k, e in by_item(store, session.profile, session.dataset).items() if e.marked
        }
        return [k for k in keys if k in marked]


def _past_result(run: Row) -> str:
    """A past session's result as Results says it: ``cancelled`` when it ended early."""
    summary = run.get("summary")
    if not summary or run["status"] != "finished":
        return run["status"] + (" · passed" if (summary or {}).get("passed") else "")
    return "passed" if summary.get("passed") else "not passed"


class PastCard(Card):
    """A person's past sessions beside the setup (:attr:`model`), the note under them
    (:attr:`note`: how many questions to review) and Go on, which calls ``go_on(run_id)``
    with the session chosen when it was left before its end (quit, or its app killed)."""

    def __init__(self, parent: QWidget, go_on: Callable[[int], None]) -> None:
        super().__init__("Your past sessions")
        self.setMinimumWidth(280)  # its dates and results whole
        self.model = RowsModel(
            [
                ("Date", lambda r: (r.get("started") or "")[:16].replace("T", " ")),
                ("Mode", lambda r: (r.get("settings") or {}).get("mode", "")),
                ("Score", lambda r: (r.get("summary") or {}).get("score")),
                ("Result", _past_result),
            ],
            parent,
        )
        self.model.colour = lambda r: "#15803d" if (r.get("summary") or {}).get("passed") else None
        self.table = table_view(self.model, stretch=0, fit=(1, 2, 3))  # the dates whole
        self.add(self.table, 1)
        self.go_button = button("Go on", self._go_on, "Answer the rest of the session chosen")
        self.go_button.setEnabled(False)
        self.table.selectionModel().selectionChanged.connect(self._chosen)
        self.model.modelReset.connect(self._chosen)
        self._go = go_on
        self.note = muted(QLabel(""))
        self.note.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.note, 1)
        row.addWidget(self.go_button)
        self.add_layout(row)

    def _row(self) -> Row | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.rows[rows[0].row()] if rows else None

    def _chosen(self) -> None:
        row = self._row()
        self.go_button.setEnabled(row is not None and row.get("status") in GOES_ON)

    def _go_on(self) -> None:
        row = self._row()
        if row is not None:
            self._go(int(row["id"]))


MARKS = {True: ("✓", "#15803d"), False: ("✗", "#b91c1c")}  # right, wrong


def per_question_html(result: SessionResult, questions: list[Question]) -> str:
    """Each question's share of candidates right, beside the person's ✓ or ✗ (– when left)."""
    from engine.exam.candidates import candidates_of

    said = {f.key: f.chosen is not None and f.correct for f in result.feedback}
    parts = []
    for i, q in enumerate(questions, 1):
        rate = candidates_of(q)  # type: ignore[arg-type]
        if rate is None:
            continue
        key = str(q["id"])
        mark, colour = ("–", "#6b7280") if key not in said else MARKS[said[key]]
        parts.append(
            f"<span style='white-space:nowrap'>{i} <b style='color:{colour}'>{mark}</b> "
            f"{100 * rate.right:.0f}%</span>"
        )
    return "Candidates right, question by question: " + " · ".join(parts)


def _stats(result: SessionResult) -> str:
    skipped = sum(1 for f in result.feedback if f.chosen is None)
    return (  # a question skipped is stored, not answered
        f"{result.correct} of {result.n} right · {result.answered - skipped} answered"
        + (f" · {skipped} skipped" if skipped else "")
        + f"<br>{duration(result.seconds)} in all · "
        f"{duration(result.seconds_per_question)} per question"
        + ("" if result.status == "finished" else " · ended early")
    )


def missed_html(result: SessionResult, questions: list[Question]) -> str:
    """The missed questions with their options (the right one green, the chosen one red),
    the answer given and the explanation."""
    if not result.missed:
        return "<p style='color:#15803d'><b>Nothing to review — every question right.</b></p>"
    by_key = {str(q["id"]): q for q in questions}
    chosen = {f.key: f.chosen for f in result.feedback}
    parts = []
    for key in result.missed:
        q = by_key.get(key)
        if q is None:
            continue
        gold = q["answer"]
        options = "".join(
            f"<div style='margin-left:12px; color:{_option_colour(letter, gold, chosen.get(key))}'>"
            f"{letter}. {esc(text)}</div>"
            for letter, text in zip(LETTERS, q["options"], strict=False)
        )
        you = chosen.get(key) or "skipped"
        parts.append(
            f"<p style='margin-bottom:2px'><b>{esc(q['question'])}</b></p>{options}"
            f"<p style='color:#6b7280; margin-top:4px'>You: {esc(you)} · Answer: {gold}</p>"
            f"<p style='margin-top:0'>{esc(q.get('explanation', ''))}</p><hr>"
        )
    return "".join(parts)


def _option_colour(letter: str, gold: str, chosen: str | None) -> str:
    if letter == gold:
        return "#15803d"
    return "#b91c1c" if letter == chosen else "#374151"
