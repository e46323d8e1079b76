"""Import a data set or a corpus from a file: exam questions, consultation cases, French
questions, or a French corpus. The engine's importers check every record; their message is
shown as it is (it names the record and the reason)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.importers import activities as import_kinds
from engine.importers import formats
from engine.store.store import AlreadyExists
from gui.models import set_setting, setting
from gui.widgets.common import AppContext, add_rows, muted, selectable

if TYPE_CHECKING:
    from engine.core.progress import Progress
    from gui.workers import Job, Worker


def kinds() -> dict[str, tuple[str, list[tuple[str, str, str, bool]]]]:
    """kind → (title, [(format key, label, file filter, pick a folder?)]), as the importer
    registry (:mod:`engine.importers`) lists them now."""
    return {
        kind: (title, [(f.key, f.label, f.filter, f.folder) for f in formats(kind)])
        for kind, title in import_kinds().items()
    }


def import_job(job: Job, kind: str, fmt: str, source: str, name: str, replace: bool) -> str:
    """Run the engine's importer for ``kind``/``fmt`` (:func:`engine.importers.import_data`)
    in a worker; return its one-line report."""
    from engine.importers import import_data

    result = import_data(
        job.store, kind, fmt, source, name, replace, progress=job.progress, cancel=job.cancel
    )
    return result["message"]


class ImportDialog(QDialog):
    def __init__(
        self, ctx: AppContext, kind: str | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.job: Worker | None = None
        self.report = ""
        self.setWindowTitle("Import data")
        self.setMinimumWidth(560)
        lay = QVBoxLayout(self)
        lay.setSpacing(12)
        lay.setContentsMargins(20, 18, 20, 16)
        intro = muted(QLabel("Every record is checked first; nothing is stored if one is bad."))
        intro.setWordWrap(True)
        lay.addWidget(intro)
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(10)
        self.kind = QComboBox()
        self.kinds = kinds()
        for key, (title, _f) in self.kinds.items():
            self.kind.addItem(title, key)
        self.format = QComboBox()
        self.path = QLineEdit()
        self.path.setPlaceholderText("Choose a file")
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(self.choose)
        self.dataset = QComboBox()
        prow = QHBoxLayout()
        prow.addWidget(self.path, 1)
        prow.addWidget(self.dataset, 1)
        prow.addWidget(self.browse)
        self.name = QLineEdit()
        self.name.setPlaceholderText("Name in medexam")
        self.replace = QCheckBox("Replace an existing one with this name")
        rows: list[tuple[str, QWidget | QLayout]] = [
            ("What", self.kind),
            ("Format", self.format),
            ("From", prow),
            ("Name", self.name),
        ]
        add_rows(grid, [*rows, ("", self.replace)])
        grid.setColumnStretch(1, 1)
        lay.addLayout(grid)
        self.bar = QProgressBar()
        self.bar.setVisible(False)
        lay.addWidget(self.bar)
        self.message = selectable(QLabel(""))
        lay.addWidget(self.message)
        self.buttons = QDialogButtonBox()
        self.import_button = self.buttons.addButton(
            "Import", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.import_button.setProperty("kind", "primary")
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.import_button.clicked.connect(self.start)
        self.close_button.clicked.connect(self._close)
        lay.addWidget(self.buttons)

        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.format.currentIndexChanged.connect(self._format_changed)
        self.path.textChanged.connect(self._path_changed)
        if kind is not None and self.kind.findData(kind) >= 0:
            self.kind.setCurrentIndex(self.kind.findData(kind))
        self._kind_changed()

    # -- form ------------------------------------------------------------------------------

    @property
    def formats(self) -> list[tuple[str, str, str, bool]]:
        return self.kinds[self.kind.currentData()][1]

    def _format(self) -> tuple[str, str, str, bool]:
        return self.formats[max(self.format.currentIndex(), 0)]

    def _kind_changed(self) -> None:
        self.format.blockSignals(True)
        self.format.clear()
        for key, label, _filter, _folder in self.formats:
            self.format.addItem(label, key)
        self.format.blockSignals(False)
        self._format_changed()

    def _format_changed(self) -> None:
        key = self._format()[0]
        found = next((f for f in formats(self.kind.currentData()) if f.key == key), None)
        from_dataset = found is not None and found.source == "dataset"
        self.path.setVisible(not from_dataset)
        self.browse.setVisible(not from_dataset)
        self.dataset.setVisible(from_dataset)
        if found is not None and from_dataset:
            self.dataset.clear()
            for ds in self.ctx.store.datasets(found.datasets or None):
                self.dataset.addItem(ds["name"], ds["name"])
            if not self.name.text() and self.dataset.count():
                self.name.setText(f"{self.dataset.currentData()}-passages")
        self.path.setPlaceholderText("Choose a folder" if self._format()[3] else "Choose a file")
        self.message.setText("")

    def _path_changed(self, text: str) -> None:
        if text.strip():
            self.name.setText(Path(text.strip()).stem)

    def choose(self) -> None:
        _key, _label, filters, folder = self._format()
        start = setting("import/dir", str(Path.home()))
        if folder:
            path = QFileDialog.getExistingDirectory(self, "Choose a folder", start)
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Choose a file", start, filters)
        if path:
            set_setting("import/dir", str(Path(path).parent))
            self.path.setText(path)

    # -- importing --------------------------------------------------------------------------

    def start(self) -> None:
        kind, fmt = self.kind.currentData(), self._format()[0]
        source = self.dataset.currentData() if fmt == "dataset" else self.path.text().strip()
        name = self.name.text().strip()
        if not source:
            self._fail("Choose what to import first.")
            return
        if not name:
            self._fail("Give it a name.")
            return
        self.message.setText("")
        self.bar.setVisible(True)
        self.bar.setRange(0, 0)
        self.import_button.setEnabled(False)
        self.job = self.ctx.jobs.start(
            import_job,
            kind,
            fmt,
            source,
            name,
            self.replace.isChecked(),
            on_progress=self._progress,
            on_done=self._done,
            on_error=self._error,
            on_ended=self._ended,
        )

    def _progress(self, p: Progress) -> None:
        self.bar.setRange(0, max(p.total, 1))
        self.bar.setValue(p.done)

    def _done(self, report: str) -> None:
        self.report = report
        self.ctx.notify_data()
        self.ctx.status(report)
        self.message.setStyleSheet("color: #15803d;")
        self.message.setText(report)
        self.accept()

    def _error(self, exc: BaseException) -> None:
        text = str(exc) or type(exc).__name__
        if isinstance(exc, AlreadyExists):
            text += " — tick “Replace” or choose another name."
        self._fail(text)

    def _fail(self, text: str) -> None:
        self.message.setStyleSheet("color: #b91c1c;")
        self.message.setText(text)

    def _ended(self) -> None:
        self.job = None
        self.bar.setVisible(False)
        self.import_button.setEnabled(True)

    def _close(self) -> None:
        if self.job is not None:
            self.job.stop()
        self.reject()
