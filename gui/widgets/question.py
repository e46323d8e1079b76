"""What the question pages of the practice screens share: a question's answer options
(:class:`OptionList`, one :class:`OptionButton` each), the card that shows a question over
them (:class:`QuestionCard`), the title and bar of how far a session is
(:func:`position_widgets`) and its clock (:class:`SessionClock`), the keys that choose and strike
options (:func:`option_keys`), and a stored question as HTML (:func:`item_html`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QWidget

from engine.text.options import LETTERS
from gui.widgets.common import Card, esc, flush_column, muted, plain, repolish, selectable

if TYPE_CHECKING:
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QLayout


class ClockedSession(Protocol):
    """What :class:`SessionClock` reads of a session."""

    def elapsed(self) -> float: ...

    def time_left(self) -> float | None: ...


class OptionButton(QFrame):
    """One answer option: a letter badge and its text (wrapped); click to select it,
    right-click to strike it through (an option ruled out) or back.

    Its ``state`` property drives the style: ``""``, ``selected``, ``correct``, ``wrong``,
    ``missed`` (a right option the user did not pick); ``struck`` draws it struck through.
    """

    clicked = Signal(str)
    strike_clicked = Signal(str)

    def __init__(self, letter: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.letter = letter
        self.setObjectName("option")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setProperty("state", "")
        self.setProperty("struck", False)
        self.setToolTip("Click to choose; right-click (or Shift+letter) to strike it through")
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

    @property
    def struck(self) -> bool:
        return bool(self.property("struck"))

    def set_struck(self, struck: bool) -> None:
        self.setProperty("struck", struck)
        repolish(self)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if not self.locked and event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.letter)
        elif not self.locked and event.button() == Qt.MouseButton.RightButton:
            self.strike_clicked.emit(self.letter)
        super().mousePressEvent(event)


class OptionList(QWidget):
    """The options of a question; one answer (``multi=False``) or several.

    Keyboard: the screens add :func:`option_keys` (a–e and 1–5 choose, Shift+letter
    strikes through). A struck option is not chosen; choosing it takes the stroke away.
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
            b.strike_clicked.connect(self.strike)
            self.lay.addWidget(b)
            self.buttons[letter] = b
        self.selection_changed.emit()

    def toggle(self, letter: str) -> None:
        if letter not in self.buttons or self.buttons[letter].locked:
            return
        b = self.buttons[letter]
        if b.struck:
            b.set_struck(False)
        if self.multi:
            b.set_state("" if b.state == "selected" else "selected")
        else:
            for other in self.buttons.values():
                other.set_state("selected" if other is b else "")
        self.selection_changed.emit()

    def strike(self, letter: str) -> None:
        """Strike option ``letter`` through (ruled out: no longer chosen), or back."""
        b = self.buttons.get(letter)
        if b is None or b.locked:
            return
        b.set_struck(not b.struck)
        if b.struck and b.state == "selected":
            b.set_state("")
            self.selection_changed.emit()

    def press(self, i: int, how: str = "letter") -> None:
        """Choose the ``i``-th option, or strike it through (``how`` = ``strike``), as the
        keys of :func:`option_keys` do."""
        letters = list(self.buttons)
        if 0 <= i < len(letters):
            (self.strike if how == "strike" else self.toggle)(letters[i])

    def struck(self) -> list[str]:
        return [k for k, b in self.buttons.items() if b.struck]

    def set_chosen(self, chosen: list[str], struck: Sequence[str] = ()) -> None:
        """Choose exactly ``chosen`` and strike ``struck`` (a question shown again)."""
        for letter, b in self.buttons.items():
            b.set_struck(letter in struck)
            b.set_state("selected" if letter in chosen else "")
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


def option_keys(page: QWidget, press: Callable[[int, str], None]) -> None:
    """The option keys of a question page (and its children, but for a text field): each
    calls ``press(i, how)`` with the option's place (0 for a) and how it was pressed:
    ``letter`` (a–e), ``number`` (1–5) or ``strike`` (Shift+a–e)."""
    keys = [(letter, i, "letter") for i, letter in enumerate("ABCDE")]
    keys += [(str(i + 1), i, "number") for i in range(5)]
    keys += [(f"Shift+{letter}", i, "strike") for i, letter in enumerate("ABCDE")]
    for key, i, how in keys:  # "B" also matches the b key
        sc = QShortcut(QKeySequence(key), page)
        sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        sc.activated.connect(lambda i=i, how=how: press(i, how))


def clock_text(seconds: float) -> str:
    """``mm:ss`` (``h:mm:ss`` from an hour)."""
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class SessionClock(QLabel):
    """A question page's clock: the time on the question shown, then the session's total or,
    in a timed exam, the time left (red in the last minute); ``time_up`` once that is 0.

    :meth:`new_question` starts the question's clock, :meth:`freeze` shows a fixed time (the
    question answered, or an earlier one looked at again), :meth:`resume` goes back to the
    running one."""

    time_up = Signal()

    def __init__(self) -> None:
        super().__init__("00:00")
        self.setObjectName("timer")
        self.setToolTip("Time on this question · total (or left, in a timed exam)")
        self.session: ClockedSession | None = None
        self.shown_at = time.monotonic()
        self.frozen: float | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(500)
        self.timer.timeout.connect(self.tick)

    def start(self, session: ClockedSession) -> None:
        self.session = session
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def new_question(self) -> None:
        self.shown_at, self.frozen = time.monotonic(), None
        self.tick()

    def freeze(self, seconds: float | None) -> None:
        self.frozen = seconds or 0.0
        self.tick()

    def resume(self) -> None:
        self.frozen = None
        self.tick()

    def tick(self) -> None:
        s = self.session
        if s is None:
            return
        q = clock_text(self.frozen if self.frozen is not None else time.monotonic() - self.shown_at)
        left = s.time_left()
        if left is None:
            self.setText(f"{q} · {clock_text(s.elapsed())}")
            return
        self.setText(f"{q} · {clock_text(left)} left")
        self.setStyleSheet("color: #b91c1c;" if left < 60 else "")
        if left <= 0:
            self.time_up.emit()


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
        pairs = list(zip(LETTERS, options, strict=False))
    lines = "".join(f"<div style='margin-left:10px'>{k}. {esc(v)}</div>" for k, v in pairs)
    return f"<p style='margin-bottom:2px'><b>{esc(item.get('question', ''))}</b></p>{lines}"
