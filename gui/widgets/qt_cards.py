"""The Cards tab of the Review screen, a card browser as Anki has: the profile's cards,
searched by the words of their question, options, topic, data set or note
(:func:`engine.review.browse.browse`); the selected one suspended or unsuspended, reset (new
again, due now) or its note edited (the Notebook's note).

The work is quick SQLite reads and writes, done on the UI thread's store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from PySide6.QtWidgets import QHBoxLayout, QInputDialog, QLabel, QLineEdit, QPushButton, QWidget

from engine.text.columns import short_text
from gui.tables import RowsModel, table_view
from gui.widgets.common import AppContext, flush_column, muted, show_error
from gui.widgets.qt_notebook import when

if TYPE_CHECKING:
    from engine.review.browse import CardRow
    from engine.types import Row

CARD_COLUMNS = [
    ("Question", lambda r: short_text(r["row"].question, 70)),
    ("Data set", lambda r: r["row"].card.dataset),
    ("Topic", lambda r: r["row"].card.topic or ""),
    ("Due", lambda r: "suspended" if r["row"].card.suspended else r["due"]),
    ("State", lambda r: r["row"].card.state),
    ("Reps", lambda r: r["row"].card.reps),
    ("Lapses", lambda r: r["row"].card.lapses),
    ("Note", lambda r: short_text(r["row"].note, 40)),
]


class CardsPanel(QWidget):
    """The cards of the profile ``profile()`` names (the Review screen's choice)."""

    def __init__(self, ctx: AppContext, profile: Callable[[], str]) -> None:
        super().__init__()
        self.ctx, self.profile = ctx, profile
        lay = flush_column(self, spacing=10)
        lay.setContentsMargins(0, 10, 0, 0)
        top = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the question, options, topic, data set or note")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.refresh)
        self.count = muted(QLabel(""))
        top.addWidget(self.search, 1)
        top.addWidget(self.count)
        lay.addLayout(top)
        self.model = RowsModel(CARD_COLUMNS)
        self.model.colour = lambda r: "#9ca3af" if r["row"].card.suspended else None
        self.table = table_view(self.model, stretch=0, fit=(1, 2, 3, 4, 5, 6))
        self.table.setSelectionMode(self.table.SelectionMode.SingleSelection)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._enable())
        lay.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.suspend_button = QPushButton("Suspend")
        self.suspend_button.setToolTip("A suspended card is never due until it is unsuspended")
        self.suspend_button.clicked.connect(self.toggle_suspended)
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Make the card new again, due now (its reviews are kept)")
        self.reset_button.clicked.connect(self.reset)
        self.note_button = QPushButton("Edit note…")
        self.note_button.setToolTip("The note on the question (the Notebook's)")
        self.note_button.clicked.connect(self._ask_note)
        for b in (self.suspend_button, self.reset_button, self.note_button):
            buttons.addWidget(b)
        lay.addLayout(buttons)
        self._enable()

    def shown(self) -> None:
        """The tab is shown: the cards may have changed meanwhile."""
        self.refresh()

    def refresh(self) -> None:
        """List the profile's cards that match the search (the selection is kept)."""
        from engine.review.browse import browse

        keep = self.selected()
        found = browse(self.ctx.store, self.profile(), self.search.text())
        rows = [cast("Row", {"row": r, "due": when(r.card.due.isoformat(), True)}) for r in found]
        self.model.set_rows(rows)
        self.count.setText(f"{len(rows)} card{'s' if len(rows) != 1 else ''}")
        if keep is not None:
            place = next((i for i, r in enumerate(found) if r.card.id == keep.card.id), None)
            if place is not None:
                self.table.selectRow(place)
        self._enable()

    def selected(self) -> CardRow | None:
        index = self.table.currentIndex()
        if not index.isValid() or not self.table.selectionModel().hasSelection():
            return None
        return cast("CardRow", self.model.rows[index.row()]["row"])

    def _enable(self) -> None:
        row = self.selected()
        for b in (self.suspend_button, self.reset_button, self.note_button):
            b.setEnabled(row is not None)
        suspended = row is not None and row.card.suspended
        self.suspend_button.setText("Unsuspend" if suspended else "Suspend")

    def toggle_suspended(self) -> None:
        from engine.review.browse import suspend

        row = self.selected()
        if row is not None:
            suspend(self.ctx.store, row.card, not row.card.suspended)
            self._changed("suspended" if row.card.suspended else "unsuspended")

    def reset(self) -> None:
        from engine.review.browse import reset

        row = self.selected()
        if row is not None:
            reset(self.ctx.store, row.card)
            self._changed("reset: new again, due now")

    def _ask_note(self) -> None:
        row = self.selected()
        if row is None:
            return
        text, ok = QInputDialog.getMultiLineText(self, "Note", "Note on this question:", row.note)
        if ok:
            self.set_note(text)

    def set_note(self, text: str) -> None:
        """Write the selected card's note (the Notebook's; empty clears it)."""
        from engine.bank.notebook import set_note

        row = self.selected()
        if row is None:
            return
        card = row.card
        try:
            set_note(
                self.ctx.store, self.profile(), card.activity, card.dataset, card.item_key, text
            )
        except Exception as exc:  # noqa: BLE001 - shown to the person
            show_error(self, exc, self.ctx)
            return
        self._changed("note saved")

    def _changed(self, what: str) -> None:
        self.ctx.status(f"Card {what}")
        self.refresh()
        if self.ctx.window is not None:
            self.ctx.window.update_review_count()
