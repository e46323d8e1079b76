"""The app always current: what another medexam process commits to the database (an import
on the command line, a run in a second window) reaches the screens within seconds, with no
restart — a timer asks :class:`engine.store.changes.Changes` and tells the screens through the
context's ``notify_data`` / ``notify_runs``."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from engine.store.changes import Changes

if TYPE_CHECKING:
    from gui.widgets.common import AppContext

INTERVAL_MS = 1500


class DatabaseWatch(QObject):
    """Looks at ``ctx.store``'s database every ``interval_ms`` while the app runs."""

    def __init__(self, ctx: AppContext, parent: QObject, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.changes = Changes(ctx.store)
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.look)
        self.timer.start()

    def look(self) -> None:
        """Tell the screens what changed since the last look (nothing: no call)."""
        try:
            changed = self.changes.since()
        except sqlite3.Error:  # a busy or closing database: the next look says
            return
        if "data" in changed:
            self.ctx.notify_data()
        if "runs" in changed:
            self.ctx.notify_runs()
