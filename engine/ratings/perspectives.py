"""The five perspectives an explanation is rated on (the ExplainCPE paper's Table 4), and
what a rater sees of one answer (:class:`Explained`): the question, its options, the gold
answer and explanation, and the letter and explanation the model gave — never the model.

>>> KEYS
('well_formed', 'support', 'correctness', 'validity', 'novelty')
>>> check_ratings({"well_formed": 5, "support": "4", "correctness": 3, "validity": 2, "novelty": 1})
{'well_formed': 5, 'support': 4, 'correctness': 3, 'validity': 2, 'novelty': 1}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.registry import get_activity

if TYPE_CHECKING:
    from engine.types import JSONDict, Row


@dataclass(frozen=True)
class Perspective:
    """One question a rater answers from 1 to 5: its key, a short name, the question in
    English and in Chinese."""

    key: str
    name: str
    question: str
    question_zh: str


PERSPECTIVES = (
    Perspective("well_formed", "Well-formed", "Is the explanation a well-formed sentence?",
                "解释是否是通顺、完整的句子？"),
    Perspective("support", "Support", "Does the explanation support the answer?",
                "解释是否支持所选的答案？"),
    Perspective("correctness", "Correctness", "Is the content of the explanation factually correct?",
                "解释的内容在事实上是否正确？"),
    Perspective("validity", "Validity",
                "Does the explanation provide a valid reasoning path for the answer?",
                "解释是否给出了得出该答案的有效推理过程？"),
    Perspective("novelty", "Novelty",
                "Does the explanation add new information, rather than recombining "
                "information from the question?",
                "解释是否提供了新的信息，而不只是重组题目中的信息？"),
)  # fmt: skip
KEYS = tuple(p.key for p in PERSPECTIVES)
NAMES = {p.key: p.name for p in PERSPECTIVES}
LOWEST, HIGHEST = 1, 5


class RatingError(UserError):
    """Ratings that are not five whole numbers from 1 to 5, or nothing to rate."""


def check_ratings(values: Mapping[str, object]) -> dict[str, int]:
    """The five ratings as whole numbers from 1 to 5, or :class:`RatingError`."""
    out: dict[str, int] = {}
    for key in KEYS:
        raw = values.get(key)
        try:
            number = int(str(raw).strip()) if raw is not None and str(raw).strip() else None
        except ValueError:
            number = None
        if number is None or not LOWEST <= number <= HIGHEST:
            raise RatingError(f"{NAMES[key]} needs a rating from 1 to 5 (got {raw!r})")
        out[key] = number
    return out


@dataclass(frozen=True)
class Explained:
    """What a rater (a person or a judge) reads of one answer. ``options`` are
    ``(letter, text)`` pairs; ``gold`` the right answer ("B", "A + C"); ``answer`` the one
    the model gave; ``explanation`` the text rated; ``language`` "zh", "en" or "fr";
    ``topic`` the item's question types (ExplainCPE's ``type1``–``type3``)."""

    question: str
    options: tuple[tuple[str, str], ...]
    gold: str
    answer: str
    explanation: str
    gold_explanation: str = ""
    language: str = "en"
    topic: JSONDict = field(default_factory=dict)

    @property
    def answer_shown(self) -> str:
        """The answer given as a rater reads it: its letters with their options' texts
        ("C. 阿奇霉素"), or that the reply gave none a letter could be read from."""
        if self.answer.strip() in ("", "—"):
            return "— (no answer could be read from the reply)"
        return with_texts(self.answer, self.options)

    @property
    def gold_shown(self) -> str:
        """The right answer with its options' texts ("A. 呋喃妥因")."""
        return with_texts(self.gold, self.options) if self.gold.strip() else "—"


def with_texts(letters: str, options: Sequence[tuple[str, str]]) -> str:
    """``letters`` ("C", "A + D") each with its option's text ("A. x + D. y"); as they are
    when one is no option's letter (a diagnosis in words).

    >>> with_texts("A + C", (("A", "甲"), ("B", "乙"), ("C", "丙")))
    'A. 甲 + C. 丙'
    """
    texts = dict(options)
    found = [x for x in re.split(r"\s*[+,、]\s*", letters.strip()) if x]
    if not found or any(x not in texts for x in found):
        return letters
    return " + ".join(f"{x}. {texts[x]}" for x in found)


def explained(run: Row, item: Row, answer: Row) -> Explained | None:
    """What a rater reads of ``answer`` (to ``item``, in ``run``), by the activity's own
    view of it (``Activity.explained``); None when the answer has no explanation to rate
    (a letter picked by probabilities, a failed answer)."""
    act = get_activity(str(run["activity"]))
    if not act.explained:
        return None
    extra = answer.get("extra")
    if isinstance(extra, dict) and extra.get("error"):
        return None
    found = act.explained.load()(run, item, answer)
    return found if found is not None and found.explanation.strip() else None


def rateable(run: Row) -> bool:
    """Whether a run's answers can carry explanations at all (its activity has a view)."""
    return bool(get_activity(str(run["activity"])).explained)
