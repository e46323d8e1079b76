"""Consultation cases: the native JSON format, validation, import and the shipped samples.

A case is one simulated patient. The doctor sees only the opening request; the patient knows
the facts; after the consultation the doctor completes the task.

Native format
-------------
A file holds a JSON array of cases, an object ``{"cases": [...]}``, or one case per line
(JSONL). Each case::

    {
      "id": "sample-01",                     # required, unique in the file (string or number)
      "language": "en",                       # en, fr or zh (default en)
      "facts": [                              # required, at least one: the patient's record M
        {"key": "Age", "value": "19 years"},
        {"key": "Vital signs - Temperature", "value": "38.1 °C"}
      ],
      "initial_request": "Doctor, my belly hurts…",   # required: P0, first person, lay words
      "task": {                               # required: T, one of two kinds
        "question": "Which is the most likely diagnosis?",
        "options": {"A": "…", "B": "…", "C": "…"},    # 2 to 10 options, letters A, B, C…
        "answer": "B"                         #   (a list of option texts is lettered A, B, C…)
      },
      # or  "task": {"diagnosis": "Acute appendicitis"}
      "source": "where the case comes from",  # optional
      "sample": true,                         # optional: written for medexam as a sample
      "meta": {}                              # optional: anything else (kept as is)
    }

Other fields are ignored on import (stored cases also carry ``category``: ``mcq`` or
``diagnosis``). Keys and values are non-empty strings; a key may name a section with `` - ``
(``"Vital signs - Blood pressure"``). :func:`validate_case` checks one record and raises
:class:`CaseError` with the record number and the reason; :func:`import_cases` stores a whole file
as a data set of activity ``consult``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.paths import samples_dir
from engine.store.store import AlreadyExists, Store
from engine.text import jsonio
from engine.text.language import LANGUAGES
from engine.text.options import LETTERS

if TYPE_CHECKING:
    from engine.types import Explained, JSONDict, JSONValue, Row

ACTIVITY = "consult"
SAMPLE_DATASET = "cases-sample"
SAMPLE_FILE = "cases_sample.json"


class CaseError(UserError, ValueError):
    """A case record that does not follow the format (message names the record and reason)."""


@dataclass
class Fact:
    """One key–value item of the patient's medical information."""

    key: str
    value: str

    def text(self) -> str:
        return f"{self.key}: {self.value}"


@dataclass
class Task:
    """The final task: a multiple-choice question, or a diagnosis to name."""

    question: str = ""
    options: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    diagnosis: str = ""

    @property
    def kind(self) -> str:
        """``mcq`` or ``diagnosis``."""
        return "mcq" if self.options else "diagnosis"

    @property
    def gold(self) -> str:
        return self.answer if self.kind == "mcq" else self.diagnosis

    def to_dict(self) -> JSONDict:
        if self.kind == "mcq":
            return {"question": self.question, "options": dict(self.options), "answer": self.answer}
        out: JSONDict = {"diagnosis": self.diagnosis}
        if self.question:
            out["question"] = self.question
        return out


@dataclass
class Case:
    """A simulated patient: facts M, opening request P0 and final task T."""

    id: str
    facts: list[Fact]
    initial_request: str
    task: Task
    language: str = "en"
    source: str = ""
    sample: bool = False
    meta: JSONDict = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        return [f.key for f in self.facts]

    @property
    def values(self) -> list[str]:
        return [f.value for f in self.facts]

    def to_dict(self) -> JSONDict:
        out: JSONDict = {
            "id": self.id,
            "language": self.language,
            "facts": [{"key": f.key, "value": f.value} for f in self.facts],
            "initial_request": self.initial_request,
            "task": self.task.to_dict(),
            "source": self.source,
        }
        if self.sample:
            out["sample"] = True
        if self.meta:
            out["meta"] = self.meta
        out["category"] = self.task.kind
        return out

    @classmethod
    def from_dict(cls, data: JSONDict) -> Case:
        """A case from a dict already checked by :func:`validate_case` (or stored)."""
        return validate_case(data)


def _text(value: JSONValue) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def validate_case(record: JSONValue, number: int | None = None) -> Case:
    """Check one record of the native format and return it as a :class:`Case`.

    ``number`` (1-based) is named in the :class:`CaseError` message.
    """
    where = f"record {number}: " if number is not None else ""

    def fail(reason: str) -> CaseError:
        return CaseError(where + reason)

    if not isinstance(record, dict):
        raise fail(f"expected an object, got {type(record).__name__}")
    case_id = _text(record.get("id"))
    if case_id is None:
        raise fail("missing 'id'")
    language = record.get("language") or "en"
    if language not in LANGUAGES:
        raise fail(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    raw_facts = record.get("facts")
    if not isinstance(raw_facts, list) or not raw_facts:
        raise fail("'facts' must be a non-empty list of {key, value}")
    facts = []
    for i, fact in enumerate(raw_facts, 1):
        if not isinstance(fact, dict):
            raise fail(f"fact {i} is not an object with 'key' and 'value'")
        key, value = _text(fact.get("key")), _text(fact.get("value"))
        if key is None or value is None:
            raise fail(f"fact {i} needs a non-empty 'key' and 'value'")
        facts.append(Fact(key, value))
    request = _text(record.get("initial_request"))
    if request is None:
        raise fail("missing 'initial_request'")
    task = _validate_task(record.get("task"), fail)
    meta = record.get("meta") or {}
    if not isinstance(meta, dict):
        raise fail("'meta' must be an object")
    return Case(
        id=case_id,
        facts=facts,
        initial_request=request,
        task=task,
        language=language,
        source=str(record.get("source") or ""),
        sample=bool(record.get("sample", False)),
        meta=meta,
    )


def _validate_task(task: JSONValue, fail: Callable[[str], CaseError]) -> Task:
    if not isinstance(task, dict):
        raise fail("'task' must be an object with question/options/answer or diagnosis")
    if "options" in task:
        question = _text(task.get("question"))
        if question is None:
            raise fail("task has options but no 'question'")
        raw = task["options"]
        if isinstance(raw, list):
            raw = dict(zip(LETTERS, raw, strict=False))
        if not isinstance(raw, dict) or not 2 <= len(raw) <= len(LETTERS):
            raise fail("task 'options' must map 2 to 10 letters to texts")
        options: dict[str, str] = {}
        for letter, text in raw.items():
            value = _text(text)
            if str(letter).upper() not in LETTERS or value is None:
                raise fail(f"task option {letter!r} needs a letter A–J and a text")
            options[str(letter).upper()] = value
        answer = str(task.get("answer") or "").strip().upper()
        if answer not in options:
            raise fail(f"task answer {answer!r} is not one of the options {', '.join(options)}")
        return Task(question=question, options=options, answer=answer)
    diagnosis = _text(task.get("diagnosis"))
    if diagnosis is None:
        raise fail("task needs either 'options' (with question and answer) or 'diagnosis'")
    return Task(question=_text(task.get("question")) or "", diagnosis=diagnosis)


def read_records(path: str | Path) -> list[JSONValue]:
    """The raw records of a JSON array, ``{"cases": [...]}`` object (any other object is one
    case) or JSONL file."""
    try:
        return jsonio.read_records(path, keys=("cases",), objects=False)
    except jsonio.RecordsError as exc:
        raise CaseError(f"{exc.path.name}: {exc.detail}") from None


def read_cases(path: str | Path) -> list[Case]:
    """Validate every record of a native-format file; the first bad one raises CaseError."""
    cases = [validate_case(r, n) for n, r in enumerate(read_records(path), 1)]
    seen: set[str] = set()
    for n, case in enumerate(cases, 1):
        if case.id in seen:
            raise CaseError(f"record {n}: duplicate id {case.id!r}")
        seen.add(case.id)
    if not cases:
        raise CaseError("the file holds no cases")
    return cases


def save_cases(
    store: Store,
    name: str,
    cases: list[Case],
    source: str = "",
    meta: JSONDict | None = None,
    replace: bool = False,
) -> int:
    """Store cases as a data set of activity ``consult``; return its id."""
    return store.add_dataset(
        name, ACTIVITY, [c.to_dict() for c in cases], source=source, meta=meta, replace=replace
    )


def import_cases(
    store: Store, path: str | Path, name: str | None = None, replace: bool = False
) -> int:
    """Import a native-format file as data set ``name`` (default: the file's stem)."""
    path = Path(path)
    cases = read_cases(path)
    return save_cases(
        store,
        name or path.stem,
        cases,
        source=path.name,
        meta={"format": "cases"},
        replace=replace,
    )


def load_cases(store: Store, name: str, limit: int | None = None) -> list[Case]:
    """The cases of a stored data set, in order."""
    return [Case.from_dict(item) for item in store.items(name, limit=limit)]


def get_case(store: Store, name: str, case_id: str) -> Case:
    """One case of a stored data set by id (raises CaseError when absent)."""
    for case in load_cases(store, name):
        if case.id == str(case_id):
            return case
    raise CaseError(f"no case {case_id!r} in data set {name!r}")


def add_case(store: Store, name: str, case: Case) -> int:
    """Append (or replace by id) one case in data set ``name``, creating it when absent."""
    if not store.has_dataset(name):
        return save_cases(store, name, [case], source="converted", meta={"format": "cases"})
    ds = store.dataset(name)
    if ds["activity"] != ACTIVITY:
        raise CaseError(f"data set {name!r} is not a consultation data set")
    items = [i for i in store.items(name) if str(i["id"]) != case.id] + [case.to_dict()]
    return store.add_dataset(
        name, ACTIVITY, items, source=ds.get("source") or "", meta=ds.get("meta"), replace=True
    )


def sample_path() -> Path:
    return samples_dir() / SAMPLE_FILE


def ensure_sample(store: Store) -> str:
    """Import the shipped sample cases as ``cases-sample`` unless present; return the name."""
    if not store.has_dataset(SAMPLE_DATASET):
        cases = read_cases(sample_path())
        with contextlib.suppress(AlreadyExists):  # another instance wrote it meanwhile
            save_cases(
                store,
                SAMPLE_DATASET,
                cases,
                source=SAMPLE_FILE,
                meta={"format": "cases", "sample": True},
            )
    return SAMPLE_DATASET


def reference(case: Case) -> str:
    """The case's answer in words: the diagnosis, or the text of the right option."""
    task = case.task
    return task.options.get(task.answer, task.answer) if task.kind == "mcq" else task.diagnosis


def explained(run: Row, item: Case | JSONDict, answer: Row) -> Explained | None:
    """What a rater reads of a consultation's final answer given in words: the task, the
    gold answer, and the doctor's reply (none when the reply is only a letter)."""
    from engine.types import Explained

    case = item if isinstance(item, Case) else Case.from_dict(item)
    reply = str(answer.get("response") or "").strip()
    chosen = str(answer.get("chosen") or "").strip()
    if not reply or reply == chosen and (case.task.kind == "mcq" or len(reply) < 2):
        return None
    return Explained(
        question=case.task.question or "What is the most likely diagnosis?",
        options=tuple(case.task.options.items()),
        gold=case.task.gold,
        answer=chosen or "—",
        explanation=reply,
        language=case.language,
        topic={"task": case.task.kind},
    )
