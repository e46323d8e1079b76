"""The frame of an activity's screen and what its panels share: the header over the tabs
(the title is the activity's name from :mod:`engine.activities`), the busy state of a
person's session whose engine calls run one at a time on the session thread, and scrolled
areas (:func:`scrolled`, :class:`VerticalScroll`, which keeps a panel whole in a narrow
window)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QScrollArea, QTabWidget, QVBoxLayout, QWidget

from engine.activities import activity
from gui.widgets.common import AppContext, Header, show_error


class ActivityScreen(QWidget):
    """An activity's screen: its name and a line saying what it is for, over its tabs
    (:meth:`add_tab`). ``closing()`` is called when the window closes."""

    def __init__(self, ctx: AppContext, activity_id: str, subtitle: str) -> None:
        super().__init__()
        self.ctx = ctx
        self.activity = activity(activity_id)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(28, 22, 28, 20)
        outer.setSpacing(12)
        self.header = Header(self.activity.name, subtitle)
        outer.addWidget(self.header)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        outer.addWidget(self.tabs, 1)

    def add_tab(self, panel: QWidget, title: str) -> QWidget:
        self.tabs.addTab(panel, title)
        return panel

    def closing(self) -> None:
        """The window closes: panels stop what they stream and close unfinished sessions."""


class SessionCalls:
    """For a panel over a person's session (a mixin beside ``QWidget``): :meth:`call` runs
    one engine call on the session thread (which owns the session's store connection),
    with ``busy`` true meanwhile and the panel's ``_enable()`` called as it changes; an
    error is shown in a dialog."""

    ctx: AppContext
    busy: bool = False

    def _enable(self) -> None:
        """Enable the panel's controls for its state (``busy`` included)."""

    def call(
        self,
        fn: Callable[..., Any],
        on_done: Callable[[Any], None],
        *args: Any,
        progress: Callable[[Any], None] | None = None,
    ) -> None:
        """Run ``fn(job, *args)`` on the session thread; ``on_done(result)`` in the UI."""
        self.busy = True
        self._enable()
        self.ctx.jobs.start(
            fn,
            *args,
            pool="session",
            on_done=on_done,
            on_progress=progress,
            on_error=self._call_failed,
            on_ended=self._call_ended,
        )

    def _call_failed(self, exc: BaseException) -> None:
        show_error(self, exc, self.ctx)  # type: ignore[arg-type]

    def _call_ended(self) -> None:
        self.busy = False
        self._enable()


def scrolled(widget: QWidget) -> QScrollArea:
    """``widget`` in a frameless area that scrolls when it is taller than the screen."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(widget)
    return area


class VerticalScroll(QScrollArea):
    """A frameless area that scrolls its widget up and down, never sideways: it is as wide
    as the widget needs (so the widget is never squeezed) and as short as a layout wants."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__()
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # the widget's needs changed: so do the area's
        return super().eventFilter(watched, event)

    def _width(self, inner: int) -> int:
        bar = self.verticalScrollBar().sizeHint().width()
        return inner + bar + 2 * self.frameWidth()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        inner = self.widget().minimumSizeHint() if self.widget() is not None else QSize()
        return QSize(self._width(inner.width()), 80)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        inner = self.widget().sizeHint() if self.widget() is not None else QSize()
        return QSize(self._width(inner.width()), inner.height())
