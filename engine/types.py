"""Types of the plain data medexam passes around: JSON values (what the store keeps in its
JSON columns: items, settings, summaries, answers' extra fields) and the rows read back.

An item, a summary or a run's settings is a JSON object (:data:`JSONDict`) whose values are
read without narrowing: their shape is the activity's, known to the code that reads them and
not to the type checker (as :func:`json.loads` returns ``Any``), and ``json.dumps`` refuses
anything that is not JSON when the store writes them. A function that takes any one value and
looks at what it is takes a :data:`JSONValue`. The rows the store reads back are typed dicts,
one per table (:class:`RunRow`, :class:`AnswerRow`, :class:`DatasetRow`, :class:`ScoreRow`):
their keys are the table's columns, JSON columns decoded.

>>> from engine.types import JSONDict
>>> summary: JSONDict = {"accuracy": 40.0, "by_type": {"A": {"n": 2}}}
>>> sorted(RunRow.__required_keys__)[:4]
['activity', 'dataset', 'dataset_fingerprint', 'error']
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypedDict

#: A JSON scalar.
Scalar: TypeAlias = str | int | float | bool | None
#: Any JSON value: a scalar, a list of values or an object of values.
JSONValue: TypeAlias = "Scalar | list[JSONValue] | dict[str, JSONValue]"
#: A JSON object: an item, a summary, a run's settings, an answer's ``extra``; its values
#: are ``Any`` to the type checker, their shape being the activity's (see above).
JSONDict: TypeAlias = "dict[str, Any]"

#: An item of a data set as stored (a question, a case…).
Item: TypeAlias = JSONDict
#: A row as a function that only reads it takes it: a table's typed row (:class:`RunRow`…)
#: or one of no table of its own (a report's line, an importer's result), JSON decoded.
Row: TypeAlias = "Mapping[str, Any]"
#: A run's summary: metric keys and their values (nested blocks for breakdowns).
Summary: TypeAlias = JSONDict
#: A score's value: a number, a boolean, or None (not applicable to this answer).
ScoreValue: TypeAlias = float | int | bool | None


@dataclass(frozen=True)
class Scored:
    """What one scorer gave one answer: its name and version (the
    ``scores`` rows the store keeps, :mod:`engine.core.scoring`), and the values by key."""

    scorer: str
    version: int
    values: dict[str, ScoreValue]
    explanations: dict[str, str] = field(default_factory=dict)


class DatasetRow(TypedDict):
    """A data set as :meth:`engine.store.store.Store.dataset` reads it (its items apart)."""

    id: int
    name: str
    activity: str
    source: str
    created: str
    n_items: int
    meta: JSONDict
    fingerprint: (
        str | None
    )  # of its items' keys and contents (engine.store.fingerprint.items_fingerprint)


class RunRow(TypedDict):
    """A run as :meth:`engine.store.store.Store.run` reads it: ``status`` is one of
    :data:`engine.store.store.RUN_STATUSES` (``interrupted`` once its owner process is gone),
    ``runner`` is ``model``, ``person`` or a baseline's name."""

    id: int
    activity: str
    dataset: str
    model: str
    runner: str
    settings: JSONDict
    status: str
    started: str
    finished: str | None
    n_total: int
    n_done: int
    summary: Summary
    error: str | None
    owner_pid: int | None
    owner_host: str | None
    owner_started: float | None
    dataset_fingerprint: str | None  # its data set's items when it started


class AnswerRow(TypedDict):
    """An answer as :meth:`engine.store.store.Store.answers` reads it: its columns, with
    ``scores`` (every computed scorer's values by key) and ``correct`` (1, 0, or None when
    nothing scored it) read from the scores table."""

    id: int
    run_id: int
    item_key: str
    position: int | None
    response: str
    chosen: str | None
    gold: str | None
    extra: JSONDict
    latency_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    created: str
    scores: dict[str, ScoreValue]
    correct: int | None


class Turn(TypedDict):
    """One utterance of a consultation, as recorded (and stored with more columns,
    :class:`TurnRow`): its number (0 is the opening request), who spoke (``doctor`` or
    ``patient``), the text, and its ``extra`` (``kind``: opening, question, reply or conclusion; the
    facts of a reply…)."""

    turn: int
    role: str
    text: str
    extra: JSONDict
    latency_s: float | None
    tokens: int | None


class TurnRow(Turn):
    """A turn of a consultation as :meth:`engine.store.store.Store.turns` reads it (its ``extra``
    decoded): a :class:`Turn` with its run, case and time."""

    id: int
    run_id: int
    item_key: str
    created: str


class ScoreRow(TypedDict):
    """One stored score (:meth:`engine.store.store.Store.score_rows`): a scorer's value of one
    key for one answer; ``scorer`` is ``name@who`` when a person or a judge gave it."""

    item_key: str
    scorer: str
    version: int
    key: str
    value: ScoreValue
    explanation: str | None
    created: str


class RatedRow(ScoreRow):
    """A score someone gave (:meth:`engine.store.store.Store.rated_rows`), with its run."""

    run_id: int


@dataclass
class Face:
    """What a card shows: the question and options (front), the right letters and the gold
    explanation (back), and its tags. French questions may have several right letters;
    ``heading`` introduces the explanation in the terminal (the exam's: ``解析：``)."""

    question: str
    options: list[tuple[str, str]]
    gold: list[str]
    explanation: str
    multi: bool
    tags: dict[str, str] = field(default_factory=dict)
    heading: str = ""

    @property
    def letters(self) -> str:
        return "".join(letter for letter, _ in self.options)


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
