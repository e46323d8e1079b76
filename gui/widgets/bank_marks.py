"""The notebook on a practice page: a Mark toggle (★, key M) and a one-line Note for the
question shown, and after a miss the "Why did I miss it?" buttons (:class:`MarkBar`); the
question's difficulty in words (:func:`difficulty_words`).

Each change is stored at once by :mod:`engine.bank.notebook`; a note is stored when its
field loses focus, on Enter, and when the question changes or the session ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.bank.notebook import MAX_NOTE, REASONS, entry, mark, set_note, set_reason
from gui.widgets.common import muted, show_error

if TYPE_CHECKING:
    from engine.store.store import Store
    from gui.widgets.common import AppContext

#: The look of a pressed (checked) button of the bar: the app's style gives none.
CHECKED = (
    "QPushButton#mark:checked { background: #fef3c7; border: 1px solid #f59e0b;"
    " color: #92400e; }"
    " QPushButton#reason { padding: 3px 10px; }"
    " QPushButton#reason:checked { background: #eff6ff; border: 1px solid #2563eb;"
    " color: #1d4ed8; }"
)


class NoteEdit(QLineEdit):
    """A one-line field whose Enter is its own (the page's Enter shortcut does not take it)."""

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        ):
            event.accept()
            return True
        return super().event(event)


class MarkBar(QWidget):
    """The Mark button and the Note field of the question shown (:meth:`show_question`);
    :attr:`reasons` is the row of "Why did I miss it?" buttons, placed by the page (under its
    feedback) and shown by :meth:`missed`, its question above its buttons when ``stacked``
    (for a narrow column). :meth:`leave` keeps the note and lets go of the question."""

    def __init__(
        self, ctx: AppContext, activity: str, stacked: bool = False, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.ctx, self.activity = ctx, activity
        self.where: tuple[str, str, str] | None = None  # profile, data set, question key
        self._note = ""  # the note as stored
        self.setStyleSheet(CHECKED)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.mark_button = QPushButton("☆ Mark")
        self.mark_button.setObjectName("mark")
        self.mark_button.setCheckable(True)
        self.mark_button.setToolTip("Mark this question to come back to it (M)")
        self.mark_button.toggled.connect(self._mark_toggled)
        self.note = NoteEdit()
        self.note.setMaxLength(MAX_NOTE)
        self.note.setPlaceholderText("A note on this question (kept as you leave the field)")
        self.note.editingFinished.connect(self.save_note)
        self.note.returnPressed.connect(self.save_note)
        lay.addWidget(self.mark_button)
        lay.addWidget(self.note, 1)
        self.reasons = self._reason_row(stacked)
        self.setEnabled(False)

    def _reason_row(self, stacked: bool) -> QWidget:
        row = QWidget()
        row.setStyleSheet(CHECKED)
        outer = QVBoxLayout(row)
        outer.setContentsMargins(0, 2, 0, 0)
        outer.setSpacing(4)
        lay = QHBoxLayout()
        lay.setSpacing(6)
        (outer if stacked else lay).addWidget(muted(QLabel("Why did I miss it?")))
        outer.addLayout(lay)
        self.reason_buttons: dict[str, QPushButton] = {}
        for key, words in REASONS.items():
            b = QPushButton(words)
            b.setObjectName("reason")
            b.setCheckable(True)
            b.setToolTip("Tag why this one was missed (kept at once; click again to clear)")
            b.clicked.connect(lambda _c=False, k=key: self._reason_clicked(k))  # one at most
            self.reason_buttons[key] = b
            lay.addWidget(b)
        lay.addStretch(1)
        row.setVisible(False)
        return row

    def install_shortcut(self, page: QWidget) -> None:
        """Key M on ``page`` (and its children, but for a text field) toggles the mark."""
        sc = QShortcut(QKeySequence("M"), page)
        sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        sc.activated.connect(self.toggle_mark)

    # -- the question shown -------------------------------------------------------------

    def show_question(self, profile: str, dataset: str, key: str) -> None:
        """Show the stored mark and note of a question (the note of the one before is kept)."""
        self.save_note()
        self.where = (profile, dataset, str(key))
        found = entry(self.ctx.store, profile, dataset, str(key))
        self.mark_button.blockSignals(True)
        self.mark_button.setChecked(bool(found and found.marked))
        self.mark_button.blockSignals(False)
        self._show_mark()
        self._note = found.note if found else ""
        self.note.setText(self._note)
        self._show_reason(found.reason if found else None)
        self.reasons.setVisible(False)
        self.setEnabled(True)

    def missed(self) -> None:
        """The question was missed: offer to say why."""
        if self.where is not None:
            self.reasons.setVisible(True)

    def leave(self) -> None:
        """Keep the note, and let go of the question (the session ended)."""
        self.save_note()
        self.where = None
        self.reasons.setVisible(False)
        self.setEnabled(False)

    # -- changes, stored at once ------------------------------------------------------------

    def toggle_mark(self) -> None:
        if self.where is not None and self.isVisible() and self.isEnabled():
            self.mark_button.toggle()

    def _mark_toggled(self, on: bool) -> None:
        self._show_mark()
        self._store(mark, on)

    def save_note(self) -> None:
        """Store the note when it changed."""
        text = self.note.text().strip()
        if self.where is not None and text != self._note and self._store(set_note, text):
            self._note = text

    def _reason_clicked(self, key: str) -> None:
        if self.where is None:
            return
        found = entry(self.ctx.store, *self.where)
        self._store(set_reason, None if found is not None and found.reason == key else key)
        found = entry(self.ctx.store, *self.where)
        self._show_reason(found.reason if found is not None else None)

    def _store(self, change: Callable[..., object], value: object) -> bool:
        """Make one notebook change for the question shown; True when it was stored."""
        if self.where is None:
            return False
        profile, dataset, key = self.where
        try:
            change(self.ctx.store, profile, self.activity, dataset, key, value)
        except Exception as exc:  # noqa: BLE001 - said in a dialog, the session goes on
            show_error(self, exc, self.ctx, "Not kept in your notebook")
            return False
        return True

    def _show_mark(self) -> None:
        self.mark_button.setText("★ Marked" if self.mark_button.isChecked() else "☆ Mark")

    def _show_reason(self, reason: str | None) -> None:
        for key, b in self.reason_buttons.items():
            b.setChecked(key == reason)


def difficulty_words(store: Store, dataset: str, key: str) -> str:
    """How hard a question is, in words, from every stored answer to it."""
    from engine.bank.difficulty import difficulty

    found = difficulty(store, dataset).get(str(key))
    return f"Difficulty — {found.words() if found is not None else 'no answers yet'}"
