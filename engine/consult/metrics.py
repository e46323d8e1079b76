"""Consultation metrics, as in the multi-turn consultation evaluation framework, plus leakage.

For one consultation of case M (facts ``key: value``) with doctor questions q1…qn and patient
replies r1…rn (the opening request P0 is not counted; it comes with the case):

* patient recall / precision / F1 — ROUGE-1 of the replies, concatenated, against the values
  of M, concatenated: how much of M the patient conveyed, and how much of what it said is M;
* doctor recall / precision / F1 — ROUGE-1 of the questions, concatenated, against the keys
  of M: how much of what there was to ask about the doctor asked about;
* accuracy — of the final task T;
* turns — n; length — mean tokens (:func:`engine.rouge.tokenize` words) per doctor question;
* diversity — eq. 4 of the paper: the mean ROUGE-L F-measure over all pairs of the doctor's
  questions in one consultation, ``2/(n(n-1)) Σ_{i<j} R(q_i, q_j)`` (lower = more diverse;
  undefined below two questions);
* leakage (beyond the paper) — of the facts a patient revealed, the share the question did not
  ask for. Per turn: a fact is *asked* when its key is the best key match of the question (at
  least half the key's content words appear in it) or it is the selector's top match; a fact
  given to the patient is *revealed* when its value's content words appear in the reply (at
  least half of them, or 3 for long values).

:func:`summarize` averages per-consultation numbers over a run (percentages on 0–100);
:func:`turn_analysis` recomputes F1 and accuracy over the first part of each stored
consultation; :func:`fact_view` says which facts were revealed, given but not said, or never
reached.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from engine.consult.cases import Case, Fact
from engine.consult.text import content_words
from engine.rouge import Score, rouge_l, rouge_n, tokenize

SUMMARY_KEYS = (
    "patient_recall",
    "patient_precision",
    "patient_f1",
    "doctor_recall",
    "doctor_precision",
    "doctor_f1",
    "accuracy",
    "avg_turns",
    "avg_length",
    "diversity",
)


def patient_score(replies: Sequence[str], facts: Sequence[Fact]) -> Score:
    """ROUGE-1 of the patient's replies (joined) against the facts' values (joined)."""
    return rouge_n(" ".join(replies), " ".join(f.value for f in facts), 1)


def doctor_score(questions: Sequence[str], facts: Sequence[Fact]) -> Score:
    """ROUGE-1 of the doctor's questions (joined) against the facts' keys (joined)."""
    return rouge_n(" ".join(questions), " ".join(f.key for f in facts), 1)


def diversity(questions: Sequence[str]) -> float | None:
    """Mean pairwise ROUGE-L F-measure of the questions (0–1); None for fewer than two."""
    pairs = list(combinations(questions, 2))
    if not pairs:
        return None
    return sum(rouge_l(a, b).fmeasure for a, b in pairs) / len(pairs)


def avg_length(utterances: Sequence[str]) -> float:
    """Mean number of tokens per utterance (0.0 for none)."""
    if not utterances:
        return 0.0
    return sum(len(tokenize(u)) for u in utterances) / len(utterances)


# -- leakage -----------------------------------------------------------------------------


def asked_facts(
    question: str, facts: Sequence[Fact], top: int | None = None, language: str = "en"
) -> list[int]:
    """Indices of the facts ``question`` asks for: best key match(es) and the top selection."""
    q = set(content_words(question, language))
    coverage = []
    for fact in facts:
        key = set(content_words(fact.key, language))
        coverage.append(len(key & q) / len(key) if key else 0.0)
    best = max(coverage, default=0.0)
    asked = {i for i, c in enumerate(coverage) if best >= 0.5 and c == best}
    if top is not None:
        asked.add(top)
    return sorted(asked)


def revealed(reply: str, fact: Fact, language: str = "en") -> bool:
    """Whether ``reply`` states ``fact``'s value (enough of its content words appear)."""
    value = set(content_words(fact.value, language))
    if not value:
        return False
    said = set(content_words(reply, language))
    needed = max(1, min(math.ceil(len(value) / 2), 3))
    return len(value & said) >= needed


def turn_leakage(
    question: str,
    reply: str,
    facts: Sequence[Fact],
    given: Sequence[int],
    language: str = "en",
) -> dict[str, list[int]]:
    """For one turn: facts ``asked``, ``revealed`` (among those ``given``) and ``leaked``."""
    asked = asked_facts(question, facts, top=given[0] if given else None, language=language)
    shown = [i for i in given if revealed(reply, facts[i], language)]
    return {"asked": asked, "revealed": shown, "leaked": [i for i in shown if i not in asked]}


# -- one consultation ----------------------------------------------------------------------


def dialogue(turns: Sequence[dict[str, Any]]) -> tuple[list[str], list[str], list[dict]]:
    """The doctor's questions, the patient's replies and the replies' ``extra`` from stored
    turns (the opening request and any conclusion are left out)."""
    questions, replies, extras = [], [], []
    for t in turns:
        kind = (t.get("extra") or {}).get("kind")
        if t["role"] == "doctor" and kind in (None, "question"):
            questions.append(t["text"])
        elif t["role"] == "patient" and kind in (None, "reply"):
            replies.append(t["text"])
            extras.append(t.get("extra") or {})
    return questions, replies, extras


def consultation_metrics(
    case: Case, turns: Sequence[dict[str, Any]], correct: bool | None = None
) -> dict[str, Any]:
    """Every metric of one consultation (fractions 0–1, as stored per answer)."""
    questions, replies, extras = dialogue(turns)
    p = patient_score(replies, case.facts)
    d = doctor_score(questions, case.facts)
    n_revealed = sum(len(e.get("revealed", [])) for e in extras)
    n_leaked = sum(len(e.get("leaked", [])) for e in extras)
    return {
        "patient_recall": p.recall,
        "patient_precision": p.precision,
        "patient_f1": p.fmeasure,
        "doctor_recall": d.recall,
        "doctor_precision": d.precision,
        "doctor_f1": d.fmeasure,
        "correct": correct,
        "turns": len(questions),
        "length": avg_length(questions),
        "diversity": diversity(questions),
        "revealed": n_revealed,
        "leaked": n_leaked,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(per_case: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Average :func:`consultation_metrics` over a run; percentages on 0–100, rounded.

    ``accuracy`` counts cases answered correctly among all; ``diversity`` averages only the
    consultations with two questions or more (None when there are none); ``leakage`` is leaked
    facts over revealed facts (0 when none were revealed).
    """
    n = len(per_case)

    def pct(key: str) -> float:
        vals = [float(m[key]) for m in per_case if m.get(key) is not None]
        return round(100 * (_mean(vals) or 0.0), 2)

    div = _mean([m["diversity"] for m in per_case if m.get("diversity") is not None])
    revealed_n = sum(m.get("revealed", 0) for m in per_case)
    leaked_n = sum(m.get("leaked", 0) for m in per_case)
    out: dict[str, Any] = {key: pct(key) for key in SUMMARY_KEYS[:6]}
    out["accuracy"] = (
        round(100 * sum(bool(m.get("correct")) for m in per_case) / n, 2) if n else 0.0
    )
    out["avg_turns"] = round(_mean([m["turns"] for m in per_case]) or 0.0, 2)
    out["avg_length"] = round(_mean([m["length"] for m in per_case if m["turns"]]) or 0.0, 2)
    out["diversity"] = None if div is None else round(100 * div, 2)
    out["leakage"] = round(100 * leaked_n / revealed_n, 2) if revealed_n else 0.0
    out["n"] = n
    sims = [m["similarity"] for m in per_case if m.get("similarity") is not None]
    if sims:
        out["similarity"] = round(100 * (_mean(sims) or 0.0), 2)
    return out


# -- views over stored runs -----------------------------------------------------------------


def fact_view(case: Case, turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fact of ``case`` with its status in a stored consultation.

    ``status`` is ``revealed`` (said by the patient; ``turn`` = first turn), ``given`` (passed
    to the patient but not said) or ``never_asked``; ``leaked`` marks facts revealed in a turn
    whose question did not ask for them.
    """
    view = [
        {
            "index": i,
            "key": f.key,
            "value": f.value,
            "status": "never_asked",
            "turn": None,
            "leaked": False,
        }
        for i, f in enumerate(case.facts)
    ]
    for t in turns:
        extra = t.get("extra") or {}
        if t["role"] != "patient" or extra.get("kind") not in (None, "reply"):
            continue
        for m in extra.get("facts", []):
            row = view[m["index"]]
            if row["status"] == "never_asked":
                row["status"], row["turn"] = "given", t["turn"]
        for i in extra.get("revealed", []):
            row = view[i]
            if row["status"] != "revealed":
                row["status"], row["turn"] = "revealed", t["turn"]
        for i in extra.get("leaked", []):
            view[i]["leaked"] = True
    return view


def truncate(turns: Sequence[dict[str, Any]], fraction: float) -> list[dict[str, Any]]:
    """The opening and the first ``ceil(fraction × n)`` question–reply pairs of a dialogue."""
    n = sum(
        1
        for t in turns
        if t["role"] == "doctor" and (t.get("extra") or {}).get("kind") in (None, "question")
    )
    keep = math.ceil(fraction * n - 1e-9)
    return [
        t for t in turns if t["turn"] <= keep and (t.get("extra") or {}).get("kind") != "conclusion"
    ]


def turn_analysis(
    store: Any,
    run_id: int,
    fractions: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
    solver: Any = None,
) -> list[dict[str, Any]]:
    """Patient/doctor F1 (and accuracy) against the fraction of each consultation completed.

    F1 comes from the stored turns. Accuracy at 1.0 comes from the stored answers; at earlier
    fractions it needs ``solver`` (a :class:`engine.consult.solve.Solver`), which answers the
    task again from the truncated dialogue; without one it is None.
    """
    from engine.consult.cases import load_cases

    run = store.run(run_id)
    cases = {c.id: c for c in load_cases(store, run["dataset"])}
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    rows = []
    for fraction in fractions:
        p_f1, d_f1, correct = [], [], []
        for key, answer in answers.items():
            case = cases.get(key)
            if case is None:
                continue
            part = truncate(store.turns(run_id, key), fraction)
            questions, replies, _ = dialogue(part)
            p_f1.append(patient_score(replies, case.facts).fmeasure)
            d_f1.append(doctor_score(questions, case.facts).fmeasure)
            if fraction >= 1.0:
                correct.append(bool(answer["correct"]))
            elif solver is not None:
                correct.append(solver.answer(case, part).correct)
        rows.append(
            {
                "fraction": fraction,
                "patient_f1": round(100 * (_mean(p_f1) or 0.0), 2),
                "doctor_f1": round(100 * (_mean(d_f1) or 0.0), 2),
                "accuracy": round(100 * (_mean([float(c) for c in correct]) or 0.0), 2)
                if correct
                else None,
                "n": len(p_f1),
            }
        )
    return rows
