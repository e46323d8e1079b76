"""The frame of an activity's screen and what its panels share: the header over the tabs
(the title is the activity's name from :mod:`engine.activities`) and the activity's sample
data set imported once, the busy state of a person's session whose engine calls run one at
a time on the session thread, and scrolled areas (:func:`scrolled`, :class:`VerticalScroll`,
which keeps a panel whole in a narrow window)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QScrollArea, QTabWidget, QWidget

from engine.activities import activity
from gui.widgets.common import AppContext, Header, page_column, show_error

if TYPE_CHECKING:
    from engine.core.progress import Progress
    from engine.registry import Lazy
    from engine.store.store import Store
    from gui.workers import Job, Worker

#: What a session call returns (handed to ``on_done``).
T = TypeVar("T")
#: A panel put in a tab.
P = TypeVar("P", bound=QWidget)


class ActivityScreen(QWidget):
    """An activity's screen: its name and a line saying what it is for, over its tabs
    (:meth:`add_tab`). ``closing()`` is called when the window closes.

    ``sample`` is the activity's ``ensure_sample(store)``, imported when used: the sample data
    set is imported once, before the panels are made, or with ``background``
    in a worker (the pickers hear of it when it is in); the app works without it."""

    def __init__(
        self,
        ctx: AppContext,
        activity_id: str,
        subtitle: str,
        sample: Lazy[Callable[[Store], object]] | None = None,
        background: bool = False,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self.activity = activity(activity_id)
        self.header = Header(self.activity.name, subtitle)
        outer = page_column(self, self.header)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        outer.addWidget(self.tabs, 1)
        if sample:
            self._load_sample(sample, background)

    def _load_sample(self, sample: Lazy[Callable[[Store], object]], background: bool) -> None:
        def ensure(store: Store) -> object:
            return sample.load()(store)

        def failed(exc: BaseException) -> None:
            self.ctx.status(f"The sample {self.activity.item_noun}s could not be loaded: {exc}")

        if background:
            self.ctx.jobs.start(
                lambda job: ensure(job.store),
                on_done=lambda _names: self.ctx.notify_data(),
                on_error=failed,
            )
            return
        try:
            ensure(self.ctx.store)
        except Exception as exc:  # noqa: BLE001 - the app works without the sample
            failed(exc)

    def add_tab(self, panel: P, title: str) -> P:
        self.tabs.addTab(panel, title)
        return panel

    def closing(self) -> None:
        """The window closes: each panel over a person's session (:class:`SessionCalls`)
        stops what it streams and closes its unfinished session."""
        for i in range(self.tabs.count()):
            panel = self.tabs.widget(i)
            if isinstance(panel, SessionCalls):
                panel.closing()


def under_way(session: T | None) -> T:
    """The session a panel shows (its question page shows only while one is under way)."""
    if session is None:
        raise RuntimeError("no session is under way")
    return session


class SessionCalls:
    """For a panel over a person's session (a mixin beside ``QWidget``): :meth:`call` runs
    one engine call on the session thread (which owns the session's store connection),
    with ``busy`` true meanwhile and the panel's ``_enable()`` called as it changes; an
    error is shown in a dialog."""

    ctx: AppContext
    busy: bool = False

    def _enable(self) -> None:
        """Enable the panel's controls for its state (``busy`` included)."""

    def closing(self) -> None:
        """The window closes: stop what the panel streams, close an unfinished session."""

    def call(
        self,
        fn: Callable[..., T],
        on_done: Callable[[T], None],
        *args: Any,
        progress: Callable[[Progress], None] | None = None,
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

    def stream(
        self,
        fn: Callable[[Job], T],
        on_piece: Callable[[str], None],
        *,
        on_done: Callable[[T], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_ended: Callable[[], None] | None = None,
    ) -> Worker:
        """Run ``fn(job)``, which streams a model's text with ``job.piece``, on the session
        thread; each piece goes to ``on_piece`` in the UI. ``busy`` is left as it is; stop
        the stream with :meth:`stop_stream`."""
        return self.ctx.jobs.start(
            fn,
            pool="session",
            on_piece=on_piece,
            on_done=on_done,
            on_error=on_error,
            on_ended=on_ended,
        )

    def stop_stream(self, worker: Worker | None) -> None:
        """Stop the stream ``worker`` runs (if any) and the loaded model writing it."""
        if worker is not None:
            worker.stop()
            if self.ctx.host.model is not None:
                self.ctx.host.model.cancel()

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
        inner = widget.minimumSizeHint() if (widget := self.widget()) is not None else QSize()
        return QSize(self._width(inner.width()), 80)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        inner = widget.sizeHint() if (widget := self.widget()) is not None else QSize()
        return QSize(self._width(inner.width()), inner.height())
