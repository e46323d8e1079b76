"""FrenchMedMCQA data sets: validation, import, and the shipped sample.

A FrenchMedMCQA file is a JSON list of questions::

    {"id": "...", "question": "...", "answers": {"a": "...", ..., "e": "..."},
     "correct_answers": ["a", "d"], "nbr_correct_answers": 2, "type": "multiple", ...}

Every record is checked before anything is stored; the first problems are reported with the
record number (1-based) and the reason, and nothing is imported.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.errors import DatasetError
from engine.french.corpus import add_corpus_from_path
from engine.french.items import LETTERS as LETTERS
from engine.french.items import FrenchQuestion
from engine.french.items import gold as gold
from engine.french.items import options as options
from engine.french.items import question_source as question_source
from engine.french.items import retrieval_query as retrieval_query
from engine.paths import samples_dir
from engine.store.store import AlreadyExists, Store
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue

ACTIVITY = "french"
SAMPLE_DATASET = "frenchmedmcqa-sample"
SAMPLE_CORPUS = "french-sample"
SAMPLE_FILE = "frenchmedmcqa_sample.json"
SAMPLE_PASSAGES = "french_passages.jsonl"


def record_problem(record: JSONValue) -> str | None:
    """Why ``record`` is not a valid FrenchMedMCQA question, or None when it is."""
    if not isinstance(record, dict):
        return "not a JSON object"
    qid = record.get("id")
    if not isinstance(qid, str | int) or isinstance(qid, bool) or not str(qid).strip():
        return "missing or empty 'id'"
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        return "missing or empty 'question'"
    answers = record.get("answers")
    if not isinstance(answers, dict):
        return "'answers' must be an object with the options a to e"
    if sorted(answers) != list(LETTERS):
        return f"'answers' must have exactly the keys a, b, c, d, e (found {sorted(answers)})"
    for letter in LETTERS:
        text = answers[letter]
        if not isinstance(text, str) or not text.strip():
            return f"option {letter!r} is empty"
    correct = record.get("correct_answers")
    if not isinstance(correct, list) or not correct:
        return "'correct_answers' must be a non-empty list of letters"
    if any(not isinstance(c, str) or c.lower() not in LETTERS for c in correct):
        return f"'correct_answers' holds something other than the letters a to e: {correct!r}"
    if len({str(c).lower() for c in correct}) != len(correct):
        return f"'correct_answers' repeats a letter: {correct!r}"
    n = record.get("nbr_correct_answers")
    if n is not None and n != len(correct):
        return f"'nbr_correct_answers' is {n!r} but 'correct_answers' has {len(correct)}"
    return None


def normalise(record: JSONDict) -> FrenchQuestion:
    """The record as stored: string id, lower-case sorted ``correct_answers``, a ``category``."""
    item = dict(record)
    item["id"] = str(record["id"])
    item["correct_answers"] = sorted(c.lower() for c in record["correct_answers"])
    item["nbr_correct_answers"] = len(item["correct_answers"])
    item.setdefault("category", record.get("type") or None)
    return cast("FrenchQuestion", item)  # checked by record_problem


def load_questions(
    path: str | Path, max_problems: int = 10, duplicates_out: list[int] | None = None
) -> list[FrenchQuestion]:
    """Read and validate a FrenchMedMCQA JSON file; return the normalised questions.

    Raises :class:`DatasetError` naming up to ``max_problems`` bad records. A record that
    repeats an earlier one exactly (same id, same content) is kept once; its record number is
    appended to ``duplicates_out`` when given. The same id with other content is an error.
    """
    path = Path(path)
    try:
        data = jsonio.read_json(path)
    except jsonio.RecordsError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of questions")
    if not data:
        raise DatasetError(f"{path}: the file holds no questions")
    problems: list[str] = []
    seen: dict[str, int] = {}
    keep: list[JSONDict] = []
    duplicates: list[int] = []
    for number, record in enumerate(data, start=1):
        problem = record_problem(record)
        if problem is None and isinstance(record, dict):  # a dict when it has no problem
            key = str(record["id"])
            if key in seen:
                first = data[seen[key] - 1]
                if record == first:  # the very same question twice: keep one
                    duplicates.append(number)
                    continue
                problem = (
                    f"duplicate id {key!r} with other content (first seen in record {seen[key]})"
                )
            seen.setdefault(key, number)
            keep.append(record)
        if problem is not None:
            problems.append(f"record {number}: {problem}")
    if problems:
        more = f" (and {len(problems) - max_problems} more)" if len(problems) > max_problems else ""
        raise DatasetError(
            f"{path}: {len(problems)} invalid record(s), nothing imported: "
            + "; ".join(problems[:max_problems])
            + more
        )
    questions = [normalise(r) for r in keep]
    if duplicates_out is not None:
        duplicates_out.extend(duplicates)
    return questions


def import_frenchmedmcqa(
    store: Store, path: str | Path, name: str | None = None, replace: bool = False
) -> JSONDict:
    """Validate ``path`` and store it as data set ``name`` (default: the file's stem).

    Returns ``{"name", "n_items", "by_n_answers", "duplicates_skipped"}`` (record numbers of
    exact repeats kept once). All or nothing: a bad record stores nothing.
    """
    path = Path(path)
    duplicates: list[int] = []
    questions = load_questions(path, duplicates_out=duplicates)
    name = name or path.stem
    is_sample = all(q.get("sample") for q in questions)
    store.add_dataset(
        name,
        ACTIVITY,
        questions,
        source=str(path.name),
        meta={"format": "frenchmedmcqa", "sample": is_sample},
        replace=replace,
    )
    counts: dict[str, int] = {}
    for q in questions:
        key = str(q["nbr_correct_answers"])
        counts[key] = counts.get(key, 0) + 1
    return {
        "name": name,
        "n_items": len(questions),
        "by_n_answers": dict(sorted(counts.items())),
        "duplicates_skipped": duplicates,
    }


def ensure_sample(store: Store) -> dict[str, str]:
    """Import the shipped sample data set and corpus unless already there.

    Returns ``{"dataset": "frenchmedmcqa-sample", "corpus": "french-sample"}``.
    """
    with contextlib.suppress(AlreadyExists):  # another instance wrote it meanwhile
        if not store.has_dataset(SAMPLE_DATASET):
            import_frenchmedmcqa(store, samples_dir() / SAMPLE_FILE, SAMPLE_DATASET)
    with contextlib.suppress(AlreadyExists):
        if SAMPLE_CORPUS not in {c["name"] for c in store.corpora()}:
            add_corpus_from_path(store, samples_dir() / SAMPLE_PASSAGES, SAMPLE_CORPUS)
    return {"dataset": SAMPLE_DATASET, "corpus": SAMPLE_CORPUS}
