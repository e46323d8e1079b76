"""Small widgets and helpers every screen uses: page header, cards, a progress row with a
Stop button, pickers for data sets and models, and error dialogs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from engine.core.progress import Progress
from engine.errors import ONE_LINE

W = TypeVar("W", bound=QWidget)  # a widget, given back as the type it was given

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLayout

    from engine.models.backend import ModelInfo
    from engine.store.store import Store
    from engine.types import JSONValue, Row, Summary
    from gui.models import ModelHost
    from gui.navigator import Navigator
    from gui.workers import Jobs


class AppContext:
    """What every screen is given: the database, its UI-thread store, the model host, the
    job runner, and ways to talk to the window: ``status(text)`` for the status bar and
    ``window``, the :class:`gui.navigator.Navigator` (None in a screen shown alone)."""

    def __init__(
        self,
        db_path: str | None,
        store: Store | None,
        host: ModelHost,
        jobs: Jobs,
        status: Callable[[str], None] = print,
        window: Navigator | None = None,
    ) -> None:
        self.db_path, self.opened, self.host, self.jobs = db_path, store, host, jobs
        self.status, self.window = status, window
        self.data_changed: list[Callable[[], None]] = []
        self.runs_changed: list[Callable[[], None]] = []
        self.models_changed: list[Callable[[], None]] = []
        self.model_list: list[ModelInfo] | None = None  # catalog ModelInfo objects, once read

    @property
    def store(self) -> Store:
        """The UI thread's store, once the window has ``opened`` it (screens read it then)."""
        if self.opened is None:
            raise RuntimeError("the database is not open yet")
        return self.opened

    def window_widget(self) -> QWidget | None:
        """The window as a widget: the parent of dialogs and message boxes."""
        return self.window.widget() if self.window is not None else None

    def refresh_models(self) -> None:
        """Read the model catalog in the background (reading GGUF headers takes a moment)."""
        from engine.models import catalog

        def done(models: list[ModelInfo]) -> None:
            self.model_list = models
            for fn in list(self.models_changed):
                fn()

        self.jobs.start(
            lambda job: catalog.list_models(),
            on_done=done,
            on_error=lambda e: show_error(self.window_widget(), e, self),
        )

    def notify_data(self) -> None:
        """Data sets or corpora changed (after an import)."""
        for fn in list(self.data_changed):
            fn()

    def notify_runs(self) -> None:
        """A run was started, finished or deleted."""
        for fn in list(self.runs_changed):
            fn()


def current_profile(ctx: AppContext) -> str:
    """The review profile a person's answers go to: the one picked on the Review screen
    (remembered between starts) while it exists, else the default profile."""
    from engine.review.profiles import DEFAULT_PROFILE, profiles
    from gui.models import setting

    name = str(setting("review/profile", DEFAULT_PROFILE) or DEFAULT_PROFILE)
    return name if name in profiles(ctx.store) else DEFAULT_PROFILE


def esc(text: JSONValue) -> str:
    from html import escape

    return escape("" if text is None else str(text))


class Header(QWidget):
    """A screen's title and a one-line explanation under it."""

    def __init__(self, title: str, subtitle: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 4)
        lay.setSpacing(2)
        t = QLabel(title)
        t.setObjectName("pageTitle")
        lay.addWidget(t)
        self.subtitle = QLabel(subtitle)
        self.subtitle.setObjectName("pageSubtitle")
        self.subtitle.setWordWrap(True)
        lay.addWidget(self.subtitle)


#: A screen's margins (left, top, right, bottom) around its header and what is under it.
PAGE_MARGINS = (28, 22, 28, 20)


def page_column(
    page: QWidget,
    header: Header,
    spacing: int = 12,
    margins: tuple[int, int, int, int] = PAGE_MARGINS,
) -> QVBoxLayout:
    """The layout of a screen ``page``: its ``header`` at the top, then what the caller adds."""
    lay = QVBoxLayout(page)
    lay.setContentsMargins(*margins)
    lay.setSpacing(spacing)
    lay.addWidget(header)
    return lay


class Card(QFrame):
    """A white rounded panel with an optional title."""

    def __init__(self, title: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("card")
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(16, 14, 16, 14)
        self.layout_.setSpacing(8)
        if title:
            label = QLabel(title)
            label.setObjectName("cardTitle")
            self.layout_.addWidget(label)

    def add(self, widget: W, stretch: int = 0) -> W:
        self.layout_.addWidget(widget, stretch)
        return widget

    def add_layout(self, layout: QLayout) -> QLayout:
        self.layout_.addLayout(layout)
        return layout


def primary(button: QPushButton) -> QPushButton:
    """Style a button as the main action of its area."""
    button.setProperty("kind", "primary")
    return button


def button(text: str, clicked: Callable[..., object] | None = None, tip: str = "") -> QPushButton:
    """A button saying ``text`` that calls ``clicked`` when pressed; ``tip``: its tooltip."""
    made = QPushButton(text)
    if tip:
        made.setToolTip(tip)
    if clicked is not None:
        made.clicked.connect(clicked)
    return made


def spin_box(
    low: int, high: int, value: int, special: str = "", suffix: str = "", tip: str = ""
) -> QSpinBox:
    """A box of whole numbers from ``low`` to ``high`` showing ``value``; ``special`` is
    shown instead of ``low`` ("All", "Automatic"), ``suffix`` after the number (its unit)."""
    box = QSpinBox()
    box.setRange(low, high)
    box.setSpecialValueText(special)
    box.setSuffix(suffix)
    box.setValue(value)
    if tip:
        box.setToolTip(tip)
    return box


def plain_list(current_changed: Callable[..., object]) -> QListWidget:
    """A frameless list (the "plain" style) that never scrolls sideways; ``current_changed``
    is called with the new current item and the one before it."""
    view = QListWidget()
    view.setObjectName("plain")
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    view.currentItemChanged.connect(current_changed)
    return view


class SendRow(QHBoxLayout):
    """The row of a prompt whose reply streams in: ``field`` to type in, a primary button
    saying ``send`` that sends it (Enter in the field too) and a Stop button."""

    def __init__(
        self,
        field: QLineEdit,
        send: str,
        on_send: Callable[[], object],
        on_stop: Callable[[], object],
    ) -> None:
        super().__init__()
        field.returnPressed.connect(on_send)
        self.send = primary(button(send, on_send))
        self.stop = button("Stop", on_stop)
        self.addWidget(field, 1)
        self.addWidget(self.send)
        self.addWidget(self.stop)


def muted(label: QLabel) -> QLabel:
    label.setObjectName("muted")
    return label


def text_view(min_height: int = 0) -> QTextBrowser:
    """A read-only rich text area that opens no links; its lines (a table's cells too) break
    between words only, never inside one (a table wider than the view scrolls)."""
    view = QTextBrowser()
    view.setWordWrapMode(QTextOption.WrapMode.WordWrap)
    view.setOpenLinks(False)
    view.setOpenExternalLinks(False)
    if min_height:
        view.setMinimumHeight(min_height)
    return view


class ProgressRow(QWidget):
    """A long job's progress bar, text and Stop button (``update`` is not QWidget's repaint)."""

    stop_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.bar.setFormat("")  # "done / total" once a job starts: nothing counted before
        self.label = QLabel("")
        self.label.setObjectName("muted")
        self.label.setMinimumWidth(220)
        self.stop = QPushButton("Stop")
        self.stop.setEnabled(False)
        self.stop.clicked.connect(self.stop_clicked)
        lay.addWidget(self.bar, 1)
        lay.addWidget(self.label)
        lay.addWidget(self.stop)
        self.bar.setRange(0, 1)
        self.bar.setValue(0)

    def started(self, total: int = 0, message: str = "Starting…") -> None:
        self.bar.setFormat("%v / %m")
        self.bar.setRange(0, max(total, 0))
        self.bar.setValue(0)
        self.label.setText(message)
        self.stop.setEnabled(True)

    def update(self, p: Progress, message: str | None = None) -> None:  # type: ignore[override]
        self.bar.setFormat("%v / %m")
        self.bar.setRange(0, max(p.total, 1))
        self.bar.setValue(p.done)
        self.label.setText(message if message is not None else p.message)

    def ended(self, message: str = "") -> None:
        self.stop.setEnabled(False)
        self.label.setText(message)
        if self.bar.maximum() == 0:
            self.bar.setRange(0, 1)


class DatasetPicker(QWidget):
    """A data set combo box for one activity, with an Import… button next to it.

    With ``remember`` (a settings group, e.g. ``"french"``) it opens, and moves after an
    import, to the last imported data set, or to the one the person chose since
    (:func:`engine.importers.opening_dataset`); the choice is kept in ``<remember>/dataset`` and
    ``<remember>/dataset_at``."""

    changed = Signal(str)
    import_clicked = Signal()

    def __init__(
        self,
        ctx: AppContext,
        activity: str,
        parent: QWidget | None = None,
        compact: bool = False,
        remember: str = "",
    ) -> None:
        super().__init__(parent)
        self.ctx, self.activity, self.remember = ctx, activity, remember
        self._known: set[str] = set()
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.combo = whole_text(QComboBox(), QSizePolicy.Policy.MinimumExpanding)
        self.combo.currentIndexChanged.connect(lambda _i: self.changed.emit(self.name or ""))
        if remember:
            self.combo.activated.connect(self.remember_choice)
        self.import_button = QPushButton("+" if compact else "Import…")
        self.import_button.setToolTip("Import a data set from a file")
        if compact:
            self.import_button.setFixedWidth(34)
            self.import_button.setStyleSheet("padding: 0; font-size: 14pt; font-weight: 600;")
        self.import_button.clicked.connect(self.import_clicked)
        lay.addWidget(self.combo, 1)
        lay.addWidget(self.import_button)
        ctx.data_changed.append(self.reload)
        self.reload()

    def reload(self, select: str | None = None) -> None:
        datasets = self.ctx.store.datasets(self.activity)
        current = select or self.name
        names = {d["name"] for d in datasets}
        if self.remember and not select and not names <= self._known:
            current = self._opening(datasets) or current
        self._known = names
        self.combo.blockSignals(True)
        self.combo.clear()
        for ds in datasets:
            label = f"{ds['name']} ({ds['n_items']})"
            self.combo.addItem(label, ds["name"])
            self.combo.setItemData(
                self.combo.count() - 1,
                f"{ds['n_items']} items, from {ds.get('source') or 'an import'}",
                Qt.ItemDataRole.ToolTipRole,
            )
        if current:
            i = self.combo.findData(current)
            if i >= 0:
                self.combo.setCurrentIndex(i)
        self.combo.blockSignals(False)
        self.changed.emit(self.name or "")

    def _opening(self, datasets: Sequence[Row]) -> str:
        from engine.importers import opening_dataset
        from gui.models import setting

        remembered = str(setting(f"{self.remember}/dataset", "") or "")
        return opening_dataset(
            datasets, remembered, str(setting(f"{self.remember}/dataset_at", "") or "")
        )

    def remember_choice(self) -> None:
        """Keep the data set chosen now as the one to open on (until the next import)."""
        from gui.models import set_setting

        if self.name and self.remember:
            set_setting(f"{self.remember}/dataset", self.name)
            now = datetime.now(UTC).isoformat(timespec="seconds")
            set_setting(f"{self.remember}/dataset_at", now)

    @property
    def name(self) -> str | None:
        return self.combo.currentData()

    def select(self, name: str) -> None:
        i = self.combo.findData(name)
        if i >= 0:
            self.combo.setCurrentIndex(i)


def whole_text(
    box: QComboBox, policy: QSizePolicy.Policy = QSizePolicy.Policy.Minimum
) -> QComboBox:
    """Make ``box`` never narrower than its longest item (layouts may widen it, with
    ``policy``, but not cut its text)."""
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    box.setSizePolicy(policy, QSizePolicy.Policy.Fixed)
    return box


def combo(choices: Sequence[tuple[JSONValue, str]], current: JSONValue = None) -> QComboBox:
    """A combo box of ``(data, label)`` choices, as wide as its longest label, with
    ``current`` chosen when it is one of them."""
    box = whole_text(QComboBox())
    for data, label in choices:
        box.addItem(label, data)
    i = box.findData(current)
    if i >= 0:
        box.setCurrentIndex(i)
    return box


class ModelCombo(QComboBox):
    """Every catalog model; defaults to the selected (loaded) one."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        whole_text(self)
        ctx.models_changed.append(self.reload)
        self.reload()

    def reload(self) -> None:
        current = self.currentData() or self.ctx.host.name or self.ctx.host.selected
        self.blockSignals(True)
        self.clear()
        if self.ctx.model_list is None:
            self.addItem(current, current)  # until the catalog is read
        for m in self.ctx.model_list or []:
            self.addItem(f"{m.name}  ({m.summary()})", m.name)
        i = self.findData(current)
        if i >= 0:
            self.setCurrentIndex(i)
        self.blockSignals(False)

    @property
    def name(self) -> str | None:
        return self.currentData()


def model_crashed(exc: BaseException) -> bool:
    from engine.models.protocol import ModelCrashed

    return isinstance(exc, ModelCrashed)


def show_error(
    parent: QWidget | None,
    exc: BaseException | str,
    ctx: AppContext | None = None,
    title: str = "Something went wrong",
) -> None:
    """Tell the user what failed in a dialog; a crashed model gets a Restart button."""
    from engine.core.progress import Cancelled

    if isinstance(exc, Cancelled):
        return
    if not isinstance(exc, str) and model_crashed(exc):
        if ctx is not None:
            ctx.host.mark_crashed(str(exc))
        offer_restart(parent, str(exc), ctx)
        return
    if not isinstance(exc, str):
        from engine.store.dbfile import database_problem

        path = ctx.store.path if ctx is not None else None
        exc = database_problem(exc, path) or exc  # SQLite's error, said as the CLI says it
    message = exc if isinstance(exc, str) else str(exc) or type(exc).__name__
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setText(message)
    detail = getattr(exc, "__traceback_text__", None)
    if detail and not isinstance(exc, ONE_LINE):  # a fault of medexam's own: its traceback
        box.setDetailedText(detail)
    box.open()


def offer_restart(parent: QWidget | None, message: str, ctx: AppContext | None) -> None:
    """The model process died: say so and offer to start it again."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("The model stopped")
    box.setText("The model stopped working. Your answers so far are saved.")
    box.setInformativeText(message)
    restart = box.addButton("Restart model", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Later", QMessageBox.ButtonRole.RejectRole)

    def done(_result: int) -> None:
        if box.clickedButton() is restart and ctx is not None:
            restart_model(ctx)

    box.finished.connect(done)
    box.open()


def restart_model(ctx: AppContext) -> None:
    ctx.status("Restarting the model…")
    ctx.jobs.start(
        lambda job: ctx.host.restart(),
        on_done=lambda _m: ctx.status("The model is running again."),
        on_error=lambda e: show_error(ctx.window_widget(), e, None, "The model could not restart"),
    )


def check_crash(ctx: AppContext, summary: Summary | None) -> bool:
    """After a run that failed: if the model process died, say so and offer a restart."""
    if summary and summary.get("status") == "failed":
        if any(m["state"] == "crashed" for m in ctx.host.pool.status()):
            ctx.host.mark_crashed(summary.get("error") or "")
            offer_restart(ctx.window_widget(), summary.get("error") or "", ctx)
            return True
        parent = ctx.window_widget()
        show_error(parent, summary.get("error") or "The run failed.", ctx, "The run failed")
        return True
    return False


def hline() -> QFrame:
    line = QFrame()
    line.setFrameShape(QFrame.Shape.HLine)
    line.setObjectName("separator")
    return line


def plain(label: QLabel) -> QLabel:
    """Show ``label``'s text as it is, never read as HTML: imported text (a question, an
    explanation) holding ``<img width=30000 …>`` or ``<b>`` is shown as typed."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def selectable(label: QLabel, name: str = "") -> QLabel:
    """Let ``label`` wrap and its text be selected with the mouse (``name``: its style)."""
    if name:
        label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def flush_column(parent: QWidget, spacing: int | None = None) -> QVBoxLayout:
    """A vertical layout that fills ``parent`` to its edges."""
    lay = QVBoxLayout(parent)
    lay.setContentsMargins(0, 0, 0, 0)
    if spacing is not None:
        lay.setSpacing(spacing)
    return lay


def add_rows(
    grid: QGridLayout, rows: Sequence[tuple[str, QWidget | QLayout]], column: int = 0
) -> None:
    """Put a label and its widget (or layout) on each row of ``grid``, from the top, in
    ``column`` and the next one; an empty label leaves its cell empty."""
    for i, (label, item) in enumerate(rows):
        if label:
            grid.addWidget(QLabel(label), i, column)
        if isinstance(item, QWidget):
            grid.addWidget(item, i, column + 1)
        else:
            grid.addLayout(item, i, column + 1)


def form_row(label: str, widget: QWidget, tip: str = "") -> QHBoxLayout:
    row = QHBoxLayout()
    lab = QLabel(label)
    lab.setMinimumWidth(110)
    if tip:
        lab.setToolTip(tip)
        widget.setToolTip(tip)
    row.addWidget(lab)
    row.addWidget(widget, 1)
    return row


def center(widget: QWidget) -> QWidget:
    wrap = QWidget()
    lay = QHBoxLayout(wrap)
    lay.addStretch(1)
    lay.addWidget(widget)
    lay.addStretch(1)
    lay.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return wrap


def say_verdict(label: QLabel, good: bool, text: str) -> None:
    """Show ``text`` in ``label`` in the colour of a right (``good``) or a wrong answer."""
    label.setObjectName("good" if good else "bad")
    label.setText(text)
    repolish(label)


def repolish(widget: QWidget) -> None:
    """Re-apply the style sheet after a dynamic property changed."""
    widget.style().unpolish(widget)
    widget.style().polish(widget)
    for child in widget.findChildren(QWidget):
        child.style().unpolish(child)
        child.style().polish(child)
