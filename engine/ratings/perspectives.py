"""The five perspectives an explanation is rated on (the ExplainCPE paper's Table 4), and
what a rater sees of one answer (:class:`Explained`): the question, its options, the gold
answer and explanation, and the letter and explanation the model gave — never the model.

>>> KEYS
('well_formed', 'support', 'correctness', 'validity', 'novelty')
>>> check_ratings({"well_formed": 5, "support": "4", "correctness": 3, "validity": 2, "novelty": 1})
{'well_formed': 5, 'support': 4, 'correctness': 3, 'validity': 2, 'novelty': 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.activities import get_activity
from engine.errors import UserError

if TYPE_CHECKING:
    from engine.types import Explained, Row


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
