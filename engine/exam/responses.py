"""A file of published responses stored as an exam run: its explanations can then be rated,
judged, exported and compared beside a local model's run.

The ExplainCPE release publishes ChatGPT's responses as a JSON list of objects with the
question's ``id`` and, per prompt setting, the response (``one_without_response``) and its
published judgement (``one_without_judge``: 正确/错误). :func:`import_responses` matches
every response to its question by id and stores the run of model ``model`` (runner
``model``, method ``generate``, settings ``source: published``), one answer per response,
scored by the exam's scorers. Its summary gives the numbers ``medexam exam score`` gives for
the same file and field (:func:`engine.exam.metrics.score_responses`, whose helpers read the
responses here): accuracy from the published judgements when every response carries one
(scorer ``exam.published``), else from the letters extracted; ROUGE-1/2/L; accuracy by
type. ``medexam rescore`` on the run changes none of them.

>>> run_id = import_responses(store, "chatgpt_test_responses.json", "explaincpe-test",
...                           "gpt-3.5-turbo", "one_without")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import cast

from engine.core.run_checks import RunError, check_dataset
from engine.core.scoring import Context, run_scorers, score_answer, summarize
from engine.errors import DatasetError
from engine.exam.activity import EXAM
from engine.exam.extract import argued_letter, split_answer_explanation
from engine.exam.metrics import (
    SUFFIX,
    accuracy,
    judge_agreement,
    judge_field,
    judged_right,
    match_responses,
    read_judgement,
    response_answer,
    response_field,
    response_text,
)
from engine.store.store import Store
from engine.text import jsonio
from engine.types import JSONDict, JSONValue, Row

# ExplainCPE's setting names: examples before the question, with or without the instruction.
_SETTING = re.compile(r"(zero|one|four|eight)_(with|without)")
_SHOTS = {"zero": 0, "one": 1, "four": 4, "eight": 8}

Response = Mapping[str, JSONValue]


def read_responses(path: str | Path) -> list[Response]:
    """The responses of a JSON file holding a list of objects (UTF-8, a BOM allowed);
    anything else is refused with one line (:class:`~engine.errors.DatasetError`)."""
    path = Path(path)
    try:
        data = jsonio.read_json(path)
    except jsonio.RecordsError as exc:
        raise DatasetError(f"responses file {path.name}: {exc.detail}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise DatasetError(f"responses file {path.name} must be a JSON list of objects")
    if not data:
        raise DatasetError(f"responses file {path.name} holds no responses")
    return cast("list[Response]", data)  # objects, checked above


def setting_name(field: str) -> str:
    """The setting a response field is for (``one_without_response`` → ``one_without``)."""
    return field.removesuffix(SUFFIX)


def run_settings(field: str, file: str, judged: bool, limit: int | None) -> JSONDict:
    """The settings stored on the run: what says it holds published responses (``source``,
    ``field``, ``setting``, ``file``, ``judged``), ``method: generate`` (its explanations are
    scored with ROUGE), and for an ExplainCPE setting name the examples and instruction it
    stands for; ``limit`` when the responses answer the data set's first questions only."""
    setting = setting_name(field)
    settings: JSONDict = {"method": "generate"}
    shape = _SETTING.fullmatch(setting)
    if shape:
        settings["shots"] = _SHOTS[shape.group(1)]
        settings["instruction"] = shape.group(2) == "with"
    if limit is not None:
        settings["limit"] = limit
    settings.update(
        {"source": "published", "field": field, "setting": setting, "file": file, "judged": judged}
    )
    return settings


def _answer(question: JSONDict, response: Response, field: str) -> JSONDict:
    """A stored answer's fields (but its scores) from one published response."""
    text = response_text(response, field)
    found = response_answer(text, question)
    _, explanation = split_answer_explanation(text)
    extra: JSONDict = {
        "method": "generate",
        "source": "published",
        "rule": found.rule,
        "argued": argued_letter(explanation),
    }
    judgement = response.get(judge_field(field))
    if judgement is not None:  # as stored (正确/错误), and as published when that differs
        extra["judgement"] = read_judgement(judgement)
        if extra["judgement"] != judgement:
            extra["judgement_given"] = judgement
    return {"response": text, "chosen": found.letter, "gold": question["answer"], "extra": extra}


Pair = tuple[JSONDict, Response]


def _matched(
    store: Store, dataset: str, responses: Sequence[Response], field: str
) -> tuple[list[JSONDict], list[Pair], int]:
    """The data set's questions, the ``(question, response)`` pairs in the data set's order
    and how many responses matched no question; refused when none matched, when one
    question has two responses, or when they quote other questions."""
    if not store.has_dataset(dataset):
        names = ", ".join(d["name"] for d in store.datasets(EXAM.id)) or "none yet"
        raise RunError(f"no data set named {dataset!r} (exam data sets: {names})")
    check_dataset(store, EXAM.id, dataset)
    questions: list[JSONDict] = store.items(dataset)
    found, unmatched = match_responses(questions, responses, field)
    if not found:
        raise DatasetError(
            f"none of the {len(responses)} responses has the id of a question of data set "
            f"{dataset!r} (0 matched)"
        )
    by_key: dict[str, Response] = {}
    for question, response in found:
        key = str(question["id"])
        if key in by_key:
            raise DatasetError(f"question {key!r} has more than one response")
        by_key[key] = response
    pairs = [(q, by_key[str(q["id"])]) for q in questions if str(q["id"]) in by_key]
    _same_questions(pairs, dataset)
    return questions, pairs, unmatched


def _same_questions(pairs: Sequence[Pair], dataset: str) -> None:
    """Refuse responses that quote their question (as ExplainCPE's do) with another text
    than the data set's question of their id: they answer another data set's questions."""
    other = [
        str(q["id"])
        for q, r in pairs
        if isinstance(r.get("question"), str) and str(r["question"]).strip() != q["question"]
    ]
    if other:
        raise DatasetError(
            f"{len(other)} of the {len(pairs)} responses matched by id quote another question "
            f"than data set {dataset!r} has (first: id {other[0]}): are they for another "
            "data set?"
        )


def _prefix(questions: Sequence[JSONDict], answered: set[str]) -> int | None:
    """``len(answered)`` when those are exactly the data set's first questions (fewer than
    all), so that the run covers them only; else None."""
    n = len(answered)
    if n == len(questions) or {str(q["id"]) for q in questions[:n]} != answered:
        return None
    return n


def import_responses(
    store: Store, path: str | Path, dataset: str, model: str, field: str, again: bool = False
) -> int:
    """Store the published responses of ``path`` (a JSON list of objects with the question's
    ``id`` and ``field``) as a finished exam run of ``model`` over data set ``dataset``, and
    return the run's id.

    ``field`` is the response field (``one_without_response``) or its bare setting
    (``one_without``). Each response becomes the answer to the question with its id: its
    text, the letter extracted as :func:`~engine.exam.metrics.score_responses` extracts it,
    the gold letter, and in ``extra`` the published judgement (``judgement``) and the rule
    that found the letter. The answers are scored by the exam's scorers and the run's
    summary is made as any exam run's, so it gives ``exam score``'s numbers; it also keeps
    ``accuracy_extracted`` and ``judge_agreement`` (when judged) and
    ``unmatched_responses`` (responses whose id is no question of the data set, left out).

    When the responses answer only the data set's first questions the run covers those
    (``limit``); other questions without a response count as unanswered, as in any run.
    Bad input is refused before anything is stored (:class:`~engine.errors.DatasetError`:
    the file, the field, the ids, a response that is no text, a judgement that is none;
    :class:`~engine.core.runs.RunError`: the data set, the model name, responses already stored
    as a run unless ``again``); the run is written in one transaction, so none is left half
    stored.
    """
    model = model.strip()
    if not model:
        raise RunError("give the name of the model that wrote the responses")
    responses = read_responses(path)
    field = response_field(responses, field)
    questions, pairs, unmatched = _matched(store, dataset, responses, field)
    judged = judged_right([r for _, r in pairs], field)
    limit = _prefix(questions, {str(q["id"]) for q, _ in pairs})
    settings = run_settings(field, Path(path).name, judged is not None, limit)
    run: JSONDict = {"id": None, "activity": EXAM.id, "dataset": dataset, "model": model}
    run.update({"runner": "model", "settings": settings})
    context = Context(store, run)
    scorers = run_scorers(EXAM.id, context)
    answers = [_answer(q, r, field) for q, r in pairs]
    if not again:
        _refuse_stored(store, dataset, field, [str(q["id"]) for q, _ in pairs], answers)
    scored = [
        score_answer(scorers, a, q, context) for a, (q, _) in zip(answers, pairs, strict=True)
    ]
    position = {str(q["id"]): i for i, q in enumerate(questions)}
    with store.transaction(immediate=True):
        run_id = store.start_run(
            EXAM.id, dataset, model, settings, "model", limit or len(questions)
        )
        for (question, _), answer, found in zip(pairs, answers, scored, strict=True):
            key = str(question["id"])
            store.add_answer(run_id, key, position=position[key], scores=found, **answer)
        summary = {**summarize(store, run_id), "run_id": run_id, "status": "finished"}
        summary.update(_published_facts(answers, judged, unmatched))
        store.finish_run(run_id, summary)
    return run_id


def _digest(rows: Iterable[tuple[str, str, JSONValue]]) -> str:
    """A digest of responses as stored: each question's key, the response's text and its
    judgement as published, whatever their order."""
    h = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r[0]):
        h.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


def _as_published(key: str, answer: Row) -> tuple[str, str, JSONValue]:
    """``(question key, text, judgement as published)`` of a stored or new answer."""
    extra = answer.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    given = extra.get("judgement_given", extra.get("judgement"))
    return key, str(answer.get("response") or ""), given


def _refuse_stored(
    store: Store, dataset: str, field: str, keys: Sequence[str], answers: Sequence[JSONDict]
) -> None:
    """Refuse the ``answers`` to questions ``keys`` when a run of published responses to
    ``dataset``, read from the same ``field``, already holds them: the same texts and
    judgements to the same questions."""
    digest = _digest(_as_published(k, a) for k, a in zip(keys, answers, strict=True))
    for run in store.runs(EXAM.id):
        settings = run.get("settings") or {}
        if (run["dataset"], settings.get("source"), settings.get("field")) != (
            dataset, "published", field,
        ):  # fmt: skip
            continue
        stored = store.answers(int(run["id"]))
        if _digest(_as_published(str(a["item_key"]), a) for a in stored) == digest:
            raise RunError(
                f"these responses are already stored as run {run['id']} ({run['model']}, "
                f"{settings.get('setting')}, from {settings.get('file')}): give --again to "
                "store them once more"
            )


def _published_facts(
    answers: Sequence[JSONDict], judged: list[bool] | None, unmatched: int
) -> JSONDict:
    """What ``exam score`` says beside its numbers: the accuracy of the letters extracted,
    their agreement with the published judgements, the responses left out."""
    extracted = [a["chosen"] == a["gold"] for a in answers]
    out: JSONDict = {"accuracy_extracted": round(accuracy(extracted), 1)}
    if judged is not None:
        out["judge_agreement"] = judge_agreement(judged, extracted)
    if unmatched:
        out["unmatched_responses"] = unmatched
    return out
