"""The words that tell an exam run apart in its label (:func:`engine.reports.label.run_label`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import JSONDict, Row

#: Exam settings named in a label only when they differ from their defaults.
_EXAM_EXTRAS = ("template", "seed", "temperature", "max_tokens", "shots_from")


def _exam(settings: JSONDict, person: bool) -> list[str]:
    if person:
        parts = [str(settings.get("mode") or "practice")]
        if settings.get("time_limit_s"):
            parts.append(f"{round(settings['time_limit_s'] / 60)} min")
        return parts
    parts = [
        str(settings.get("method", "generate")),
        f"{int(settings.get('shots') or 0)}-shot",
        str(settings.get("lang", "zh")),
        "instr" if settings.get("instruction", True) else "no instr",
    ]
    from engine.exam.prompts import PROMPT_VERSION
    from engine.exam.settings import ExamSettings, prompt_version_of

    version = prompt_version_of(settings)
    if version != PROMPT_VERSION:  # a run of other prompts is not comparable as it stands
        parts.append(f"prompts v{version}")
    defaults = ExamSettings().as_dict()
    for key in _EXAM_EXTRAS:
        default = defaults.get(key)
        value = settings.get(key, default)
        if value != default and not (key == "max_tokens" and parts[0] == "logprob"):
            parts.append(f"{key.replace('_', ' ')} {value}")
    return parts


def exam_parts(run: Row) -> list[str]:
    """The words that tell an exam run apart (method, examples, language, instruction)."""
    settings = run.get("settings") or {}
    if settings.get("source") == "published":
        return ["published", str(settings.get("setting") or settings.get("field") or "")]
    return _exam(settings, run.get("runner") == "person")
