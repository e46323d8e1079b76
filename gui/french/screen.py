"""French QA: FrenchMedMCQA questions (one or more right options) with the passages a
retriever finds for them (:mod:`gui.french.item`, in the one practice panel), and model runs
over a question set on the shared run panel, with the retrieval settings.

Retrieval, the highlighted spans, scoring and the model reader are :mod:`engine.french`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QWidget

from engine.core.progress import Cancelled
from engine.fields import SettingInfo
from engine.registry import FUNCTION, Lazy
from gui.french.passages import RetrievalControls, build_message, load_retriever
from gui.widgets.common import AppContext
from gui.widgets.practice import PracticePanel
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

if TYPE_CHECKING:
    from engine.types import JSONDict

SUBTITLE = (
    "Questions de pharmacie (FrenchMedMCQA): one or more options are right. Passages from a "
    "corpus help you decide."
)


class FrenchScreen(ActivityScreen):
    """The sample questions and corpus are imported once, in the background (the French
    engine loads its analyser)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx,
            "french",
            SUBTITLE,
            sample=Lazy("engine.french.dataset", "ensure_sample", FUNCTION),
            background=True,
        )
        self.practice = self.add_tab(PracticePanel(ctx, "french"), "Practice")
        self.runs = self.add_tab(FrenchModelRun(ctx), "Model run")


class FrenchModelRun(RunPanel):
    """A model answers French questions with the passages of the chosen retriever (the
    index is built first when needed, its progress shown; Stop cancels it):
    :mod:`engine.french.runner`."""

    activity_id = "french"
    settings_key = "french_run"
    indexing: tuple[str, str] | None = None  # corpus and retriever being indexed
    build_cancelled = False

    def setting_rows(self, info: SettingInfo) -> list[tuple[str, QWidget]]:
        """The index and ``k`` are chosen as passages: a corpus, a retriever and k (the
        index is built from them, :meth:`prepare`)."""
        if info.name == "index":
            self.retrieval = RetrievalControls(self.ctx, self.settings_key, stacked=True)
            return [(info.label, self.retrieval)]
        if info.name == "k":
            return []
        return super().setting_rows(info)

    def setting_values(self, info: SettingInfo) -> JSONDict:
        if info.name == "index":
            corpus, retriever, k = self.retrieval.values
            if retriever and not corpus:
                raise ValueError("Import a corpus for the passages, or choose “No passages”.")
            return {"corpus": corpus, "retriever": retriever, "k": k}
        if info.name == "k":
            return {}
        return super().setting_values(info)

    def given(self) -> dict[str, Any]:
        values = super().given()
        self.indexing, self.build_cancelled = (values["corpus"], values["retriever"]), False
        return values

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
