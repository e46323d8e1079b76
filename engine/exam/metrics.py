"""Exam metrics: accuracy, explanation ROUGE, per-type accuracy, calibration, consistency.

* accuracy — percent of questions answered with the gold letter;
* ROUGE-1/2/L — the mean over questions of the per-question F-measure between the response
  and the gold explanation, computed as the ExplainCPE paper did
  (:func:`engine.text.rouge.rouge_scores`: jieba segmentation, rouge-chinese scoring);
* by type — accuracy for each value of ``type1``, ``type2`` and ``type3`` (paper Table 5);
* expected calibration error and Brier score — for runs that read the probabilities of the
  letters (``logprob`` method);
* consistency — how often the letter an explanation argues for ("故本题选D") is the letter
  the response chose.

:func:`score_responses` scores a file of published responses against the gold questions;
on the ExplainCPE ChatGPT responses it reproduces every ChatGPT row of the paper's Table 8.
How it matches, reads and judges each response (:func:`match_responses`,
:func:`response_answer`, :func:`judged_right`) is shared with
:mod:`engine.exam.responses`, which stores such a file as a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from engine.errors import DatasetError
from engine.exam.dataset import TYPE_FIELDS
from engine.exam.extract import (
    Extraction,
    argued_letter,
    find_answer,
    split_answer_explanation,
)
from engine.text.rouge import rouge_scores

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue, Row

ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")
JUDGE_RIGHT, JUDGE_WRONG = "正确", "错误"
#: ExplainCPE's own judgement of a response its check could not read: counted wrong, as the
#: paper counts it.
JUDGE_FAILED = "检测失败"
#: What clearly is a published judgement (its case and surrounding spaces aside), and what
#: it is stored as.
JUDGEMENTS = {
    **dict.fromkeys(("正确", "对", "true", "1", "correct", "right"), JUDGE_RIGHT),
    **dict.fromkeys(("错误", "错", "false", "0", "incorrect", "wrong"), JUDGE_WRONG),
    JUDGE_FAILED: JUDGE_FAILED,
}
#: A response field's name may leave out this ending (``one_without`` for
#: ``one_without_response``).
SUFFIX = "_response"


class TypeAccuracy(TypedDict):
    """The questions of one type value: how many, how many right, accuracy (%)."""

    n: int
    correct: int
    accuracy: float


class Consistency(TypedDict):
    """How often explanations argue for the chosen letter (see :func:`consistency`)."""

    n: int
    consistent: float | None


def accuracy(correct: Iterable[bool | None]) -> float:
    """Percent of true values (``None`` counts as wrong); 0 for no questions."""
    values = [bool(c) for c in correct]
    return 100.0 * sum(values) / len(values) if values else 0.0


def mean_rouge(responses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean per-question ROUGE F-measures (``rouge1``, ``rouge2``, ``rougeL``)."""
    totals = dict.fromkeys(ROUGE_KEYS, 0.0)
    for response, reference in zip(responses, references, strict=True):
        scores = rouge_scores(response or "", reference or "")
        for key in ROUGE_KEYS:
            totals[key] += scores[key].fmeasure
    n = len(responses)
    return {k: (v / n if n else 0.0) for k, v in totals.items()}


def by_type(
    items: Sequence[Row], correct: Sequence[bool | None]
) -> dict[str, dict[str, TypeAccuracy]]:
    """Accuracy per value of each type field the items carry::

    {"type1": {"正向": {"n": 128, "correct": 70, "accuracy": 54.7}, …}, …}
    """
    out: dict[str, dict[str, TypeAccuracy]] = {}
    for field in TYPE_FIELDS:
        groups: dict[str, list[bool]] = {}
        for item, ok in zip(items, correct, strict=True):
            value = item.get(field)
            if value:
                groups.setdefault(str(value), []).append(bool(ok))
        if groups:
            out[field] = {
                value: {"n": len(oks), "correct": sum(oks), "accuracy": round(accuracy(oks), 1)}
                for value, oks in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            }
    return out


def normalise(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Probabilities from log-probabilities, renormalised over the given letters."""
    if not logprobs:
        return {}
    top = max(logprobs.values())
    weights = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def letter_kl(reference: Mapping[str, float], other: Mapping[str, float]) -> float | None:
    """The Kullback-Leibler divergence KL(P‖Q), in nats, of the letter distribution Q from
    the reference's P, each given by its letters' log-probabilities and renormalised over
    them (as :func:`normalise`), computed in log space so that no tiny probability rounds to
    0; None when the two are not over the same letters.

    >>> even, three_to_one = {"A": -1.0, "B": -1.0}, {"A": 0.0, "B": -math.log(3)}
    >>> round(letter_kl(even, three_to_one), 4)  # ½ ln(½ / ¾) + ½ ln(½ / ¼)
    0.1438
    """
    letters = sorted(reference)
    if not letters or set(other) != set(letters):
        return None
    import numpy as np
    from scipy.special import log_softmax

    log_p = log_softmax(np.array([reference[k] for k in letters], dtype=float))
    log_q = log_softmax(np.array([other[k] for k in letters], dtype=float))
    return max(0.0, float(np.sum(np.exp(log_p) * (log_p - log_q))))


def expected_calibration_error(
    confidences: Sequence[float], correct: Sequence[bool], bins: int = 10
) -> float:
    """ECE: the bin-size-weighted mean gap between confidence and accuracy, over ``bins``
    equal-width confidence bins (0 for no questions)."""
    n = len(confidences)
    if n == 0:
        return 0.0
    sums = [[0, 0.0, 0.0] for _ in range(bins)]  # count, confidence, correct
    for conf, ok in zip(confidences, correct, strict=True):
        b = min(int(conf * bins), bins - 1)
        sums[b][0] += 1
        sums[b][1] += conf
        sums[b][2] += float(bool(ok))
    return sum(abs(c - a) for count, c, a in sums if count) / n


def brier_score(distributions: Sequence[Mapping[str, float]], gold: Sequence[str]) -> float:
    """Multi-class Brier score: mean over questions of the squared error of the probability
    vector against the one-hot gold answer (0 is perfect, 2 the worst)."""
    if not distributions:
        return 0.0
    total = 0.0
    for dist, answer in zip(distributions, gold, strict=True):
        letters = set(dist) | {answer}
        total += sum((dist.get(k, 0.0) - (1.0 if k == answer else 0.0)) ** 2 for k in letters)
    return total / len(distributions)


def calibration(
    distributions: Sequence[Mapping[str, float]], gold: Sequence[str], bins: int = 10
) -> dict[str, float]:
    """ECE, Brier score and mean confidence of letter distributions (``logprob`` runs)."""
    confidences = [max(d.values()) if d else 0.0 for d in distributions]
    chosen = [max(d, key=d.__getitem__) if d else None for d in distributions]
    correct = [c == g for c, g in zip(chosen, gold, strict=True)]
    return {
        "ece": expected_calibration_error(confidences, correct, bins),
        "brier": brier_score(distributions, gold),
        "mean_confidence": sum(confidences) / len(confidences) if confidences else 0.0,
    }


def consistency(responses: Sequence[str], chosen: Sequence[str | None]) -> Consistency:
    """How often the explanation argues for the letter the response chose.

    The explanation is the text after ``解析：`` (the whole response without one); the letter
    it argues for is :func:`engine.exam.extract.argued_letter`. Only responses with both a
    chosen letter and an argued one count: ``n`` of them, ``consistent`` percent.
    """
    n = agree = 0
    for response, letter in zip(responses, chosen, strict=True):
        if not letter:
            continue
        head, explanation = split_answer_explanation(response or "")
        if not head:
            # No "解析：" heading: drop the declared answer so it is not counted twice.
            explanation = (response or "")[find_answer(response or "").start + 1 :]
        argued = argued_letter(explanation)
        if argued is None:
            continue
        n += 1
        agree += argued == letter
    return {"n": n, "consistent": round(100.0 * agree / n, 1) if n else None}


# -- scoring a file of responses ------------------------------------------------------------


def judge_field(field: str) -> str:
    """The published judgement field of a response field (``x_response`` → ``x_judge``)."""
    return (
        field[: -len("_response")] + "_judge" if field.endswith("_response") else field + "_judge"
    )


def response_field(responses: Sequence[Row], field: str) -> str:
    """The response field ``field`` names: itself when a response has it, else the bare
    setting's (``one_without`` → ``one_without_response``); refused, with the fields the
    responses have, when no response has either."""
    field = field.strip()
    for name in (field, field + SUFFIX):
        if name and any(name in r for r in responses):
            return name
    raise DatasetError(f"no response has a field {field!r}{_fields_known(responses)}")


def _fields_known(responses: Sequence[Row]) -> str:
    """`` (fields: a, b)``: the response fields ``responses`` have, for an error."""
    keys = {k for r in responses for k in r}
    found = sorted(k for k in keys if k.endswith(SUFFIX)) or sorted(
        k for k in keys - {"id"} if not k.endswith("_judge")
    )
    return f" (fields: {', '.join(found)})" if found else ""


def match_responses(
    gold: Sequence[Row],
    responses: Sequence[Row],
    field: str,
) -> tuple[list[tuple[Row, Row]], int]:
    """Pair each response with the gold question of the same ``id`` (compared as text):
    ``(pairs, unmatched)``, the pairs ``(question, response)`` in the responses' order and
    how many responses matched no question. A matched response without ``field`` is refused
    (:class:`~engine.errors.DatasetError`)."""
    by_id = {str(g["id"]): g for g in gold}
    pairs = []
    missing = 0
    for r in responses:
        g = by_id.get(str(r.get("id")))
        if g is None:
            missing += 1
            continue
        if field not in r:
            raise DatasetError(
                f"response {r.get('id')!r} has no field {field!r}{_fields_known([r])}"
            )
        pairs.append((g, r))
    return pairs, missing


def response_text(response: Row, field: str) -> str:
    """The text of ``response[field]``: text as it is, a number written as text, null as
    ``""``; anything else (an object, a list, true/false) is refused, not stored as Python
    would print it (:class:`~engine.errors.DatasetError`)."""
    value = response[field]
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    kind = {dict: "an object", list: "a list", bool: "true/false"}.get(type(value), "no text")
    raise DatasetError(
        f"response {response.get('id')!r}: field {field!r} holds {kind}, not the response's text"
    )


def response_answer(text: str, question: Row) -> Extraction:
    """The answer a response's ``text`` gives to ``question`` (letters A–E, an option quoted
    without its letter counting as chosen), as :func:`score_responses` reads it."""
    options = question.get("options")
    return find_answer(text, [str(o) for o in options] if isinstance(options, list) else None)


def read_judgement(value: JSONValue) -> str | None:
    """A published judgement as stored (:data:`JUDGEMENTS`: ``True``, ``1``, ``" RIGHT"``
    and ``"对"`` are :data:`JUDGE_RIGHT`), or None when ``value`` is no judgement."""
    if isinstance(value, bool | int):
        value = str(value)
    return JUDGEMENTS.get(value.strip().lower()) if isinstance(value, str) else None


def judged_right(responses: Sequence[Row], field: str) -> list[bool] | None:
    """The published judgements of ``responses`` (``<setting>_judge``, see
    :func:`judge_field`) as right (:data:`JUDGE_RIGHT`) or wrong; None unless every response
    carries one (none at all counts as none). A value that is no judgement
    (:func:`read_judgement`) is refused, naming it and its response."""
    jfield = judge_field(field)
    found = [r.get(jfield) for r in responses]
    read = [read_judgement(j) for j in found]
    for r, j, judgement in zip(responses, found, read, strict=True):
        if j is not None and judgement is None:
            raise DatasetError(
                f"response {r.get('id')!r}: {jfield} is {j!r}, not a judgement (正确/错误, "
                "对/错, true/false, 1/0, correct/incorrect, right/wrong)"
            )
    if not found or any(j is None for j in found):
        return None
    return [j == JUDGE_RIGHT for j in read]


def judge_agreement(judged: Sequence[bool], extracted: Sequence[bool]) -> float:
    """Percent of responses (2 decimals) whose extracted letter is right exactly when the
    published judgement says so."""
    agree = sum(a == b for a, b in zip(judged, extracted, strict=True))
    return round(100.0 * agree / len(judged), 2) if judged else 0.0


def score_responses(
    gold: Sequence[Row],
    responses: Sequence[Row],
    field: str,
) -> JSONDict:
    """Score ``responses[i][field]`` against the gold question with the same ``id``
    (``field`` a response field or its bare setting, as :func:`response_field` reads it).

    Returns ``n``, ``accuracy`` (percent, 1 decimal), ``rouge1``/``rouge2``/``rougeL``
    (3 decimals), ``by_type``, ``consistency`` and ``items`` (``{id, extracted, correct}``).
    Only questions present in both lists are scored (:func:`match_responses`).

    When the responses carry the published judgements (``<setting>_judge``: 正确/错误, as
    the ExplainCPE release does), ``accuracy`` is the judged accuracy, which is what the
    paper reports, and ``accuracy_extracted`` and ``judge_agreement`` show how the letters
    extracted here compare; otherwise ``accuracy`` comes from the extracted letters.
    """
    field = response_field(responses, field)
    pairs, missing = match_responses(gold, responses, field)
    jfield = judge_field(field)
    texts = [response_text(r, field) for _, r in pairs]
    items_out = []
    extracted_ok: list[bool] = []
    for (g, r), text in zip(pairs, texts, strict=True):
        letter = response_answer(text, g).letter
        ok = letter == g["answer"]
        extracted_ok.append(ok)
        row: JSONDict = {
            "id": g["id"],
            "extracted": letter,
            "gold": g["answer"],
            "correct": ok,
        }
        if jfield in r:
            row["judge"] = r[jfield]
        items_out.append(row)
    judged = judged_right([r for _, r in pairs], field)
    has_judge = judged is not None
    correct = judged if judged is not None else extracted_ok
    rouge = mean_rouge(texts, [str(g.get("explanation", "")) for g, _ in pairs])
    out: JSONDict = {
        "field": field,
        "n": len(pairs),
        "accuracy": round(accuracy(correct), 1),
        "accuracy_source": "judge" if has_judge else "extracted",
        "accuracy_extracted": round(accuracy(extracted_ok), 1),
        **{k: round(v, 3) for k, v in rouge.items()},
        "by_type": by_type([g for g, _ in pairs], correct),
        "consistency": consistency(texts, [i["extracted"] for i in items_out]),
        "items": items_out,
    }
    if judged is not None:
        out["judge_agreement"] = judge_agreement(judged, extracted_ok)
    if missing:
        out["unmatched_responses"] = missing
    return out
