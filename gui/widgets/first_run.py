"""The note a new user sees once, on the app's first start: where medexam keeps its data, how
to add a model and how to import a data set.

It is a window of its own beside the main one, not modal: nothing waits for it. Whether it
was shown is remembered in the app's settings (``firstRun/noteShown``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from gui.models import set_setting, setting

SHOWN_KEY = "firstRun/noteShown"


def note_html(data: Path, database: Path, models: Path) -> str:
    """The note's text (rich text) for these folders."""

    def code(path: Path) -> str:
        return f"<code>{html.escape(str(path))}</code>"

    return (
        "<h3>Welcome to medexam</h3>"
        "<p>Everything runs on this computer, offline.</p>"
        f"<p><b>Your data</b> lives in {code(data)}: the database {code(database)} (imported "
        "data sets, runs, answers and reviews), the app's settings, the models you add and "
        "the retrieval indexes it builds.</p>"
        "<p><b>Ready to use:</b> each screen has a small sample data set, and the embedded "
        "SmolLM2 model answers offline.</p>"
        "<p><b>Add a model:</b> <i>Add .gguf file…</i> on the <i>Models</i> screen, or copy "
        f"a <code>.gguf</code> file into {code(models)}; <i>Add server…</i> there adds a "
        "model served by vLLM, llama-server or Ollama.</p>"
        "<p><b>Import a data set:</b> <i>Import data…</i> at the bottom of the sidebar, or the "
        "<i>File</i> menu: ExplainCPE exam questions, AgentClinic consultation cases, "
        "FrenchMedMCQA questions or a French corpus.</p>"
        "<p>The command line does the same: <code>medexam models add PATH</code>, "
        "<code>medexam import FORMAT FILE</code>.</p>"
    )


class FirstRunNote(QDialog):
    """The note, with a button that opens the data folder."""

    def __init__(self, data: Path, database: Path, models: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("firstRunNote")
        self.setWindowTitle("Welcome to medexam")
        self.setModal(False)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.data = data
        self.label = QLabel(note_html(data, database, models))
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setMinimumWidth(520)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
        self.open_button = buttons.addButton(
            "Open the data folder", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.open_button.clicked.connect(self.open_data_folder)
        buttons.accepted.connect(self.accept)
        lay = QVBoxLayout(self)
        lay.addWidget(self.label)
        lay.addWidget(buttons)

    def open_data_folder(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.data)))


def show_once(window: Any) -> FirstRunNote | None:
    """Show the note beside ``window`` (a ready main window) unless it was shown before;
    return it when shown."""
    if setting(SHOWN_KEY, False, bool):
        return None
    from engine.paths import data_dir, models_dir

    note = FirstRunNote(data_dir(), Path(window.ctx.store.path), models_dir(), window)
    note.show()
    set_setting(SHOWN_KEY, True)
    return note
