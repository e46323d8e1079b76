"""Rate explanations: a person rates the explanations of model runs from 1 to 5 on the five
perspectives of the ExplainCPE paper (Table 4), blind (the model is not named, the answers
of several runs come mixed in the session's seeded order). A view over
:class:`engine.ratings.people.RatingSession`: each rating is stored as it is given, and the
same runs opened again by the same rater go on with what is not rated yet.

Keyboard: 1–5 rate the highlighted row and move to the next one, Tab and Shift+Tab move
between rows, Enter stores the ratings and shows the next answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.ratings.people import MAX_COMMENT, RatingSession
from engine.ratings.perspectives import HIGHEST, LOWEST, PERSPECTIVES, Perspective
from engine.review.profiles import profiles
from engine.text.columns import visible
from engine.types import Explained
from gui.widgets.common import (
    AppContext,
    current_profile,
    esc,
    muted,
    primary,
    repolish,
    selectable,
    show_error,
    text_view,
)
from gui.widgets.question import position_widgets

if TYPE_CHECKING:
    from collections.abc import Sequence

    from PySide6.QtGui import QFocusEvent

    from engine.ratings.people import Entry

#: The order the answers come in: the CLI's default seed, so `medexam rate` and the app
#: go through the same runs in the same order (and resume each other's sessions).
SEED = 0
SCORES = range(LOWEST, HIGHEST + 1)
DIGITS = {str(n): n for n in SCORES}
TITLE = "Rate explanations"
STYLE = """
QDialog#rate { background: #f4f5f7; }
QFrame#rateRow { background: #ffffff; border: 1px solid #e2e5ea; border-radius: 8px; }
QFrame#rateRow[current="true"] { background: #eff6ff; border: 1px solid #60a5fa; }
QPushButton#score { min-width: 30px; max-width: 30px; padding: 5px 0; font-weight: 600; }
QPushButton#score:checked { background: #2563eb; color: #ffffff; border: 1px solid #1d4ed8; }
QLabel#doneTitle { font-size: 15pt; font-weight: 600; color: #111827; }
"""


class ScoreRow(QFrame):
    """One perspective: its name and question, and five toggle buttons 1–5. While the row
    has focus, keys 1–5 rate it (``rated`` then asks for the next row); ``changed`` follows
    every change of its rating, ``focused`` its getting the keyboard focus."""

    rated = Signal()
    changed = Signal()
    focused = Signal()

    def __init__(self, perspective: Perspective, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.perspective = perspective
        self.setObjectName("rateRow")
        self.setProperty("current", False)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 4, 10, 4)
        lay.setSpacing(6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.label, 1)
        self.group = QButtonGroup(self)
        for n in SCORES:
            b = QPushButton(str(n))
            b.setObjectName("score")
            b.setCheckable(True)
            b.setAutoDefault(False)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.setToolTip(f"{perspective.name}: {n} (key {n})")
            self.group.addButton(b, n)
            lay.addWidget(b)
        self.group.idClicked.connect(self._clicked)
        self.set_language("en")

    def set_language(self, language: str) -> None:
        """Ask the question in English, and in Chinese too for a Chinese answer."""
        p = self.perspective
        zh = f" <span style='color:#6b7280'>{esc(p.question_zh)}</span>" if language == "zh" else ""
        self.label.setText(f"<b>{esc(p.name)}</b> · {esc(p.question)}{zh}")

    @property
    def value(self) -> int | None:
        """The rating given (1–5), None before one is."""
        found = self.group.checkedId()
        return found if found in SCORES else None

    def set_value(self, value: int | None) -> None:
        if value is None:
            self.group.setExclusive(False)  # an exclusive group cannot have none checked
            for b in self.group.buttons():
                b.setChecked(False)
            self.group.setExclusive(True)
        else:
            self.group.button(value).setChecked(True)
        self.changed.emit()

    def _clicked(self, _value: int) -> None:
        self.setFocus(Qt.FocusReason.MouseFocusReason)
        self.changed.emit()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        value = DIGITS.get(event.text())
        if value is None or event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            super().keyPressEvent(event)  # Enter, Escape: the dialog's
            return
        self.set_value(value)
        self.rated.emit()

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        self.mark(True)
        self.focused.emit()
        super().focusInEvent(event)

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        self.mark(False)
        super().focusOutEvent(event)

    def mark(self, current: bool) -> None:
        """Highlight the row as the one the keys rate (or not)."""
        if bool(self.property("current")) != current:
            self.setProperty("current", current)
            repolish(self)


def shown(text: str) -> str:
    """Imported text as HTML with its control characters written as their escapes
    (``\\u202e``, ``\\x1b``, as the CLI shows them), so none reorders or hides what follows."""
    return esc(visible(text, newlines=True))


def question_html(e: Explained) -> str:
    """The question as the rater reads it: the question, its options, the right answer and
    the reference explanation (when there is one)."""
    options = "".join(
        f"<div style='margin-left:10px'>{esc(letter)}. {shown(text)}</div>"
        for letter, text in e.options
    )
    parts = [
        f"<p style='margin-bottom:4px'><b>{shown(e.question)}</b></p>{options}",
        f"<p style='margin-top:10px'>Right answer: <b>{shown(e.gold_shown)}</b></p>",
    ]
    if e.gold_explanation.strip():
        parts.append(
            "<p style='color:#4b5563;margin-bottom:2px'>Reference explanation</p>"
            f"<p style='white-space:pre-wrap;margin-top:0'>{shown(e.gold_explanation.strip())}</p>"
        )
    return "".join(parts)


def answer_html(e: Explained) -> str:
    """The answer given and its explanation (the text rated)."""
    return (
        f"<p>Answer given: <b>{shown(e.answer_shown)}</b></p>"
        "<p style='color:#4b5563;margin-bottom:2px'>Explanation given</p>"
        f"<p style='white-space:pre-wrap;margin-top:0'>{shown(e.explanation.strip())}</p>"
    )


class RateDialog(QDialog):
    """The rating view over ``session`` (non-modal): the rater and how far they are, the
    answer to rate, five rows of ratings, a comment, Skip and Next."""

    def __init__(self, ctx: AppContext, session: RatingSession, parent: QWidget) -> None:
        super().__init__(parent)
        self.ctx, self.session = ctx, session
        self.entry: Entry | None = None
        self.setObjectName("rate")
        self.setWindowTitle(TITLE)
        self.setModal(False)
        self.stored = 0  # answers rated or skipped in this dialog
        self.finished.connect(self._closed)
        self.setStyleSheet(STYLE)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 16, 20, 16)
        lay.setSpacing(10)
        lay.addLayout(self._top_bar())
        self.stack = QStackedWidget()
        self.stack.addWidget(self._rating_page())
        self.stack.addWidget(self._done_page())
        lay.addWidget(self.stack, 1)
        self._fit_screen()
        window = ctx.window_widget()
        if window is not None:
            window.installEventFilter(self)  # closes with the main window
        self.show_next()

    # -- layout ----------------------------------------------------------------------------

    def _top_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        bar.setSpacing(8)
        self.rater = QComboBox()
        self.rater.setEditable(True)
        self.rater.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.rater.setMinimumWidth(200)
        self.rater.setToolTip(
            "Who rates: a review profile, or any name typed (each rater's ratings are kept"
            " apart; the same name goes on where it stopped)"
        )
        self.rater.addItems(profiles(self.ctx.store))
        self.rater.setCurrentText(self.session.rater)
        self.rater.activated.connect(lambda _i: self.change_rater())
        edit = self.rater.lineEdit()  # an editable box has one; Qt's stubs say it may not
        edit.editingFinished.connect(self.change_rater)  # type: ignore[union-attr]
        edit.installEventFilter(self)  # type: ignore[union-attr]
        self.title, self.bar = position_widgets(220)
        bar.addWidget(QLabel("Rater"))
        bar.addWidget(self.rater)
        bar.addSpacing(16)
        bar.addWidget(self.title)
        bar.addStretch(1)
        bar.addWidget(self.bar, 1)
        return bar

    def _rating_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        self.question_view, self.answer_view = text_view(150), text_view(150)
        for view in (self.question_view, self.answer_view):
            view.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # Tab goes from row to row
            split.addWidget(view)
        lay.addWidget(split, 1)
        lay.addWidget(
            muted(
                selectable(
                    QLabel(
                        "Rate the explanation given from 1 (not at all) to 5 (fully). Keys 1–5"
                        " rate the highlighted row, Tab moves between rows, Enter stores the"
                        " ratings and shows the next answer."
                    )
                )
            )
        )
        self.rows = [ScoreRow(p) for p in PERSPECTIVES]
        for i, row in enumerate(self.rows):
            row.changed.connect(self._update_next)
            row.rated.connect(lambda i=i: self._advance(i))
            row.focused.connect(lambda i=i: self._highlight(i))
            lay.addWidget(row)
        self.comment = QLineEdit()
        self.comment.setPlaceholderText(f"Comment (optional, at most {MAX_COMMENT} characters)")
        self.comment.setMaxLength(MAX_COMMENT)
        self.comment.setClearButtonEnabled(True)
        lay.addWidget(self.comment)
        buttons = QHBoxLayout()
        buttons.addWidget(muted(QLabel("Each rating is stored at once: close any time.")), 1)
        self.skip_button = QPushButton("Skip")
        self.skip_button.setToolTip("Leave this answer unrated (it is not asked again)")
        self.skip_button.setAutoDefault(False)
        self.next_button = primary(QPushButton("Next"))
        self.next_button.setToolTip("Store the five ratings and show the next answer (Enter)")
        self.skip_button.clicked.connect(self.skip)
        self.next_button.clicked.connect(self.next)
        buttons.addWidget(self.skip_button)
        buttons.addWidget(self.next_button)
        lay.addLayout(buttons)
        for first, second in zip(
            [*self.rows, self.comment, self.skip_button],
            [*self.rows[1:], self.comment, self.skip_button, self.next_button],
            strict=True,
        ):
            QWidget.setTabOrder(first, second)
        return page

    def _done_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.addStretch(1)
        self.done_title = QLabel("")
        self.done_title.setObjectName("doneTitle")
        self.done_title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.done_note = muted(QLabel(""))
        self.done_note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.done_note.setWordWrap(True)
        self.close_button = primary(QPushButton("Close"))
        self.close_button.clicked.connect(self.close)
        lay.addWidget(self.done_title)
        lay.addWidget(self.done_note)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.close_button)
        row.addStretch(1)
        lay.addSpacing(12)
        lay.addLayout(row)
        lay.addStretch(2)
        return page

    def _fit_screen(self) -> None:
        """A size that leaves the answer room, within the screen (1280×800 and up); never
        so small that the rows squeeze the texts out."""
        self.setMinimumSize(860, 600)
        width, height = 1180, 760
        screen = self.screen()
        if screen is not None:
            free = screen.availableGeometry()
            width, height = min(width, free.width() - 40), min(height, free.height() - 40)
        self.resize(width, height)

    # -- what is shown ---------------------------------------------------------------------

    def show_next(self) -> None:
        """Show the session's next answer to rate, or say that all are done."""
        self.entry = self.session.next()
        if self.entry is None:
            self._show_done()
            return
        self.stack.setCurrentIndex(0)
        self.next_button.setDefault(True)
        e = self.entry.explained
        self.question_view.setHtml(question_html(e))
        self.answer_view.setHtml(answer_html(e))
        for row in self.rows:
            row.set_language(e.language)
            row.set_value(None)
        self.comment.clear()
        self._show_position()
        self.rows[0].setFocus(Qt.FocusReason.OtherFocusReason)

    def _show_position(self) -> None:
        rated, skipped = self.session.rated, self.session.skipped
        total = self.session.total
        where = (
            f"Explanation {self.session.position(self.entry)} of {total}"
            if self.entry is not None
            else f"{total} explanations"
        )
        self.title.setText(
            f"{where} · {rated} rated"
            + (f" · {skipped} skipped" if skipped else "")
            + self._drawn_text()
        )
        self.bar.setRange(0, total)
        self.bar.setValue(rated + skipped)

    def _drawn_text(self) -> str:
        """Where the rater stands in the answers drawn at random to check the judges."""
        left = self.session.drawn_left
        if not left:
            return f" · all {len(self.session.drawn)} drawn to check the judges rated"
        mark = "this one drawn" if self.entry and self.session.is_drawn(self.entry) else "drawn"
        return f" · {mark} to check the judges: {left} left"

    def _show_done(self) -> None:
        self.stack.setCurrentIndex(1)
        self.close_button.setDefault(True)
        self._show_position()
        rated, skipped = self.session.rated, self.session.skipped
        total, who = self.session.total, self.session.rater
        self.done_title.setText(
            f"All {total} explanations rated by {who}"
            if not skipped
            else f"All {total} explanations done by {who}: {rated} rated, {skipped} skipped"
        )
        self.done_note.setText(
            "Every rating is stored with its run. Another rater can rate the same runs:"
            " type their name above."
        )
        self.close_button.setFocus(Qt.FocusReason.OtherFocusReason)

    def ratings(self) -> dict[str, int | None]:
        """The ratings given so far, by perspective key."""
        return {row.perspective.key: row.value for row in self.rows}

    def _update_next(self) -> None:
        self.next_button.setEnabled(
            self.entry is not None and all(v is not None for v in self.ratings().values())
        )

    def _highlight(self, i: int) -> None:
        """Row ``i`` has the focus: it alone is highlighted (a focus lost while the dialog
        was not the active window may not have been told to its row)."""
        for j, row in enumerate(self.rows):
            row.mark(j == i)

    def _advance(self, i: int) -> None:
        """Row ``i`` was rated by key: the next row (the comment after the last) comes next."""
        following = self.rows[i + 1] if i + 1 < len(self.rows) else self.comment
        following.setFocus(Qt.FocusReason.TabFocusReason)

    # -- actions ---------------------------------------------------------------------------

    def next(self) -> None:
        """Store the five ratings (and the comment) of the answer shown; show the next one."""
        if self.entry is None or not self.next_button.isEnabled():
            return
        try:
            self.session.rate(self.entry, self.ratings(), self.comment.text())
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx, TITLE)
            return
        self.stored += 1
        self.show_next()

    def skip(self) -> None:
        """Store that the answer shown is skipped (with the comment, if any); show the next."""
        if self.entry is None:
            return
        try:
            self.session.skip(self.entry, self.comment.text())
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx, TITLE)
            return
        self.stored += 1
        self.show_next()

    def change_rater(self) -> None:
        """Open the session again for the rater named in the combo box (their own ratings:
        a rater seen before goes on where they stopped)."""
        name = self.rater.currentText().strip()
        if name == self.session.rater:
            return
        try:
            session = RatingSession(self.ctx.store, self.session.run_ids, name, SEED)
        except Exception as exc:  # noqa: BLE001
            self.rater.setCurrentText(self.session.rater)
            show_error(self, exc, self.ctx, TITLE)
            return
        self.session = session
        self.rater.setCurrentText(session.rater)
        self.show_next()

    def _closed(self, _result: int) -> None:
        """Ratings are scores of their runs: the screens showing runs read them again. The
        event filters go (a closed dialog is not shown again): at the app's exit, a filter
        left in place was called by its line edit's destructor, half torn down, and crashed."""
        self.rater.lineEdit().removeEventFilter(self)  # type: ignore[union-attr]  # editable
        window = self.ctx.window_widget()
        if window is not None:
            window.removeEventFilter(self)
        if self.stored and (window is None or window.isVisible()):
            self.stored = 0
            self.ctx.notify_runs()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        """Enter in the rater's name changes the rater (and stores nothing); the dialog
        closes with the main window."""
        if watched is self.rater.lineEdit() and isinstance(event, QKeyEvent):
            enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            if enter and event.type() == QEvent.Type.KeyPress:
                self.change_rater()
                return True
        elif watched is self.ctx.window_widget() and event.type() == QEvent.Type.Close:
            self.close()
        return super().eventFilter(watched, event)


def open_rating(
    parent: QWidget,
    ctx: AppContext,
    run_ids: Sequence[int],
    replacing: RateDialog | None = None,
    rater: str | None = None,
) -> RateDialog | None:
    """Open the rating view over runs ``run_ids`` for ``rater`` (default: the review
    profile in use), in place of the view ``replacing`` (closed); None, after a one-line
    error, when the runs have nothing to rate."""
    if replacing is not None:
        replacing.close()
        replacing.deleteLater()
    try:
        session = RatingSession(ctx.store, list(run_ids), rater or current_profile(ctx), SEED)
    except Exception as exc:  # noqa: BLE001
        show_error(parent, exc, ctx, TITLE)
        return None
    dialog = RateDialog(ctx, session, parent)
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()  # its keys work at once, without a click into it first
    return dialog
