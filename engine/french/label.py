"""The words that tell a French QA run apart in its label
(:func:`engine.reports.label.run_label`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import JSONDict, Row


def _french(settings: JSONDict) -> list[str]:
    if not settings.get("index"):
        parts = ["no passages"]
    else:
        retriever = settings.get("retriever") or settings["index"]
        parts = [f"{retriever} k={settings.get('k', 1)}"]
        if settings.get("corpus"):
            parts.append(str(settings["corpus"]))
    if settings.get("method") not in (None, "generate"):
        parts.append(str(settings["method"]))
    if settings.get("temperature"):
        parts.append(f"temperature {settings['temperature']}")
    threshold = settings.get("threshold")
    if settings.get("method") == "logprob" and threshold not in (None, 0.5):
        parts.append(f"threshold {threshold}")
    return parts


def french_parts(run: Row) -> list[str]:
    """The words that tell a French QA run apart (retriever, k, corpus)."""
    return _french(run.get("settings") or {})
