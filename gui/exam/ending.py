"""Ending a person's session before its end: what would be lost is said, and the session
ends only once the person says so (a message box that does not block the app)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMessageBox, QWidget

if TYPE_CHECKING:
    from engine.exam.session import ExamSession


def lost_words(session: ExamSession, chosen: bool) -> str:
    """What ending ``session`` now would lose, in words ("" when nothing: every question
    answered, or the time up). ``chosen``: an option is chosen on the question shown and
    not answered yet."""
    if session.finished or session.expired or not session.remaining:
        return ""
    left = session.remaining
    fate = "count as wrong" if session.mode == "timed" else "are not asked"
    said = f"{left} question(s) not answered yet {fate}."
    if chosen:
        said += " The option chosen on this one is not kept."
    return said + "\n\nEnd the session now?"


def ask_to_end(
    parent: QWidget, session: ExamSession, chosen: bool, end: Callable[[], None]
) -> QMessageBox | None:
    """Call ``end`` now when nothing would be lost; else ask first (the box, open, is
    returned; ``end`` is called when its "End session" is pressed)."""
    lost = lost_words(session, chosen)
    if not lost:
        end()
        return None
    box = QMessageBox(QMessageBox.Icon.Question, "End the session?", lost, parent=parent)
    stop = box.addButton("End session", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Keep going", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(stop)
    box.finished.connect(lambda _result: end() if box.clickedButton() is stop else None)
    box.open()
    return box
