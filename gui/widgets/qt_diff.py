"""Two runs item by item: a view over :func:`engine.reports.diff.diff_runs` (the command line's
``medexam runs diff``). A table of the items both runs answered — the answer read from each
reply, the rule that read it, why each reply stopped, right or wrong — filtered to the items
that flipped, that got no answer or that were cut off; the item picked shows its question
and both replies side by side, as plain text. Opened from Compare, Results and Experiments
(:func:`side_by_side_button`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.reports.diff import diff_runs, no_answer_text
from gui.widgets.common import AppContext, button, combo, muted, show_error

if TYPE_CHECKING:
    from engine.reports.diff import ItemDiff, RunsDiff, Side

TITLE = "Items side by side"
SHOWN = [(None, "Every item"), ("flipped", "Flipped: right in one, wrong in the other"),
         ("no-answer", "No answer in either"), ("cut-off", "Cut off at the token limit")]  # fmt: skip
COLUMNS = ["#", "Question", "Right", "A answer", "A rule", "A stop", "A",
           "B answer", "B rule", "B stop", "B"]  # fmt: skip
MARKS: dict[int | None, str] = {1: "✓", 0: "✗"}


def _side_cells(s: Side) -> list[str]:
    said = s.chosen if s.chosen and s.chosen.strip() else no_answer_text(s.why)
    return [said, s.rule or "–", s.finish or "–", MARKS.get(s.correct, "·")]


def row_texts(i: ItemDiff) -> list[str]:
    """One item's row: number, question (one line), right answer, then each run's answer,
    rule, stop reason and mark."""
    question = " ".join(i.question.split())
    return [str(i.number), question, i.gold or "–", *_side_cells(i.a), *_side_cells(i.b)]


def _reply_view() -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setReadOnly(True)
    return view


class DiffDialog(QDialog):
    """Runs ``run_a`` and ``run_b`` item by item (a :class:`UserError` when they answered
    different data sets, raised before anything is shown)."""

    def __init__(self, ctx: AppContext, run_a: int, run_b: int, parent: QWidget | None) -> None:
        super().__init__(parent)
        self.ctx, self.run_a, self.run_b = ctx, run_a, run_b
        self.found: RunsDiff = diff_runs(ctx.store, run_a, run_b)
        self.setWindowTitle(f"{TITLE}: #{run_a} and #{run_b}")
        self.only = combo(SHOWN)
        self.summary = muted(QLabel())
        self.summary.setWordWrap(True)
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.question, self.reply_a, self.reply_b = _reply_view(), _reply_view(), _reply_view()
        self.head_a, self.head_b = QLabel(), QLabel()
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(QLabel("Show"))
        top.addWidget(self.only, 1)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self._replies())
        layout.addWidget(split, 1)
        self.only.currentIndexChanged.connect(lambda _i: self.show_items())
        self.table.currentCellChanged.connect(lambda row, *_: self.show_item(row))
        self.resize(1100, 720)
        self.show_items()

    def _replies(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        for head, view in ((QLabel("Question"), self.question), (self.head_a, self.reply_a),
                           (self.head_b, self.reply_b)):  # fmt: skip
            column = QVBoxLayout()
            column.addWidget(head)
            column.addWidget(view, 1)
            row.addLayout(column, 1)
        return page

    def show_items(self) -> None:
        """The items the filter keeps, read again from the store."""
        self.found = diff_runs(self.ctx.store, self.run_a, self.run_b, self.only.currentData())
        a, b, c = self.found.a, self.found.b, self.found.counts
        self.head_a.setText(f"A: #{a['id']} {a.get('model')}")
        self.head_b.setText(f"B: #{b['id']} {b.get('model')}")
        self.summary.setText(
            f"{self.found.paired} items both answered on {a['dataset']}: {c['flipped']} "
            f"flipped ({c['right_a_only']} right only in A, {c['right_b_only']} only in B), "
            f"{c['no_answer']} without an answer, {c['cut_off']} cut off. "
            f"{len(self.found.items)} shown."
        )
        self.table.clear()
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setRowCount(len(self.found.items))
        for r, item in enumerate(self.found.items):
            for col, text in enumerate(row_texts(item)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)  # whole, where the column cuts it
                self.table.setItem(r, col, cell)
        self.table.resizeColumnsToContents()
        for col, most in ((1, 360), (3, 200), (7, 200)):  # both answers in sight
            self.table.setColumnWidth(col, min(self.table.columnWidth(col), most))
        if self.found.items:
            self.table.selectRow(0)
        self.show_item(0 if self.found.items else -1)

    def show_item(self, row: int) -> None:
        """Item ``row``'s question and both replies (empty for none)."""
        found = self.found.items[row] if 0 <= row < len(self.found.items) else None
        self.question.setPlainText(found.question if found else "")
        self.reply_a.setPlainText(found.a.reply if found else "")
        self.reply_b.setPlainText(found.b.reply if found else "")


def open_diff(parent: QWidget, ctx: AppContext, run_a: int, run_b: int) -> DiffDialog | None:
    """Show runs ``run_a`` and ``run_b`` side by side; None, after a one-line error, when
    they cannot be paired."""
    try:
        dialog = DiffDialog(ctx, run_a, run_b, parent)
    except Exception as exc:  # noqa: BLE001
        show_error(parent, exc, ctx, TITLE)
        return None
    dialog.show()
    return dialog


def pick_pair(chosen: list[int], experiment: dict | None) -> tuple[int, int] | None:
    """The two runs ``chosen`` (selected in a table), else the first two finished runs of
    ``experiment``; None when there are not two."""
    if len(chosen) == 2:
        return chosen[0], chosen[1]
    cells = (experiment or {}).get("cells") or []
    done = [int(c["run_id"]) for c in cells if c["status"] == "finished" and c["run_id"]]
    return (done[0], done[1]) if len(done) >= 2 else None


def side_by_side_button(
    parent: QWidget, ctx: AppContext, pair: Callable[[], Sequence[int] | None]
) -> QPushButton:
    """A button that shows the two runs ``pair`` names item by item, the older as A (the
    dialog kept as ``parent.diff_dialog``); a one-line note when it names no two."""

    def clicked() -> None:
        found = sorted(pair() or [])
        if len(found) != 2:
            show_error(
                parent, "Select two runs of one data set to see them side by side.", ctx, TITLE
            )
            return
        dialog = open_diff(parent, ctx, found[0], found[1])
        parent.diff_dialog = dialog  # type: ignore[attr-defined]

    tip = "Two runs item by item: both replies, the letter read from each, flipped items"
    return button("Items side by side", clicked, tip)
