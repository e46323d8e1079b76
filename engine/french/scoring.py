"""Scoring multi-answer questions: Hamming score and exact match ratio (EMR).

For one question, the Hamming score is ``|pred ∩ gold| / |pred ∪ gold|`` (1 when both are
empty) and the exact match is ``pred == gold``. Both are averaged over questions and given in
percent, overall and by number of correct answers (``by_n_answers``).

>>> hamming({"a", "d"}, {"a", "b", "d"})
0.666...
>>> summarise([({"a"}, {"a"}), ({"b"}, {"a", "b"})])  # doctest: +NORMALIZE_WHITESPACE
{'n': 2, 'hamming': 75.0, 'emr': 50.0,
 'by_n_answers': {'1': {'n': 1, 'hamming': 100.0, 'emr': 100.0},
                  '2': {'n': 1, 'hamming': 50.0, 'emr': 0.0}}}
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from engine.errors import UserError
from engine.french.dataset import LETTERS, DatasetError, load_questions
from engine.french.reader import parse_letters
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONValue


def hamming(pred: Iterable[str], gold: Iterable[str]) -> float:
    """``|pred ∩ gold| / |pred ∪ gold|``; 1.0 when both are empty."""
    p, g = set(pred), set(gold)
    union = p | g
    return 1.0 if not union else len(p & g) / len(union)


def exact(pred: Iterable[str], gold: Iterable[str]) -> bool:
    return set(pred) == set(gold)


class Scores(TypedDict):
    """Hamming score and EMR (percent) over ``n`` questions (None without any);
    :func:`summarise` adds the blocks by number of correct answers, :func:`score_files` the
    ``missing`` and ``unknown`` counts."""

    n: int
    hamming: float | None
    emr: float | None
    by_n_answers: NotRequired[dict[str, Scores]]
    missing: NotRequired[int]
    unknown: NotRequired[int]


def _block(pairs: list[tuple[set[str], set[str]]]) -> Scores:
    n = len(pairs)
    if not n:
        return {"n": 0, "hamming": None, "emr": None}
    return {
        "n": n,
        "hamming": round(100 * sum(hamming(p, g) for p, g in pairs) / n, 2),
        "emr": round(100 * sum(exact(p, g) for p, g in pairs) / n, 2),
    }


def summarise(pairs: Iterable[tuple[Iterable[str], Iterable[str]]]) -> Scores:
    """``{n, hamming, emr, by_n_answers}`` over ``(pred, gold)`` letter sets (percent)."""
    rows = [(set(p), set(g)) for p, g in pairs]
    out = _block(rows)
    groups: dict[int, list[tuple[set[str], set[str]]]] = {}
    for p, g in rows:
        groups.setdefault(len(g), []).append((p, g))
    out["by_n_answers"] = {str(n): _block(groups[n]) for n in sorted(groups)}
    return out


def answer_letters(answer: JSONValue) -> list[str]:
    """A prediction as sorted lower-case letters: ``"A + D"``, ``"ad"``, ``"A,D"``,
    ``["a", "d"]``, ``""`` or None (no answer) all work.

    >>> answer_letters("A + D"), answer_letters(["d", "A"]), answer_letters(None)
    (['a', 'd'], ['a', 'd'], [])
    """
    if answer is None:
        return []
    if isinstance(answer, list | tuple | set):
        letters = set()
        for x in answer:
            if not isinstance(x, str) or x.strip().lower() not in LETTERS:
                raise ValueError(f"not an answer letter: {x!r}")
            letters.add(x.strip().lower())
        return sorted(letters)
    if isinstance(answer, str):
        return parse_letters(answer)
    raise ValueError(f"an answer must be a string or a list of letters, not {answer!r}")


class ScoreError(UserError, ValueError):
    """A gold or prediction file that cannot be scored."""


def read_predictions(path: str | Path) -> dict[str, list[str]]:
    """``{id: letters}`` from a JSONL file of ``{"id", "answer"}`` lines (or a JSON list of
    such objects)."""
    path = Path(path)
    out: dict[str, list[str]] = {}
    try:
        records = jsonio.numbered_records(path, keys=(), objects=False)
    except jsonio.RecordsError as exc:
        raise ScoreError(str(exc)) from None
    for _number, where, record in records:
        try:
            if not isinstance(record, dict) or "id" not in record:
                raise ValueError("expected an object with 'id' and 'answer'")
            out[str(record["id"])] = answer_letters(record.get("answer"))
        except ValueError as exc:
            raise ScoreError(f"{path}: {where}: {exc}") from None
    return out


def score_files(gold_path: str | Path, predictions_path: str | Path) -> Scores:
    """Score a predictions JSONL file against a FrenchMedMCQA gold file.

    Questions without a prediction are left out of the scores and counted in ``missing``;
    predictions for unknown ids are counted in ``unknown``.
    """
    try:
        questions = load_questions(gold_path)
    except DatasetError as exc:
        raise ScoreError(str(exc)) from None
    preds = read_predictions(predictions_path)
    gold_ids = {q["id"] for q in questions}
    pairs = [(preds[q["id"]], q["correct_answers"]) for q in questions if q["id"] in preds]
    out = summarise(pairs)
    out["missing"] = len(gold_ids - preds.keys())
    out["unknown"] = len(preds.keys() - gold_ids)
    return out
