"""The main window: a navigation list on the left, one screen at a time on the right, and a
status bar naming the loaded model.

Screens are built the first time they are shown, so the window opens at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine.errors import UserError
from gui.models import ModelHost, set_setting, setting
from gui.navigator import Practising
from gui.screens import screens
from gui.widgets.common import AppContext
from gui.workers import Jobs


class MainWindow(QMainWindow):
    """medexam's window over the database ``db_path``; ``store`` is the UI thread's
    :class:`~engine.store.store.Store` (opened by :meth:`ready` when not given)."""

    def __init__(self, db_path: str | None = None, store: Any = None) -> None:
        super().__init__()
        self.setWindowTitle("medexam")
        # As narrow as the screens let it be (about 1000 px), never narrower: the width
        # follows their layouts, so no screen is ever squeezed.
        self.setMinimumHeight(660)
        self.host = ModelHost(self)
        self.jobs = Jobs(db_path, self)
        self.ctx = AppContext(
            db_path=db_path,
            store=store,
            host=self.host,
            jobs=self.jobs,
            status=self.show_status,
            window=self,
        )
        self.screens: dict[str, QWidget] = {}
        self.is_ready = False
        self._build()
        self.ctx.runs_changed.append(self.update_review_count)  # answers may add due cards
        self.host.changed.connect(self._model_changed)
        self.jobs.busy_changed.connect(self._busy_changed)
        geometry = setting("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 820)

    def ready(self) -> None:
        """Open the database and show the last screen (called once the window is up, so it
        appears at once)."""
        if self.is_ready:
            return
        if self.ctx.opened is None:
            from engine.store.store import Store, StoreError

            try:
                self.ctx.opened = Store(self.ctx.db_path)
            except StoreError as exc:  # a newer medexam's database, say: nothing is touched
                QMessageBox.critical(self, "The database cannot be opened", str(exc))
                self.close()
                return
        own_database = self.ctx.db_path is None  # a person's start, not a test's or a script's
        if own_database:
            self.ctx.db_path = self.jobs.db_path = self.ctx.store.path
        self.is_ready = True
        self.host.pool  # noqa: B018 - observe the engine's models from now on
        self._model_changed()
        self.update_review_count()
        from gui.watch import DatabaseWatch

        self.watch = DatabaseWatch(self.ctx, self)  # what other processes change shows
        self.nav.setEnabled(True)
        self.import_button.setEnabled(True)
        self._restore()
        # Read the model catalog in the background (it reads every GGUF header).
        self.ctx.refresh_models()
        if own_database:
            from gui.widgets.first_run import show_once

            show_once(self)

    # -- layout ------------------------------------------------------------------------

    def _build(self) -> None:
        central = QWidget()
        lay = QHBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)

        side = QWidget()
        side.setObjectName("sidebar")
        side.setFixedWidth(200)
        sl = QVBoxLayout(side)
        sl.setContentsMargins(12, 16, 12, 12)
        sl.setSpacing(6)
        name = QLabel("medexam")
        name.setObjectName("appName")
        tagline = QLabel("Medical exam practice")
        tagline.setObjectName("appTagline")
        sl.addWidget(name)
        sl.addWidget(tagline)
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        self.nav.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.screen_list = screens()
        for found in self.screen_list:
            item = QListWidgetItem(found.label)
            item.setData(Qt.ItemDataRole.UserRole, found.key)
            item.setToolTip(found.tip)
            self.nav.addItem(item)
        self.nav.currentRowChanged.connect(self._show_row)
        sl.addWidget(self.nav, 1)
        self.import_button = QPushButton("Import data…")
        self.import_button.setToolTip("Import questions, cases or a corpus from a file")
        self.import_button.clicked.connect(lambda: self.open_import())
        sl.addWidget(self.import_button)

        self.stack = QStackedWidget()
        loading = QLabel("Opening…")
        loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        loading.setObjectName("muted")
        self.stack.addWidget(loading)
        self.nav.setEnabled(False)
        self.import_button.setEnabled(False)
        lay.addWidget(side)
        lay.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.model_label = QLabel()
        self.model_label.setObjectName("modelStatus")
        self.busy_label = QLabel()
        self.statusBar().addPermanentWidget(self.busy_label)
        self.statusBar().addPermanentWidget(self.model_label)
        self.statusBar().setSizeGripEnabled(False)

        menu = self.menuBar().addMenu("&File")
        from engine.importers import activities as import_kinds

        for kind, title in import_kinds().items():
            action = QAction(f"Import {title[:1].lower() + title[1:]}…", self)
            action.triggered.connect(lambda _=False, k=kind: self.open_import(k))
            menu.addAction(action)
        menu.addSeparator()
        quit_action = QAction("Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        menu.addAction(quit_action)
        go = self.menuBar().addMenu("&Go")
        for i, found in enumerate(self.screen_list):
            action = QAction(found.label, self)
            action.setShortcut(QKeySequence(f"Ctrl+{i + 1}"))
            action.triggered.connect(lambda _=False, row=i: self.nav.setCurrentRow(row))
            go.addAction(action)
        help_menu = self.menuBar().addMenu("&Help")
        about = QAction("About medexam", self)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def _about(self) -> None:
        from engine import __version__

        QMessageBox.about(
            self,
            "About medexam",
            f"<b>medexam</b> {__version__}<br>Offline medical exam practice and local "
            "language model evaluation.<br><br>Everything runs on this computer; "
            f"the database is<br><code>{self.ctx.store.path}</code>",
        )

    # -- navigation --------------------------------------------------------------------

    # shadows QWidget.screen (the QScreen): the window's screens are these
    def screen(self, key: str) -> QWidget:  # type: ignore[override]
        """The screen ``key`` (built on first use)."""
        if key not in self.screens:
            found = next(s for s in self.screen_list if s.key == key)
            widget = found.widget.load()(self.ctx)
            widget.setObjectName("page")
            self.screens[key] = widget
            self.stack.addWidget(widget)
        return self.screens[key]

    def widget(self) -> QWidget:
        """The window as a widget (:class:`gui.navigator.Navigator`)."""
        return self

    def practise(self, activity_id: str, dataset: str, keys: Sequence[str]) -> None:
        """Show the activity's screen and start a practice session of ``keys`` there."""
        screen = self.go(activity_id)
        if not isinstance(screen, Practising):
            raise UserError(f"{activity_id} questions cannot be practised from here")
        screen.practise(dataset, keys)

    def go(self, key: str) -> QWidget:
        """Show screen ``key`` and return it."""
        row = next(i for i, s in enumerate(self.screen_list) if s.key == key)
        self.nav.setCurrentRow(row)
        return self.screens[key]

    def _show_row(self, row: int) -> None:
        if row < 0 or not self.is_ready:
            return
        key = self.screen_list[row].key
        widget = self.screen(key)
        self.stack.setCurrentWidget(widget)
        set_setting("window/screen", key)
        self.update_review_count()
        shown = getattr(widget, "shown", None)
        if shown is not None:
            shown()

    def update_review_count(self) -> None:
        """Show the cards due now beside Review in the sidebar."""
        from gui.widgets.qt_review import nav_label

        row = next(i for i, s in enumerate(self.screen_list) if s.key == "review")
        self.nav.item(row).setText(nav_label(self.ctx.store))

    def open_import(self, kind: str | None = None) -> None:
        from gui.widgets.qt_import import ImportDialog

        dialog = ImportDialog(self.ctx, kind, self)
        dialog.open()

    # -- status ------------------------------------------------------------------------

    def show_status(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def _model_changed(self) -> None:
        self.model_label.setText(self.host.description)
        colour = {"ready": "#15803d", "loading": "#1d4ed8", "crashed": "#b91c1c"}.get(
            self.host.state, "#4b5563"
        )
        self.model_label.setStyleSheet(f"color: {colour};")
        self.model_label.setToolTip(self.host.error or "The model the app works with")

    def _busy_changed(self, n: int) -> None:
        self.busy_label.setText("" if n == 0 else "Working…" if n == 1 else f"{n} tasks running")

    # -- settings ----------------------------------------------------------------------

    def _restore(self) -> None:
        rows = [s.key for s in self.screen_list]
        key = setting("window/screen", rows[0])
        row = rows.index(key) if key in rows else 0
        if self.nav.currentRow() == row:
            self._show_row(row)
        else:
            self.nav.setCurrentRow(row)

    def closeEvent(self, event: QCloseEvent) -> None:
        set_setting("window/geometry", self.saveGeometry())
        for widget in self.screens.values():
            closing = getattr(widget, "closing", None)
            if closing is not None:
                closing()
        self.jobs.stop_all()
        host = self.host
        if host.model is not None:
            host.model.cancel()
        self.jobs.wait(15_000)
        host.close()
        super().closeEvent(event)
