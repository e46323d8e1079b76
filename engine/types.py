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
['activity', 'dataset', 'error', 'finished']
"""

from __future__ import annotations

from collections.abc import Mapping
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


class DatasetRow(TypedDict):
    """A data set as :meth:`engine.store.Store.dataset` reads it (its items apart)."""

    id: int
    name: str
    activity: str
    source: str
    created: str
    n_items: int
    meta: JSONDict
    fingerprint: (
        str | None
    )  # of its items' keys and contents (engine.fingerprint.items_fingerprint)


class RunRow(TypedDict):
    """A run as :meth:`engine.store.Store.run` reads it: ``status`` is one of
    :data:`engine.store.RUN_STATUSES` (``interrupted`` once its owner process is gone),
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
    """An answer as :meth:`engine.store.Store.answers` reads it: its columns, with
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


class TurnRow(TypedDict):
    """A turn of a consultation as :meth:`engine.store.Store.turns` reads it (its ``extra``
    decoded): a :class:`engine.consult.cases.Turn` with its run, case and time."""

    id: int
    run_id: int
    item_key: str
    turn: int
    role: str
    text: str
    extra: JSONDict
    latency_s: float | None
    tokens: int | None
    created: str


class ScoreRow(TypedDict):
    """One stored score (:meth:`engine.store.Store.score_rows`): a scorer's value of one
    key for one answer; ``scorer`` is ``name@who`` when a person or a judge gave it."""

    item_key: str
    scorer: str
    version: int
    key: str
    value: ScoreValue
    explanation: str | None
    created: str


class RatedRow(ScoreRow):
    """A score someone gave (:meth:`engine.store.Store.rated_rows`), with its run."""

    run_id: int
