"""The exam's scorers: the letter chosen, and ROUGE of a generated explanation against the
gold one (as the ExplainCPE paper computes it: jieba words, F-measure). A run of published
responses that carry their published judgements (:mod:`engine.exam.responses`) is scored
right or wrong by those judgements instead of the letter, as the paper reports it.

>>> from engine.core.scoring import Context
>>> letter({"chosen": "B", "gold": "B"}, {}, Context(None, {}))
{'correct': True}
"""

from __future__ import annotations

from engine.core.scoring import Context, Metric, ScoreValue, rounded_mean, share_of_all
from engine.core.solvers import PERSON
from engine.exam.metrics import JUDGE_RIGHT, ROUGE_KEYS, read_judgement
from engine.registry import register
from engine.text.rouge import rouge_scores
from engine.types import Item, Row

#: The exam's accuracy: over every question of the run (one not answered counts wrong).
#: The ROUGE metrics' labels.
ROUGE_LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
ACCURACY = {"accuracy": Metric("correct", share_of_all(1), "Accuracy (%)", short="Accuracy (%)")}


def _published_judged(context: Context) -> bool:
    """Whether the run is published responses that carry their published judgements."""
    settings = context.settings
    return settings.get("source") == "published" and bool(settings.get("judged"))


def _not_judged(context: Context) -> bool:
    return not _published_judged(context)


@register(
    "scorer",
    name="exam.published",
    activities=("exam",),
    keys=("correct",),
    applies=_published_judged,
    metrics=ACCURACY,
)
def published(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """Whether the published judgement of the response says it is right (正确)."""
    extra = answer.get("extra") or {}
    judgement = extra.get("judgement") if isinstance(extra, dict) else None
    return {} if judgement is None else {"correct": read_judgement(judgement) == JUDGE_RIGHT}


@register(
    "scorer",
    name="exam.letter",
    activities=("exam",),
    keys=("correct",),
    applies=_not_judged,
    metrics=ACCURACY,
)
def letter(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """Whether the letter chosen is the gold one (no letter is wrong)."""
    chosen = answer.get("chosen")
    return {"correct": chosen is not None and chosen == answer.get("gold")}


def _generated(context: Context) -> bool:
    """A model's generated answers (a person's letter has no explanation to compare)."""
    if context.run.get("runner") == PERSON:
        return False
    return context.settings.get("method", "generate") == "generate"


@register(
    "scorer",
    name="exam.rouge",
    activities=("exam",),
    keys=ROUGE_KEYS,
    applies=_generated,
    metrics={k: Metric(k, rounded_mean(3), ROUGE_LABELS[k]) for k in ROUGE_KEYS},
)
def rouge(answer: Row, item: Item, context: Context) -> dict[str, ScoreValue]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measure of the reply against the gold explanation
    (none for a question without one, or one the model could not take)."""
    gold = item.get("explanation")
    extra = answer.get("extra") or {}
    if not gold or (isinstance(extra, dict) and extra.get("error")):
        return {}
    found = rouge_scores(str(answer.get("response") or ""), str(gold))
    return {k: round(v.fmeasure, 6) for k, v in found.items()}
