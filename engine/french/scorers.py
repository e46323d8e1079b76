"""French QA's scorers: the options chosen against the right ones (Hamming score, exact
match), and whether retrieval found the question's own passage.

>>> from engine.core.scoring import Context
>>> options({"extra": {"pred": ["a"], "gold": ["a", "b"]}}, {}, Context(None, {}))
{'hamming': 0.5, 'exact': False, 'correct': False}
"""

from __future__ import annotations

from engine.core.scoring import Context, Metric, ScoreValue, share_of_all
from engine.french.scoring import exact, hamming
from engine.registry import register
from engine.types import Item, Row


def _letters(extra: object, key: str) -> set[str]:
    found = extra.get(key) if isinstance(extra, dict) else None
    return {str(x) for x in found} if isinstance(found, list) else set()


@register(
    "scorer",
    name="french.options",
    activities=("french",),
    keys=("hamming", "exact", "correct"),
    metrics={
        # exact matches over every question of the run (one not answered counts wrong)
        "accuracy": Metric("correct", share_of_all(), "Accuracy (%)", short="Accuracy (%)"),
        "hamming": Metric("hamming", label="Hamming score (%)", short="Hamming (%)"),
        "emr": Metric("exact", label="Exact match ratio (%)", short="EMR (%)"),
    },
)
def options(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """Hamming score ``|pred ∩ gold| / |pred ∪ gold|`` and exact match of the options
    chosen; an answer is correct when it matches exactly."""
    extra = answer.get("extra") or {}
    pred, gold = _letters(extra, "pred"), _letters(extra, "gold")
    match = exact(pred, gold)
    return {"hamming": hamming(pred, gold), "exact": match, "correct": match}


@register(
    "scorer", name="french.retrieval", activities=("french",), keys=("own_excluded", "retrieved")
)
def retrieval(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """What retrieval did for the question, as the reader's run recorded it: whether its own
    passage was among the top k (so left out of the reader's passages), and whether it was
    retrieved at all (only known for corpora made from this very data set)."""
    extra = answer.get("extra") or {}
    found = extra.get("retrieval") if isinstance(extra, dict) else None
    if not isinstance(found, dict):
        return {}
    out: dict[str, ScoreValue] = {"own_excluded": bool(found.get("own_excluded"))}
    if found.get("retrieved") is not None:
        out["retrieved"] = bool(found["retrieved"])
    return out
