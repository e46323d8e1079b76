"""The Notebook tab of the Review screen: a profile's marked and noted questions
(:mod:`engine.bank.notebook`), filtered by mark, note, words of the note and activity; the
selected question in full with its options, gold answer and explanation, its note (saved
when the box loses focus or on Enter), why it was missed, a Mark/Unmark button, and
"Practise marked", which starts a practice session of the marked questions of the selected
question's data set (:func:`engine.bank.pools.pool_keys`) on its activity's screen, when that
screen practises given questions (the Exam screen).

The work is quick SQLite reads and writes, done on the UI thread's store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QWidget,
)

from engine.activities import activities, activity_name
from engine.bank.notebook import REASONS
from engine.errors import UserError
from engine.text.columns import short_text
from gui.screens import practising
from gui.tables import RowsModel, table_view
from gui.widgets.common import (
    AppContext,
    Card,
    combo,
    esc,
    flush_column,
    muted,
    plain,
    primary,
    selectable,
    show_error,
)
from gui.widgets.screen import scrolled

if TYPE_CHECKING:
    from engine.bank.notebook import Entry
    from engine.types import JSONDict, Row

GONE = "(no longer in the data set)"
EMPTY = (
    "Nothing in this notebook yet. Mark a question or write a note on it while you practise "
    "(in the terminal: m and n in medexam exam take), and it is listed here."
)
NONE_MATCH = "No question in the notebook matches these filters."
GOLD = "#15803d"  # the colour of a right option


def notebook_activities() -> list[tuple[str, str]]:
    """The activities whose questions a notebook holds (those reviewed: their descriptors
    draw a card), for the filter ("": every one)."""
    found = [(a.id, a.name) for a in activities().values() if a.card]
    return [("", "All activities"), *found]


def when(iso: str | None, minutes: bool = False) -> str:
    """A stored UTC time as a local date (and the time to the minute, with ``minutes``)."""
    if not iso:
        return ""
    return (
        datetime.fromisoformat(iso)
        .astimezone()
        .strftime("%Y-%m-%d %H:%M" if minutes else "%Y-%m-%d")
    )


NOTEBOOK_COLUMNS = [
    ("Data set", lambda r: r["dataset"]),
    ("#", lambda r: r["number"]),
    ("Question", lambda r: r["question"]),
    ("★", lambda r: "★" if r["marked"] else ""),
    ("Why missed", lambda r: REASONS.get(str(r["reason"] or ""), "")),
    ("Note", lambda r: short_text(str(r["note"]), 60)),
    ("Updated", lambda r: when(r["updated"])),
]
DATASET, QUESTION, MARK, NOTE = 0, 2, 3, 5


def entry_rows(entries: list[Entry], items: Callable[[str], dict[str, JSONDict]]) -> list[Row]:
    """A table row per notebook entry: its data set, its number there (from 1), the start
    of its question; ``items(dataset)`` gives a data set's items by key, in order."""
    rows: list[Row] = []
    numbers: dict[str, dict[str, int]] = {}
    for e in entries:
        found = items(e.dataset)
        if e.dataset not in numbers:
            numbers[e.dataset] = {key: i for i, key in enumerate(found, start=1)}
        item = found.get(e.item_key)
        question = str(item.get("question", "")) if item else GONE
        number = numbers[e.dataset].get(e.item_key)
        row = {**e.as_dict(), "number": number, "question": short_text(question, 60)}
        rows.append(cast("Row", row))
    return rows


class NoteEdit(QPlainTextEdit):
    """A note's box: ``committed`` carries its text when it loses focus and on Enter
    (Shift+Enter starts a new line)."""

    committed = Signal(str)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.committed.emit(self.toPlainText())
            return
        super().keyPressEvent(event)

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 - Qt's name
        self.committed.emit(self.toPlainText())
        super().focusOutEvent(event)


class NotebookPanel(QWidget):
    """The notebook of the profile ``profile()`` names (the Review screen's choice)."""

    def __init__(self, ctx: AppContext, profile: Callable[[], str]) -> None:
        super().__init__()
        self.ctx, self.profile = ctx, profile
        self.entries: dict[tuple[str, str], Entry] = {}
        self.current: Entry | None = None
        self._items: dict[str, dict[str, JSONDict]] = {}
        lay = flush_column(self, spacing=10)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.addLayout(self._filters())
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        self.model = RowsModel(NOTEBOOK_COLUMNS)
        self.model.tooltip = lambda r: (
            f"{r['dataset']} · {r['item_key']} · updated {when(r['updated'], minutes=True)}"
        )
        self.table = table_view(self.model, stretch=QUESTION, fit=(0, 1, MARK, 4, 6), wrap=True)
        self.table.horizontalHeader().resizeSection(NOTE, 170)
        self.table.setSelectionMode(self.table.SelectionMode.SingleSelection)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        split.addWidget(self.table)
        detail = scrolled(self._detail())
        detail.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        split.addWidget(detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 440])
        lay.addWidget(split, 1)
        self.show_entry(None)

    # -- layout ----------------------------------------------------------------------------

    def _filters(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setSpacing(10)
        self.marked_only = QCheckBox("Marked only")
        self.with_note = QCheckBox("With a note")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search your notes…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(200)
        self.activity = combo(notebook_activities())
        for box in (self.marked_only, self.with_note):
            box.toggled.connect(self.refresh)
        self.search.textChanged.connect(self.refresh)
        self.activity.currentIndexChanged.connect(self.refresh)
        for widget in (self.marked_only, self.with_note, self.search, self.activity):
            row.addWidget(widget)
        self.count = muted(QLabel(""))
        row.addWidget(self.count, 1)
        self.practise_button = primary(QPushButton("Practise marked"))
        self.practise_button.clicked.connect(self.practise_marked)
        row.addWidget(self.practise_button)
        return row

    def _detail(self) -> QWidget:
        card = Card()
        head = QHBoxLayout()
        self.title = plain(selectable(QLabel(""), "cardTitle"))
        head.addWidget(self.title, 1)
        self.mark_button = QPushButton("Unmark")
        self.mark_button.clicked.connect(self.toggle_mark)
        head.addWidget(self.mark_button, 0, Qt.AlignmentFlag.AlignTop)
        card.add_layout(head)
        self.tags = plain(QLabel(""))
        self.tags.setObjectName("pill")
        card.add(self.tags).setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.question = plain(selectable(QLabel(""), "question"))
        card.add(self.question)
        self.options = selectable(QLabel(""))
        self.options.setTextFormat(Qt.TextFormat.RichText)
        card.add(self.options)
        self.gold = plain(selectable(QLabel(""), "good"))
        card.add(self.gold)
        self.explanation = plain(selectable(muted(QLabel(""))))
        card.add(self.explanation)
        buttons = QHBoxLayout()
        why = QLabel("Why missed")
        buttons.addWidget(why)
        self.reason = combo([("", "—"), *REASONS.items()])
        self.reason.setToolTip("Why you missed this question (counted in Where I stand)")
        self.reason.activated.connect(self._reason_chosen)
        buttons.addWidget(self.reason)
        buttons.addStretch(1)
        card.add_layout(buttons)
        note = card.add(QLabel("Note"))
        self.note = NoteEdit()
        self.note.setPlaceholderText("What to remember about this question")
        self.note.setMinimumHeight(90)
        self.note.setMaximumHeight(150)
        self.note.committed.connect(self.save_note)
        card.add(self.note)
        hint = "Kept when you leave the box or press Enter (Shift+Enter: a new line)."
        shown = card.add(selectable(muted(QLabel(hint))))
        self.editing = [self.mark_button, why, self.reason, note, self.note, shown]
        card.layout_.addStretch(1)
        return card

    # -- the list --------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the profile's entries that pass the filters (the selection is kept)."""
        from engine.bank.notebook import entries

        if self.note.hasFocus():
            self.save_note(self.note.toPlainText())  # what is being typed is kept first
        keep = self.current
        found = entries(
            self.ctx.store,
            self.profile(),
            activity=self.activity.currentData() or None,
            marked=True if self.marked_only.isChecked() else None,
            noted=True if self.with_note.isChecked() else None,
            search=self.search.text().strip(),
        )
        self._items = {}
        self.entries = {(e.dataset, e.item_key): e for e in found}
        self.model.set_rows(entry_rows(found, self._dataset_items))
        self.table.setColumnHidden(DATASET, len({e.dataset for e in found}) < 2)
        self.table.resizeRowsToContents()
        self._say_count(len(found))
        rows = [(r["dataset"], r["item_key"]) for r in self.model.rows]
        wanted = (keep.dataset, keep.item_key) if keep is not None else None
        if rows:
            self.table.selectRow(rows.index(wanted) if wanted in rows else 0)
        else:
            self.show_entry(None)
            if not self.count.text():
                self.title.setText("Your notebook is empty")
                self.question.setText(EMPTY)

    def _say_count(self, n: int) -> None:
        if n:
            self.count.setText(f"{n} question{'s' if n != 1 else ''}")
            return
        from engine.bank.notebook import entries

        anything = entries(self.ctx.store, self.profile())
        self.count.setText(NONE_MATCH if anything else "")

    def _dataset_items(self, dataset: str) -> dict[str, JSONDict]:
        if dataset not in self._items:
            self._items[dataset] = self.ctx.store.items_by_key(dataset) or {}
        return self._items[dataset]

    def _row_changed(self, index: QModelIndex, _previous: QModelIndex) -> None:
        if not index.isValid():
            self.show_entry(None)
            return
        row = self.model.row(index.row())
        self.show_entry(self.entries.get((str(row["dataset"]), str(row["item_key"]))))

    def _update_row(self, e: Entry) -> None:
        """Show the changed entry ``e`` in its row, where it is (no new order: a click on
        another row that took the focus from the note still lands on that row)."""
        self.entries[(e.dataset, e.item_key)] = e
        for i, r in enumerate(self.model.rows):
            if (r["dataset"], r["item_key"]) == (e.dataset, e.item_key):
                self.model.rows[i] = {**r, **e.as_dict()}
                last = self.model.columnCount() - 1
                self.model.dataChanged.emit(self.model.index(i, 0), self.model.index(i, last))
                self.table.resizeRowToContents(i)
        current = self.current
        if current is not None and (current.dataset, current.item_key) == (e.dataset, e.item_key):
            self.current = e

    # -- the selected question -------------------------------------------------------------

    def show_entry(self, e: Entry | None) -> None:
        """Show the question of entry ``e`` in full, with its note (nothing: ``None``)."""
        self.current = e
        for widget in self.editing:
            widget.setVisible(e is not None)
        self._enable_practise()
        if e is None:
            self.title.setText("No question selected")
            for label in (self.tags, self.question, self.options, self.gold, self.explanation):
                label.setText("")
            self.tags.setVisible(False)
            self.note.setPlainText("")
            return
        self._show_question(e)
        self.reason.setCurrentIndex(max(0, self.reason.findData(e.reason or "")))
        self.mark_button.setText("Unmark" if e.marked else "Mark")
        self.note.blockSignals(True)
        self.note.setPlainText(e.note)
        self.note.blockSignals(False)

    def _show_question(self, e: Entry) -> None:
        from engine.review.cards import face

        item = self._dataset_items(e.dataset).get(e.item_key)
        number = list(self._dataset_items(e.dataset)).index(e.item_key) + 1 if item else None
        star = "  ★" if e.marked else ""
        self.title.setText(f"{e.dataset} · question {number or e.item_key}{star}")
        if item is None:
            self.question.setText(GONE)
            for label in (self.options, self.gold, self.explanation, self.tags):
                label.setText("")
            self.tags.setVisible(False)
            return
        shown = face(e.activity, item)
        self.tags.setText(" · ".join(shown.tags.values()))
        self.tags.setVisible(bool(shown.tags))
        self.question.setText(shown.question)
        right = {g.lower() for g in shown.gold}
        self.options.setText(
            "".join(
                f"<p style='margin:3px 0; color:{GOLD}'><b>{esc(k.upper())}. {esc(v)} ✓</b></p>"
                if k.lower() in right
                else f"<p style='margin:3px 0'>{esc(k.upper())}. {esc(v)}</p>"
                for k, v in shown.options
            )
        )
        texts = {k.lower(): v for k, v in shown.options}
        gold = "; ".join(f"{g.upper()}. {texts.get(g.lower(), '')}" for g in shown.gold)
        self.gold.setText(f"Answer: {gold}")
        self.explanation.setText(shown.explanation)
        self.explanation.setVisible(bool(shown.explanation))

    def save_note(self, text: str) -> None:
        """Keep ``text`` as the selected question's note (when it changed)."""
        from engine.bank.notebook import set_note

        e = self.current
        if e is None or text.strip() == e.note:
            return
        try:
            changed = set_note(self.ctx.store, e.profile, e.activity, e.dataset, e.item_key, text)
        except Exception as exc:  # noqa: BLE001 - shown to the person
            show_error(self, exc, self.ctx)
            return
        self._update_row(changed)
        self.ctx.status("Note kept")

    def _reason_chosen(self) -> None:
        from engine.bank.notebook import set_reason

        e = self.current
        if e is None:
            return
        reason = self.reason.currentData() or None
        changed = set_reason(self.ctx.store, e.profile, e.activity, e.dataset, e.item_key, reason)
        self._update_row(changed)

    def toggle_mark(self) -> None:
        """Unmark the selected question (or mark it again)."""
        from engine.bank.notebook import mark

        e = self.current
        if e is None:
            return
        self.save_note(self.note.toPlainText())
        e = self.current or e
        mark(self.ctx.store, e.profile, e.activity, e.dataset, e.item_key, not e.marked)
        self.ctx.status("Marked" if not e.marked else "Unmarked")
        self.refresh()

    # -- practice ----------------------------------------------------------------------------

    def marked_keys(self) -> list[str]:
        """The marked questions of the selected question's data set, in order (none when its
        activity's screen does not practise given questions)."""
        from engine.bank.pools import pool_keys

        e = self.current
        if e is None or not practising(e.activity):
            return []
        return pool_keys(self.ctx.store, e.activity, e.dataset, self.profile(), "marked")

    def _enable_practise(self) -> None:
        e = self.current
        keys = self.marked_keys()
        self.practise_button.setEnabled(bool(keys))
        self.practise_button.setText(
            f"Practise marked ({len(keys)})" if keys else "Practise marked"
        )
        if e is None:
            tip = "Select a question: its data set's marked questions are practised"
        elif not practising(e.activity):
            tip = f"{activity_name(e.activity)} questions cannot be practised from here"
        else:
            where = f"{activity_name(e.activity)} → Practice"
            tip = f"A practice session of the marked questions of {e.dataset} ({where})"
        self.practise_button.setToolTip(tip)

    def practise_marked(self) -> None:
        """Start a practice session of the marked questions of the selected question's data
        set on its activity's screen (with the count and mode of its setup page)."""
        keys = self.marked_keys()
        window = self.ctx.window
        if not keys or self.current is None or window is None:
            return
        try:
            window.practise(self.current.activity, self.current.dataset, keys)
        except UserError as exc:
            show_error(self, exc, self.ctx)

    def shown(self) -> None:
        """The tab is shown: the notebook may have changed meanwhile."""
        self.refresh()
