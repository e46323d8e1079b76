"""An experiment played in the app (:func:`engine.experiments.run.run_experiment` on a
worker), as the Compare and Experiments screens both play one: its progress in the screen's
:class:`~gui.widgets.common.ProgressRow` (each line as ``medexam experiment run`` words it),
Stop stopping it, the status bar saying how it ended and an error in a message box."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QWidget

from engine.core.progress import Progress
from gui.widgets.common import AppContext, ProgressRow, show_error


class ExperimentJob:
    """The one experiment a screen plays at a time: :meth:`start` it, :attr:`job` is the
    worker while it plays (None when none does), ``on_ended`` is called once it ended."""

    def __init__(
        self,
        screen: QWidget,
        ctx: AppContext,
        row: ProgressRow,
        noun: str,
        on_ended: Callable[[], None],
        on_event: Callable[[Any], None] | None = None,
    ) -> None:
        self.screen, self.ctx, self.row, self.noun = screen, ctx, row, noun
        self.on_ended, self.on_event = on_ended, on_event
        self.job: Any = None
        row.stop_clicked.connect(self.stop)

    def start(self, fn: Callable[..., Any], *args: Any, message: str) -> bool:
        """Play ``fn(job, pool, *args)`` (it returns the experiment's ``{experiment_id,
        status}``) off the UI thread; False when one is already playing."""
        if self.job is not None:
            return False
        self.row.started(0, message)
        self.job = self.ctx.jobs.start(
            fn,
            self.ctx.host.lending(),
            *args,
            on_progress=self._progress,
            on_event=self.on_event,
            on_done=lambda result: self.ctx.status(
                f"{self.noun} #{result['experiment_id']}: {result['status']}"
            ),
            on_error=lambda exc: show_error(self.screen, exc, self.ctx),
            on_ended=self._ended,
        )
        return True

    def _progress(self, p: Progress) -> None:
        from engine.experiments.run import progress_line

        self.row.update(p, progress_line(p.info, p.message))

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()

    def _ended(self) -> None:
        self.job = None
        self.row.ended("")
        self.on_ended()
