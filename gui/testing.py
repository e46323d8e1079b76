"""Helpers for driving the app from tests and scripts (pytest-qt, the screenshot script).

>>> window = open_window(tmp_path)                          # doctest: +SKIP
>>> exam = window.go("exam")                                # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget


def open_window(folder: str | Path) -> Any:
    """A ready main window over ``folder/medexam.db`` with its settings in
    ``folder/gui.ini``; its models come from the process's model pool (a model a test
    already holds there is not loaded again)."""
    from gui.app import create_app, create_window

    folder = Path(folder)
    create_app()
    return create_window(str(folder / "medexam.db"), settings_path=str(folder / "gui.ini"))


def message_boxes() -> list[QMessageBox]:
    """The message boxes open now."""
    return [
        w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()
    ]


def close_message_boxes() -> list[str]:
    """Close every open message box; return their texts."""
    texts = []
    for box in message_boxes():
        texts.append(box.text())
        box.done(0)
    return texts


def click_button(box: QMessageBox, text: str) -> None:
    """Press the button labelled ``text`` of a message box."""
    for b in box.buttons():
        if b.text() == text:
            b.click()
            return
    raise LookupError(f"no button {text!r} in {[b.text() for b in box.buttons()]}")


def end_session(panel: Any) -> None:
    """End a person's session on ``panel`` now, saying yes when it asks first."""
    panel.end_session()
    for box in message_boxes():
        click_button(box, "End session")


def idle(window: Any) -> bool:
    """No job is running."""
    return not window.jobs.active


def visible(widget: QWidget) -> bool:
    return widget.isVisible()
