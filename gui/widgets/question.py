"""What the question pages of the practice screens share: a question's answer options
(:class:`OptionList`, one :class:`OptionButton` each), the card that shows a question over
them (:class:`QuestionCard`), the title and bar of how far a session is
(:func:`position_widgets`), and a stored question as HTML (:func:`item_html`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QWidget

from gui.widgets.common import Card, esc, flush_column, muted, plain, repolish, selectable

if TYPE_CHECKING:
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QLayout


class OptionButton(QFrame):
    """One answer option: a letter badge and its text (wrapped); click to select it.

    Its ``state`` property drives the style: ``""``, ``selected``, ``correct``, ``wrong``,
    ``missed`` (a right option the user did not pick).
    """

    clicked = Signal(str)

    def __init__(self, letter: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.letter = letter
        self.setObjectName("option")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setProperty("state", "")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 9, 12, 9)
        lay.setSpacing(12)
        self.badge = QLabel(letter.upper())
        self.badge.setObjectName("badge")
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.badge.setFixedSize(28, 28)
        self.label = QLabel(text)
        self.label.setObjectName("optionText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
        lay.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.label, 1)
        self.locked = False

    def set_state(self, state: str) -> None:
        self.setProperty("state", state)
        repolish(self)

    @property
    def state(self) -> str:
        return str(self.property("state") or "")

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if not self.locked and event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.letter)
        super().mousePressEvent(event)


class OptionList(QWidget):
    """The options of a question; one answer (``multi=False``) or several.

    Keyboard: the option letters select (when the list has focus or via shortcuts the
    screen adds).
    """

    selection_changed = Signal()

    def __init__(self, multi: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.multi = multi
        self.lay = flush_column(self, spacing=8)
        self.buttons: dict[str, OptionButton] = {}

    def set_options(self, options: list[tuple[str, str]]) -> None:
        for b in self.buttons.values():
            b.setParent(None)
            b.deleteLater()
        self.buttons = {}
        for letter, text in options:
            b = OptionButton(letter, text)
            b.clicked.connect(self.toggle)
            self.lay.addWidget(b)
            self.buttons[letter] = b
        self.selection_changed.emit()

    def toggle(self, letter: str) -> None:
        if letter not in self.buttons or self.buttons[letter].locked:
            return
        b = self.buttons[letter]
        if self.multi:
            b.set_state("" if b.state == "selected" else "selected")
        else:
            for other in self.buttons.values():
                other.set_state("selected" if other is b else "")
        self.selection_changed.emit()

    def selected(self) -> list[str]:
        return [k for k, b in self.buttons.items() if b.state == "selected"]

    def reveal(self, gold: list[str] | str, chosen: list[str] | str | None) -> None:
        """Show which options were right; lock the list."""
        gold_set = {g.lower() for g in gold}
        chosen_set = {c.lower() for c in (chosen or [])}
        for letter, b in self.buttons.items():
            key = letter.lower()
            b.locked = True
            b.setCursor(Qt.CursorShape.ArrowCursor)
            if key in gold_set:
                b.set_state("correct" if key in chosen_set or not self.multi else "missed")
            elif key in chosen_set:
                b.set_state("wrong")
            else:
                b.set_state("")

    def lock(self) -> None:
        for b in self.buttons.values():
            b.locked = True
            b.setCursor(Qt.CursorShape.ArrowCursor)


class QuestionCard(Card):
    """A question (selectable, wrapped) over its options; ``head`` goes above the question,
    ``hint`` (a muted line) between it and the options. Add what comes after with
    :meth:`~gui.widgets.common.Card.add`."""

    def __init__(
        self, multi: bool = False, text: str = "", head: QLayout | None = None, hint: str = ""
    ) -> None:
        super().__init__()
        if head is not None:
            self.add_layout(head)
        self.question = plain(selectable(QLabel(text), "question"))
        self.add(self.question)
        if hint:
            self.add(muted(QLabel(hint)))
        self.options = OptionList(multi=multi)
        self.add(self.options)


def position_widgets(bar_width: int) -> tuple[QLabel, QProgressBar]:
    """A question page's "Question i of n" title and a thin bar of the session's progress,
    at most ``bar_width`` wide (see :func:`show_position`)."""
    title = QLabel("")
    title.setObjectName("cardTitle")
    bar = QProgressBar()
    bar.setTextVisible(False)
    bar.setMaximumWidth(bar_width)
    return title, bar


def show_position(title: QLabel, bar: QProgressBar, index: int, total: int, done: int) -> None:
    """Question ``index`` (from 0) of ``total`` in ``title``; ``done`` of them in ``bar``."""
    title.setText(f"Question {index + 1} of {total}")
    bar.setRange(0, total)
    bar.setValue(done)


def item_html(item: dict[str, Any] | None) -> str:
    """The question of an answer, as it was asked: exam and French options, or a case's
    opening request."""
    if not item:
        return ""
    if "initial_request" in item:  # a consultation case
        return f"<p style='color:#374151'><i>“{esc(item['initial_request'])}”</i></p>"
    options = item.get("options") or item.get("answers") or []
    if isinstance(options, dict):
        pairs = [(k.upper(), v) for k, v in options.items()]
    else:
        pairs = list(zip("ABCDE", options, strict=False))
    lines = "".join(f"<div style='margin-left:10px'>{k}. {esc(v)}</div>" for k, v in pairs)
    return f"<p style='margin-bottom:2px'><b>{esc(item.get('question', ''))}</b></p>{lines}"
