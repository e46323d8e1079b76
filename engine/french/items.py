"""One FrenchMedMCQA question as stored: its options, its correct letters, its retrieval query.

The lowest layer of :mod:`engine.french`: it imports nothing else from the package, so the
data set (:mod:`engine.french.dataset`) and corpus (:mod:`engine.french.corpus`) modules can
both build on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from engine.types import Row

LETTERS = ("a", "b", "c", "d", "e")


class FrenchQuestion(TypedDict):
    """A FrenchMedMCQA question as stored (:func:`engine.french.dataset.normalise`); the
    file's other fields are kept as they are."""

    id: str
    question: str
    answers: dict[str, str]
    correct_answers: list[str]
    nbr_correct_answers: NotRequired[int]
    category: NotRequired[str | None]
    type: NotRequired[str]
    subject_name: NotRequired[str]
    sample: NotRequired[bool]


def options(item: Row) -> list[tuple[str, str]]:
    """``[("a", text), ..., ("e", text)]`` of a question."""
    return [(letter, item["answers"][letter]) for letter in LETTERS]


def gold(item: Row) -> frozenset[str]:
    """The correct letters of a question (lower case)."""
    return frozenset(c.lower() for c in item["correct_answers"])


def retrieval_query(item: Row) -> str:
    """The retrieval query: the question followed by its five options (as in the reference)."""
    return " ".join([item["question"], *(text for _, text in options(item))])


def question_source(dataset: str, qid: str) -> str:
    """The passage source naming one question of a data set (``--from-dataset`` passages)."""
    return f"{dataset}#{qid}"


def explained(run: Any, item: dict[str, Any], answer: Any) -> Any:
    """What a rater reads of a French answer written in words (a generated reply): the
    question, its options, the correct letters, the letters read from the reply and the
    reply itself; none for letters picked by probabilities."""
    from engine.types import Explained

    settings = run.get("settings") or {}
    if settings.get("method", "generate") != "generate":
        return None
    return Explained(
        question=str(item["question"]),
        options=tuple((k.upper(), str(v)) for k, v in options(item)),
        gold=" + ".join(sorted(c.upper() for c in gold(item))),
        answer=str(answer.get("chosen") or "—"),
        explanation=str(answer.get("response") or ""),
        language="fr",
        topic={"category": item["category"]} if item.get("category") else {},
    )
