"""French QA: FrenchMedMCQA questions (one or more right options) with the passages a
retriever finds for them (:mod:`gui.widgets.french_practice`), and model runs over a
question set on the shared run panel, with the retrieval settings.

Retrieval, the highlighted spans, scoring and the model reader are :mod:`engine.french`'s.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from engine.progress import Cancelled
from gui.models import set_setting, setting
from gui.widgets.common import AppContext, ModelCombo, combo
from gui.widgets.french_passages import (
    HIGHLIGHT,
    RETRIEVERS,
    RetrievalControls,
    build_message,
    load_retriever,
    passages_html,
)
from gui.widgets.french_practice import FrenchPractice
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

__all__ = [
    "HIGHLIGHT",
    "RETRIEVERS",
    "FrenchModelRun",
    "FrenchPractice",
    "FrenchScreen",
    "RetrievalControls",
    "load_retriever",
    "passages_html",
]

METHODS = [
    ("generate", "Write the letters"),
    ("logprob", "Ask option by option (probabilities)"),
]


class FrenchScreen(ActivityScreen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx,
            "french",
            "Questions de pharmacie (FrenchMedMCQA): one or more options are right. "
            "Passages from a corpus help you decide.",
        )
        self.practice = FrenchPractice(ctx)
        self.runs = FrenchModelRun(ctx)
        self.add_tab(self.practice, "Practice")
        self.add_tab(self.runs, "Model run")
        # The sample questions and corpus, imported once (in the background: the French
        # engine loads its analyser).
        ctx.jobs.start(
            self._ensure_sample, on_done=self._sample_ready, on_error=self._sample_failed
        )

    def closing(self) -> None:
        self.practice.closing()

    @staticmethod
    def _ensure_sample(job: Any) -> Any:
        from engine.french.dataset import ensure_sample

        return ensure_sample(job.store)

    def _sample_ready(self, _result: Any) -> None:
        self.ctx.notify_data()

    def _sample_failed(self, exc: BaseException) -> None:
        self.ctx.status(f"French sample not loaded: {exc}")


class FrenchModelRun(RunPanel):
    """A model answers French questions with the passages of the chosen retriever (the
    index is built first when needed, its progress shown; Stop cancels it):
    :mod:`engine.french.runner`."""

    activity_id = "french"
    settings_key = "french_run"
    indexing: tuple[str, str] | None = None  # corpus and retriever being indexed
    build_cancelled = False

    def settings_rows(self) -> list[tuple[str, QWidget]]:
        self.model = ModelCombo(self.ctx)
        self.retrieval = RetrievalControls(self.ctx, self.settings_key, stacked=True)
        self.method = combo(METHODS, setting(f"{self.settings_key}/method", "generate"))
        return [("Model", self.model), ("Passages", self.retrieval), ("Method", self.method)]

    def given(self) -> dict[str, Any]:
        if not self.model.name:
            raise ValueError("Choose a model.")
        corpus, retriever, k = self.retrieval.values
        if retriever and not corpus:
            raise ValueError("Import a corpus for the passages, or choose “No passages”.")
        set_setting(f"{self.settings_key}/method", self.method.currentData())
        self.indexing, self.build_cancelled = (corpus, retriever), False
        return {
            "model": self.model.name,
            "k": k,
            "method": self.method.currentData(),
            "limit": self.limit.value() or None,
            "corpus": corpus,
            "retriever": retriever,
        }

    def _progress(self, p: Any) -> None:
        info = p.info or {}
        if self.indexing is None or "passages" not in info or "item" in info:
            self.indexing = None
            super()._progress(p)
        elif self.job is not None and not self.job.job.cancelled:
            self.progress.update(p, build_message(self.indexing[1], p))

    def stop(self) -> None:
        super().stop()
        if self.job is not None and self.indexing is not None:
            self.progress.label.setText("Cancelling the index build…")

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            self.build_cancelled = True
        else:
            super()._failed(exc)

    def _ended(self) -> None:
        super()._ended()
        self.indexing = None
        if self.build_cancelled:
            message = "Index build cancelled; no run started."
            self.progress.label.setText(message)
            self.ctx.status(message)

    @staticmethod
    def prepare(job: Any, given: dict[str, Any]) -> dict[str, Any]:
        """Build (or open) the index of the chosen corpus and retriever."""
        settings = dict(given)
        index = load_retriever(job, settings.pop("corpus"), settings.pop("retriever"))
        settings["index"] = index.name if index is not None else None
        return settings
