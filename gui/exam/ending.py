"""Ending a person's session before its end (Exam, French QA): what would be lost is said,
and the session ends only once the person says so (a message box that does not block the
app)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMessageBox, QWidget


def lost_words(left: int, timed: bool = False, chosen: bool = False) -> str:
    """What ending a session with ``left`` questions not answered would lose, in words (""
    when none is left); ``timed``: they count as wrong; ``chosen``: an option is chosen on
    the question shown and not answered yet."""
    if left <= 0:
        return ""
    fate = "count as wrong" if timed else "are not asked"
    said = f"{left} question(s) not answered yet {fate}."
    if chosen:
        said += " The option chosen on this one is not kept."
    return said + "\n\nEnd the session now?"


def ask_to_end(parent: QWidget, lost: str, end: Callable[[], None]) -> QMessageBox | None:
    """Call ``end`` now when nothing would be ``lost`` (:func:`lost_words`); else ask first
    (the box, open, is returned; ``end`` is called when its "End session" is pressed)."""
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
