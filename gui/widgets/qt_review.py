"""The Review screen: the cards due now for a profile (picked at the top), a review session
with feedback, the gold explanation and the FSRS rating, charts of due cards per day and
mastery by topic, and an export to Anki; beside it the profile's Cards (a card browser:
:mod:`gui.widgets.qt_cards`), Notebook (:mod:`gui.widgets.qt_notebook`) and Where I stand
(:mod:`gui.widgets.qt_standing`) tabs.

The work is quick SQLite reads and writes, done on the UI thread's store.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCharts import QBarSeries, QBarSet, QChart, QValueAxis
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QWidget,
)

from gui.models import set_setting, setting
from gui.widgets import charts
from gui.widgets.common import (
    AppContext,
    Card,
    Header,
    flush_column,
    muted,
    page_column,
    plain,
    primary,
    repolish,
    say_verdict,
    selectable,
    show_error,
)
from gui.widgets.qt_cards import CardsPanel
from gui.widgets.qt_notebook import NotebookPanel
from gui.widgets.qt_standing import StandingPanel
from gui.widgets.question import QuestionCard, option_keys

if TYPE_CHECKING:
    from engine.review.queue import ReviewFeedback, ReviewSession, Shown
    from engine.review.stats import DayDue, Mastery
    from engine.store.store import Store
    from engine.types import JSONDict

RATINGS = ("again", "hard", "good", "easy")
RATING_TIPS = {
    "again": "Not known: see it again in a minute",
    "hard": "Known with difficulty: a shorter interval",
    "good": "Known: the usual interval",
    "easy": "Known at once: a longer interval",
}
MASTERY_ROWS = 10


def current_profile() -> str:
    """The profile picked on the Review screen (remembered between starts)."""
    from engine.review.profiles import DEFAULT_PROFILE

    return str(setting("review/profile", DEFAULT_PROFILE) or DEFAULT_PROFILE)


def nav_label(store: Store) -> str:
    """The sidebar's label for the Review screen, with the cards due now."""
    from engine.review import due_cards
    from engine.review.profiles import profiles

    profile = current_profile()
    if profile not in profiles(store):
        return "Review"
    n = len(due_cards(store, profile))
    return f"Review  ({n} due)" if n else "Review"


def due_chart(days: list[DayDue]) -> QChart:
    """Bars of the cards due on each of the next days (today holds the overdue ones)."""
    chart = charts._chart("Cards due per day")
    bar_set = QBarSet("Due")
    bar_set.setColor(QColor(charts.PALETTE[0]))
    labels = []
    for day in days:
        bar_set.append(float(day["due"]))
        labels.append(str(date.fromisoformat(day["date"]).day))
    series = QBarSeries()
    series.append(bar_set)
    series.setBarWidth(0.7)
    y = QValueAxis()
    most = max((d["due"] for d in days), default=0)
    y.setRange(0, max(4, -(-(most + 1) // 4) * 4))  # a multiple of 4: whole-number ticks
    y.setLabelFormat("%d")
    y.setTickCount(5)
    y.setTitleText("Cards")
    x = charts.add_bars(chart, series, labels, y)
    x.setTitleText("Day of the month, from today")
    chart.legend().setVisible(False)
    return chart


def mastery_rows(mastery: Mastery) -> list[tuple[str, float, int]]:
    """The weakest topics first: ``(activity · topic, mastery %, cards)``, each card under
    the topic it is labelled with."""
    from engine.activities import activity_name
    from engine.review.stats import TOPIC

    rows: list[tuple[str, float, int]] = []
    for activity, fields in mastery.items():
        for value, cell in (fields.get(TOPIC) or {}).items():  # as the cards are labelled
            if (percent := cell["mastery"]) is not None:  # a cell has a card: it has one
                rows.append((f"{activity_name(activity)} · {value}", percent, cell["n"]))
    rows.sort(key=lambda r: (r[1], -r[2]))
    return list(reversed(rows[:MASTERY_ROWS]))  # a horizontal chart draws bottom up


class ReviewScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.session: ReviewSession | None = None
        self.current: Shown | None = None
        self.feedback: ReviewFeedback | None = None
        header = Header(
            "Review",
            "The questions you answer come back when they are due, scheduled with FSRS (the "
            "scheduler Anki uses): missed ones within minutes, known ones days later.",
        )
        lay = page_column(self, header, margins=(24, 20, 24, 16))
        lay.addLayout(self._top_bar())
        self.stack = QStackedWidget()
        self.stack.addWidget(self._overview_page())
        self.stack.addWidget(self._session_page())
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.stack, "Review")
        self.cards = CardsPanel(ctx, lambda: self.profile_name)
        self.tabs.addTab(self.cards, "Cards")
        self.notebook = NotebookPanel(ctx, lambda: self.profile_name)
        self.tabs.addTab(self.notebook, "Notebook")
        self.standing = StandingPanel(ctx, lambda: self.profile_name)
        self.tabs.addTab(self.standing, "Where I stand")
        self.tabs.currentChanged.connect(self._tab_changed)
        lay.addWidget(self.tabs, 1)
        self._shortcuts()
        ctx.runs_changed.append(self.refresh)
        ctx.runs_changed.append(self._refresh_tab)
        self.reload_profiles()

    # -- layout ----------------------------------------------------------------------------

    def _top_bar(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setSpacing(10)
        row.addWidget(QLabel("Profile"))
        self.profile = QComboBox()
        self.profile.setMinimumWidth(160)
        self.profile.setToolTip("Whose cards: each person has their own")
        self.profile.currentTextChanged.connect(self._profile_changed)
        row.addWidget(self.profile)
        self.new_profile_button = QPushButton("New…")
        self.new_profile_button.setToolTip("Add a profile for another person")
        self.new_profile_button.clicked.connect(self._ask_profile)
        row.addWidget(self.new_profile_button)
        row.addSpacing(16)
        self.due_label = QLabel("")
        self.due_label.setObjectName("cardTitle")
        row.addWidget(self.due_label)
        row.addStretch(1)
        self.only_missed = QCheckBox("Only missed")
        self.only_missed.setToolTip("Export only the questions whose latest answer was wrong")
        row.addWidget(self.only_missed)
        self.export_button = QPushButton("Export to Anki…")
        self.export_button.setToolTip("Write an Anki package (.apkg): a deck per activity")
        self.export_button.clicked.connect(self._ask_export)
        row.addWidget(self.export_button)
        self.start_button = primary(QPushButton("Review now"))
        self.start_button.clicked.connect(self.start)
        row.addWidget(self.start_button)
        return row

    def _overview_page(self) -> QWidget:
        page = QWidget()
        lay = flush_column(page)
        self.summary = muted(QLabel(""))
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        row = QHBoxLayout()
        days = Card()
        self.due_view = charts.view()
        days.add(self.due_view, 1)
        topics = Card()
        self.mastery_view = charts.view()
        topics.add(self.mastery_view, 1)
        row.addWidget(days, 1)
        row.addWidget(topics, 1)
        lay.addLayout(row, 1)
        return page

    def _session_page(self) -> QWidget:
        page = QWidget()
        lay = flush_column(page)
        top = QHBoxLayout()
        self.position = QLabel("")
        self.position.setObjectName("cardTitle")
        self.kind = QLabel("")
        self.kind.setObjectName("pill")
        top.addWidget(self.position)
        top.addStretch(1)
        top.addWidget(self.kind)
        lay.addLayout(top)
        card = QuestionCard()
        self.question, self.options = card.question, card.options
        self.options.selection_changed.connect(self._enable)
        lay.addWidget(card)
        self.feedback_card = Card()
        self.verdict = QLabel("")
        self.explanation = plain(selectable(QLabel("")))
        self.feedback_card.add(self.verdict)
        self.feedback_card.add(self.explanation)
        lay.addWidget(self.feedback_card)
        lay.addStretch(1)
        buttons = QHBoxLayout()
        self.end_button = QPushButton("End review")
        self.end_button.clicked.connect(self.end)
        buttons.addWidget(self.end_button)
        self.hint = muted(QLabel(""))
        buttons.addWidget(self.hint, 1)
        self.check_button = primary(QPushButton("Check answer"))
        self.check_button.clicked.connect(self.check)
        buttons.addWidget(self.check_button)
        self.skip_button = QPushButton("Don't know")
        self.skip_button.clicked.connect(lambda: self.check(skip=True))
        buttons.addWidget(self.skip_button)
        self.rate_buttons: dict[str, QPushButton] = {}
        for i, name in enumerate(RATINGS, start=1):
            button = QPushButton(f"{i} {name.capitalize()}")
            button.setToolTip(RATING_TIPS[name])
            button.clicked.connect(lambda _=False, n=name: self.rate(n))
            buttons.addWidget(button)
            self.rate_buttons[name] = button
        lay.addLayout(buttons)
        return page

    def _shortcuts(self) -> None:
        option_keys(self, self._key_option)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(self._key_enter)

    def _key_option(self, i: int, how: str) -> None:
        """a–e and 1–5 choose an option; once answered, 1–4 rate."""
        if self.stack.currentIndex() != 1:
            return
        if self.feedback is None:
            self.options.press(i, how)
        elif how == "number" and i < len(RATINGS):
            self.rate(RATINGS[i])

    def _key_enter(self) -> None:
        if self.stack.currentIndex() != 1:
            return
        if self.feedback is None:
            self.check()
        else:
            self.rate(self.feedback.suggested)

    # -- profiles and overview -------------------------------------------------------------

    def reload_profiles(self, select: str | None = None) -> None:
        from engine.review.profiles import profiles

        wanted = select or current_profile()
        names = profiles(self.ctx.store)
        self.profile.blockSignals(True)
        self.profile.clear()
        self.profile.addItems(names)
        self.profile.setCurrentText(wanted if wanted in names else names[0])
        self.profile.blockSignals(False)
        self._profile_changed(self.profile.currentText())

    def add_profile(self, name: str) -> None:
        """Create profile ``name`` and switch to it."""
        from engine.review.profiles import add_profile

        self.reload_profiles(add_profile(self.ctx.store, name))

    def _ask_profile(self) -> None:
        name, ok = QInputDialog.getText(self, "New profile", "Name of the person:")
        if ok and name.strip():
            try:
                self.add_profile(name)
            except Exception as exc:  # noqa: BLE001 - shown to the person
                show_error(self, exc, self.ctx)

    def _profile_changed(self, name: str) -> None:
        if not name:
            return
        set_setting("review/profile", name)
        self.end()
        self._refresh_tab()

    @property
    def profile_name(self) -> str:
        return self.profile.currentText()

    def shown(self) -> None:
        """Called when the screen is shown: the counts may have changed meanwhile."""
        if self.session is None:
            self.refresh()
        self._refresh_tab()

    def _tab_changed(self, index: int) -> None:
        for widget in (self.due_label, self.only_missed, self.export_button, self.start_button):
            widget.setVisible(index == 0)
        if index == 0 and self.session is None:
            self.refresh()  # cards suspended or reset on the Cards tab change what is due
        self._refresh_tab()

    def _refresh_tab(self) -> None:
        """Refresh the Cards, Notebook or Where I stand tab when it is the one on screen."""
        panel = self.tabs.currentWidget()
        if self.isVisible() and isinstance(panel, CardsPanel | NotebookPanel | StandingPanel):
            panel.shown()

    def refresh(self) -> None:
        """Count what is due and redraw the charts."""
        from engine.review import stats

        s = stats(self.ctx.store, self.profile_name)
        self.stats = s
        self.due_label.setText(f"{s['due_now']} due now" if s["due_now"] else "Nothing due now")
        self.start_button.setEnabled(s["due_now"] > 0 and self.session is None)
        self.export_button.setEnabled(s["cards"] > 0)
        retention = "not measured yet" if s["retention"] is None else f"{s['retention']:.0f}%"
        self.summary.setText(
            f"{s['cards']} cards, {s['learned']} learned · {s['reviews']} answers, "
            f"retention {retention}. Every question answered in an exam or a French "
            "session gets a card."
        )
        self.due_view.setChart(due_chart(s["due_per_day"]))
        self.mastery_view.setChart(charts.bars(mastery_rows(s["mastery"]), "Mastery by topic"))
        if self.ctx.window is not None:
            self.ctx.window.update_review_count()

    # -- the session -----------------------------------------------------------------------

    def start(self) -> None:
        from engine.review import ReviewSession

        self.session = ReviewSession(self.ctx.store, self.profile_name)
        self.start_button.setEnabled(False)
        self.tabs.setCurrentIndex(0)
        self.stack.setCurrentIndex(1)
        self.next_card()

    def next_card(self) -> None:
        self.current = self.session.next_card() if self.session is not None else None
        self.feedback = None
        if self.current is None:
            n = len(self.session.reviewed) if self.session is not None else 0
            self.ctx.status(f"Review done: {n} card{'s' if n != 1 else ''}")
            self.end()
            return
        from engine.activities import activity_name

        card, face = self.current.card, self.current.face
        self.position.setText(f"Card {self.current.position} · {self.current.due_left} due")
        kinds = [activity_name(card.activity), card.topic or ""]
        self.kind.setText(" · ".join(k for k in kinds if k))
        self.question.setText(face.question)
        self.options.multi = face.multi
        self.options.set_options(face.options)
        self.feedback_card.setVisible(False)
        self._enable()
        self.options.setFocus()

    def check(self, skip: bool = False) -> None:
        if self.session is None or self.current is None or self.feedback is not None:
            return
        chosen = [] if skip else self.options.selected()
        if not chosen and not skip:
            self.hint.setText("Choose an option first (keys a–e or 1–5), or Don't know.")
            return
        self.hint.setText("")
        fb = self.session.answer(chosen)
        self.feedback = fb
        self.options.reveal(fb.gold, fb.chosen)
        texts = dict(self.current.face.options)
        gold = ", ".join(f"{g}. {texts.get(g, '')}" for g in fb.gold)
        said = "Correct" if fb.correct else "Not quite"
        say_verdict(self.verdict, fb.correct, f"{said} — {gold}")
        self.explanation.setText(fb.explanation or "No explanation is given for this one.")
        self.feedback_card.setVisible(True)
        waits = self.session.intervals()
        for i, (name, button) in enumerate(self.rate_buttons.items(), start=1):
            button.setText(f"{i} {name.capitalize()} · {waits[name]}")
            button.setProperty("kind", "primary" if name == fb.suggested else "")
            repolish(button)
        self._enable()
        self.rate_buttons[fb.suggested].setFocus()

    def rate(self, name: str) -> None:
        if self.session is None or self.feedback is None:
            return
        from engine.review.scheduling import interval_text

        card = self.session.rate(name)
        self.ctx.status(f"{name.capitalize()}: next review {interval_text(card)}")
        self.next_card()

    def end(self) -> None:
        """Back to the overview (every card rated so far is kept)."""
        self.session = self.current = self.feedback = None
        self.stack.setCurrentIndex(0)
        self.refresh()

    def _enable(self) -> None:
        answering = self.feedback is None
        self.check_button.setVisible(answering)
        if self.options.selected():
            self.hint.setText("")
        self.skip_button.setVisible(answering)
        for button in self.rate_buttons.values():
            button.setVisible(not answering)

    # -- Anki ------------------------------------------------------------------------------

    def _ask_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export to Anki", str(Path.home() / "medexam.apkg"), "Anki package (*.apkg)"
        )
        if path:
            self.export_to(path if path.endswith(".apkg") else path + ".apkg")

    def export_to(self, path: str) -> JSONDict | None:
        """Write the profile's cards (or only the missed ones) to the Anki package ``path``."""
        from engine.review.anki import export_anki

        try:
            result = export_anki(
                self.ctx.store, path, self.profile_name, only_missed=self.only_missed.isChecked()
            )
        except Exception as exc:  # noqa: BLE001 - shown to the person
            show_error(self, exc, self.ctx)
            return None
        self.ctx.status(f"Wrote {result['notes']} notes to {result['path']}")
        return result
