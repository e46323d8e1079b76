"""The exam's scorers: the letter chosen, and ROUGE of a generated explanation against the
gold one (as the ExplainCPE paper computes it: jieba words, F-measure).

>>> from engine.scoring import Context
>>> letter({"chosen": "B", "gold": "B"}, {}, Context(None, {}))
{'correct': True}
"""

from __future__ import annotations

from engine.exam.metrics import ROUGE_KEYS
from engine.rouge import rouge_scores
from engine.scoring import Context, ScoreValue, scorer
from engine.types import Item, Row


@scorer("exam.letter", activities=("exam",), keys=("correct",))
def letter(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """Whether the letter chosen is the gold one (no letter is wrong)."""
    chosen = answer.get("chosen")
    return {"correct": chosen is not None and chosen == answer.get("gold")}


def _generated(context: Context) -> bool:
    return context.settings.get("method", "generate") == "generate"


@scorer("exam.rouge", activities=("exam",), keys=ROUGE_KEYS, applies=_generated)
def rouge(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measure of the reply against the gold explanation
    (none for a question without one, or one the model could not take)."""
    gold = item.get("explanation")
    extra = answer.get("extra") or {}
    if not gold or (isinstance(extra, dict) and extra.get("error")):
        return {}
    found = rouge_scores(str(answer.get("response") or ""), str(gold))
    return {k: round(v.fmeasure, 6) for k, v in found.items()}
