"""The question grid beside a practice question (as in question bank apps): a numbered cell
per question of the block, coloured answered / unanswered, right / wrong once the answer is
shown (practice), marked ones with a flag; the question shown framed. A click on a cell
jumps there (``jump``), where the session lets one go.

Used by the exam and French practice panels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from gui.widgets.common import muted
from gui.widgets.screen import scrolled

if TYPE_CHECKING:
    from engine.store.store import Store

#: The states of a cell, and their colours (background, text, border).
COLOURS = {
    "unanswered": ("#ffffff", "#374151", "#d1d5db"),
    "answered": ("#dbeafe", "#1e3a8a", "#93c5fd"),
    "right": ("#dcfce7", "#166534", "#86efac"),
    "wrong": ("#fee2e2", "#991b1b", "#fca5a5"),
}
WORDS = {
    "unanswered": "not answered yet",
    "answered": "answered",
    "right": "answered right",
    "wrong": "answered wrong",
}
MARKED = "#d97706"  # the border of a marked question
CURRENT = "#111827"  # the frame of the question shown
LEGEND = (  # a line breaks between items only, never inside one (no-break spaces)
    "<span style='color:#1e3a8a'>■</span>&nbsp;answered&nbsp;· "
    "<span style='color:#16a34a'>■</span>&nbsp;right&nbsp;· "
    "<span style='color:#dc2626'>■</span>&nbsp;wrong&nbsp;· "
    "<span style='color:#d97706'>⚑</span>&nbsp;marked"
)


def cell_states(verdicts: Sequence[bool | None], shown: bool) -> list[str]:
    """Each question's state from its verdict (True right, False wrong, None not answered),
    right and wrong only where the answers are ``shown`` (not in a timed exam)."""
    return [
        "unanswered" if v is None else ("right" if v else "wrong") if shown else "answered"
        for v in verdicts
    ]


def marked_places(store: Store, profile: str, dataset: str, keys: Sequence[str]) -> set[int]:
    """The places in a block (``keys``, in order) of the questions marked in the notebook."""
    from engine.bank.notebook import by_item

    found = by_item(store, profile, dataset)
    return {i for i, k in enumerate(keys) if (e := found.get(str(k))) is not None and e.marked}


class QuestionGrid(QWidget):
    """A cell per question (:meth:`show_block`); ``jump`` gives the place clicked."""

    jump = Signal(int)

    def __init__(self, columns: int = 5, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.columns = columns
        self.cells: list[QPushButton] = []
        self.states: list[str] = []
        self.marked: set[int] = set()
        self.current = -1
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        title = QLabel("Questions")
        title.setObjectName("cardTitle")
        lay.addWidget(title)
        holder = QWidget()
        self.layout_ = QGridLayout(holder)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self.layout_.setSpacing(4)
        self.layout_.setRowStretch(999, 1)
        area = scrolled(holder)
        area.setStyleSheet(
            "QScrollArea, QScrollArea > QWidget > QWidget { background: transparent; }"
        )
        lay.addWidget(area, 1)
        self.legend = muted(QLabel(LEGEND))
        self.legend.setWordWrap(True)
        lay.addWidget(self.legend)
        self.setFixedWidth(columns * 38 + 18)

    def show_block(
        self, states: Sequence[str], current: int, marked: set[int], reach: int | None = None
    ) -> None:
        """Show a block: each question's state (a key of :data:`COLOURS`), the place shown,
        those marked; cells after ``reach`` cannot be jumped to (not reached yet)."""
        while len(self.cells) < len(states):
            cell = QPushButton(str(len(self.cells) + 1))
            cell.setFixedSize(34, 28)
            place = len(self.cells)
            cell.clicked.connect(lambda _c=False, i=place: self.jump.emit(i))
            self.layout_.addWidget(cell, place // self.columns, place % self.columns)
            self.cells.append(cell)
        self.states, self.current, self.marked = list(states), current, set(marked)
        for i, cell in enumerate(self.cells):
            cell.setVisible(i < len(states))
            if i < len(states):
                self._paint(cell, i, reach is None or i <= reach)

    def _paint(self, cell: QPushButton, i: int, reachable: bool) -> None:
        state = self.states[i]
        back, text, border = COLOURS[state]
        flagged = i in self.marked
        width = 2 if i == self.current or flagged else 1
        edge = CURRENT if i == self.current else MARKED if flagged else border
        cell.setText(f"{i + 1}⚑" if flagged else str(i + 1))
        cell.setStyleSheet(
            f"QPushButton {{ background:{back}; color:{text}; border:{width}px solid {edge};"
            f" border-radius:4px; padding:0; font-weight:{700 if i == self.current else 400}; }}"
        )
        cell.setEnabled(reachable)
        said = WORDS[state] + (", marked" if flagged else "")
        cell.setToolTip(f"Question {i + 1}: {said}" if reachable else "Not reached yet")

    def state(self, place: int) -> str:
        """The state the cell of ``place`` shows, with ``+marked`` when marked."""
        return self.states[place] + ("+marked" if place in self.marked else "")
