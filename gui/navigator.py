"""What a screen may ask of the app's window: the :class:`Navigator` protocol.

Screens are given it (``ctx.window``, :class:`gui.widgets.common.AppContext`) instead of the
main window itself: they open the import dialog, have another screen start a practice
session, refresh the sidebar's count of due cards, and parent their dialogs on the window,
without importing :mod:`gui.main_window` or reaching into another screen's widgets. The
main window implements it; a screen that can start a practice session of given questions
implements :class:`Practising`. This module imports no other part of the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget


class Navigator(Protocol):
    """The window as the screens see it."""

    def widget(self) -> QWidget:
        """The window itself: the parent of dialogs and message boxes, closed last."""
        ...

    def open_import(self, kind: str | None = None) -> None:
        """Open the import dialog on the data sets of ``kind`` (an activity's id, ``corpus``)."""
        ...

    def practise(self, activity_id: str, dataset: str, keys: Sequence[str]) -> None:
        """Show the activity's screen and start a practice session of the questions
        ``keys`` of ``dataset`` there; :class:`engine.errors.UserError` when it cannot
        (a session is under way, the activity has no such screen)."""
        ...

    def update_review_count(self) -> None:
        """Show the number of cards due now beside Review in the sidebar."""
        ...


@runtime_checkable
class Practising(Protocol):
    """A screen that starts a practice session of given questions (the Exam screen)."""

    def practise(self, dataset: str, keys: Sequence[str]) -> None:
        """Show the practice tab and start a session of ``keys`` of ``dataset``;
        :class:`engine.errors.UserError` when a session is under way."""
        ...
