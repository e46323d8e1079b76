"""Consultation metrics, as in the multi-turn consultation evaluation framework, plus leakage.

For one consultation of case M (facts ``key: value``) with doctor questions q1…qn and patient
replies r1…rn (the opening request P0 is not counted; it comes with the case):

* patient recall / precision / F1 — ROUGE-1 of the replies, concatenated, against the values
  of M, concatenated: how much of M the patient conveyed, and how much of what it said is M;
* doctor recall / precision / F1 — ROUGE-1 of the questions, concatenated, against the keys
  of M: how much of what there was to ask about the doctor asked about;
* accuracy — of the final task T;
* turns — n; patient and doctor length (Table 2's Len) — mean words
  (:func:`engine.text.rouge.tokenize`) per patient reply and per doctor turn (``length`` is the
  doctor's, kept under its old name);
* diversity — eq. 4 of the paper: the mean ROUGE F-measure over all pairs of the doctor's
  turns in one consultation, ``2/(n(n-1)) Σ_{i<j} R(q_i, q_j)`` (lower = more diverse;
  undefined below two turns), with ROUGE-1, ROUGE-2 and ROUGE-L (``diversity`` is ROUGE-L);
* the bounds (:func:`bound_metrics`) — no consultation: the lower bound scores the opening
  request P0 as the patient's only words against the values of M, the upper bound all of M;
* leakage (beyond the paper) — of the facts a patient revealed, the share the question did not
  ask for. Per turn: a fact is *asked* when its key is the best key match of the question (at
  least half the key's content words appear in it) or it is the selector's top match; a fact
  given to the patient is *revealed* when its value's content words appear in the reply (at
  least half of them, or 3 for long values).

:mod:`engine.consult.scoring.scorers` averages per-consultation numbers over a run (percentages on
0–100) with the reducers here (:func:`patient_length`, :func:`leakage`, :func:`complexity`);
:func:`turn_analysis` recomputes F1 and accuracy over the first part of each stored
consultation; :func:`fact_view` says which facts were revealed, given but not said, or never
reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, cast

from engine.consult.cases.cases import Case, Fact
from engine.consult.text import content_words
from engine.text.rouge import Score, rouge_l, rouge_n, tokenize
from engine.types import Turn

if TYPE_CHECKING:
    from engine.consult.doctor.final_task import Solver
    from engine.store.store import Store
    from engine.types import JSONDict

#: One consultation's metrics (:func:`consultation_metrics`): fractions 0–1, counts and
#: ``correct``, as stored in its answer's scores.
CaseMetrics: TypeAlias = "dict[str, float | int | bool | None]"
#: Per-consultation metrics as read back (stored scores, or :data:`CaseMetrics`).
MetricRows: TypeAlias = "Sequence[Mapping[str, Any]]"

#: The scores an answer holds as fractions and a summary shows in percent.
PERCENT_SCORES = (
    "patient_recall", "patient_precision", "patient_f1",
    "doctor_recall", "doctor_precision", "doctor_f1",
)  # fmt: skip
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
    "patient_length",
    "doctor_length",
    "diversity_rouge1",
    "diversity_rouge2",
    "diversity_rougeL",
)

#: Turn-analysis steps (Figure 5 of the paper: 20% of each consultation at a time).
FRACTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)


def share_key(kind: str, share: float) -> str:
    """The score key of ``kind`` at ``share`` of a consultation: ``correct_at_20``."""
    return f"{kind}_at_{round(share * 100)}"


DIVERSITY_KINDS = ("rouge1", "rouge2", "rougeL")
#: An answer's ``extra["note"]`` when a model doctor ended the consultation before asking
#: anything: its dialogue scores are 0 and question diversity has nothing to measure.
ASKED_NOTHING = "the doctor asked no question (it answered at once)"


def asked_nothing_line(summary: Mapping[str, object]) -> str:
    """What a run's summary says of its cases where the doctor asked nothing."""
    return (
        f"{summary.get('asked_nothing')} of {summary.get('n')} cases: {ASKED_NOTHING}, so "
        "the dialogue scores are 0 and question diversity has nothing to measure"
    )


class ComplexityGroup(TypedDict):
    """A third of a run's cases by number of facts (see :func:`by_complexity`)."""

    facts: str
    n: int
    accuracy: float
    patient_f1: float
    doctor_f1: float
    avg_turns: float


class FactStatus(TypedDict):
    """A fact of a case and what became of it in one consultation (see :func:`fact_view`)."""

    index: int
    key: str
    value: str
    status: str
    turn: int | None
    leaked: bool


class TurnPoint(TypedDict):
    """The run's scores over the first ``fraction`` of each consultation."""

    fraction: float
    patient_f1: float
    doctor_f1: float
    accuracy: float | None
    n: int


def patient_score(replies: Sequence[str], facts: Sequence[Fact]) -> Score:
    """ROUGE-1 of the patient's replies (joined) against the facts' values (joined)."""
    return rouge_n(" ".join(replies), " ".join(f.value for f in facts), 1)


def doctor_score(questions: Sequence[str], facts: Sequence[Fact]) -> Score:
    """ROUGE-1 of the doctor's questions (joined) against the facts' keys (joined)."""
    return rouge_n(" ".join(questions), " ".join(f.key for f in facts), 1)


def _pair_score(a: list[str], b: list[str], kind: str) -> float:
    if kind == "rougeL":
        return rouge_l(a, b).fmeasure
    if kind in ("rouge1", "rouge2"):
        return rouge_n(a, b, int(kind[-1])).fmeasure
    raise ValueError(f"unknown ROUGE kind {kind!r} (rouge1, rouge2 or rougeL)")


def diversity(questions: Sequence[str], kind: str = "rougeL") -> float | None:
    """Eq. 4: the mean pairwise ROUGE F-measure (``kind`` rouge1, rouge2 or rougeL) of the
    doctor's turns (0–1, lower = more diverse); None for fewer than two."""
    tokens = [tokenize(q) for q in questions]
    pairs = list(combinations(tokens, 2))
    if not pairs:
        return None
    return sum(_pair_score(a, b, kind) for a, b in pairs) / len(pairs)


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
    top: int | None = -1,
) -> dict[str, list[int]]:
    """For one turn: facts ``asked``, ``revealed`` (among those ``given``) and ``leaked``.

    ``top`` is the fact the question most asks about (by default the first given one: the
    grounded patient's best match); a paper-mode patient is given every fact, and its ``top``
    is the selector's best match, measured apart."""
    if top == -1:
        top = given[0] if given else None
    asked = asked_facts(question, facts, top=top, language=language)
    shown = [i for i in given if revealed(reply, facts[i], language)]
    return {"asked": asked, "revealed": shown, "leaked": [i for i in shown if i not in asked]}


# -- one consultation ----------------------------------------------------------------------


def dialogue(turns: Sequence[Turn]) -> tuple[list[str], list[str], list[JSONDict]]:
    """The doctor's questions, the patient's replies and the replies' ``extra`` from stored
    turns (the opening request and any conclusion are left out)."""
    questions: list[str] = []
    replies: list[str] = []
    extras: list[JSONDict] = []
    for t in turns:
        kind = (t.get("extra") or {}).get("kind")
        if t["role"] == "doctor" and kind in (None, "question"):
            questions.append(t["text"])
        elif t["role"] == "patient" and kind in (None, "reply"):
            replies.append(t["text"])
            extras.append(t.get("extra") or {})
    return questions, replies, extras


def _scored(
    case: Case, questions: list[str], replies: list[str], correct: bool | None
) -> CaseMetrics:
    p = patient_score(replies, case.facts)
    d = doctor_score(questions, case.facts)
    div = {f"diversity_{k}": diversity(questions, k) for k in DIVERSITY_KINDS}
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
        "doctor_length": avg_length(questions),
        "patient_length": avg_length(replies),
        "diversity": div["diversity_rougeL"],
        **div,
        "n_facts": len(case.facts),
    }


def consultation_metrics(
    case: Case, turns: Sequence[Turn], correct: bool | None = None
) -> CaseMetrics:
    """Every metric of one consultation (fractions 0–1, as stored per answer)."""
    questions, replies, extras = dialogue(turns)
    out = _scored(case, questions, replies, correct)
    # Facts, each counted once however often it was said (as :func:`fact_view` lists them).
    out["revealed"] = len({i for e in extras for i in e.get("revealed", [])})
    out["leaked"] = len({i for e in extras for i in e.get("leaked", [])})
    return out


def bound_metrics(case: Case, bound: str, correct: bool | None = None) -> CaseMetrics:
    """The metrics of a bound (no consultation, no question): ``lower`` scores P0 as all the
    patient said against the values of M (Table 2's Lower-B row), ``upper`` every value of M
    (so 100%). Doctor scores are 0 and the turns 0."""
    if bound == "lower":
        said = [case.initial_request]
    elif bound == "upper":
        said = [f.value for f in case.facts]
    else:
        raise ValueError(f"unknown bound {bound!r} (upper or lower)")
    out = _scored(case, [], said, correct)
    out["turns"] = 0
    out["revealed"] = out["leaked"] = 0
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(per_case: MetricRows, key: str) -> float:
    vals = [float(m[key]) for m in per_case if m.get(key) is not None]
    return round(100 * (_mean(vals) or 0.0), 2)


def _words(per_case: MetricRows, key: str) -> float:
    vals = [float(m[key]) for m in per_case if m.get(key) is not None and m.get("turns")]
    return round(_mean(vals) or 0.0, 2)


def words_per_turn(key: str) -> Callable[[MetricRows, int], float]:
    """The reducer of a length in words (``key``: of the doctor's questions or the patient's
    replies) averaged over the consultations with at least one turn (0 when none has)."""
    return lambda per_case, n: _words(per_case, key)


def patient_length(per_case: MetricRows, n: int) -> float:
    """The patient's replies' mean length in words over the consultations with at least one
    turn; over every case when none has (a bound's patient length is its P0 or M)."""
    bounds = all(not m.get("turns") for m in per_case) and per_case
    lengths = [
        float(m["patient_length"])
        for m in per_case
        if m.get("patient_length") is not None and (m.get("turns") or bounds)
    ]
    return round(_mean(lengths) or 0.0, 2)


def leakage(per_case: MetricRows, n: int) -> float:
    """Leaked facts over revealed facts in percent (0 when none was revealed)."""
    revealed = sum(m.get("revealed", 0) or 0 for m in per_case)
    leaked = sum(m.get("leaked", 0) or 0 for m in per_case)
    return round(100 * leaked / revealed, 2) if revealed else 0.0


def complexity(per_case: MetricRows, n: int) -> JSONDict:
    """:func:`by_complexity` as a summary's reducer."""
    return cast("JSONDict", by_complexity(per_case))


def by_complexity(per_case: MetricRows) -> dict[str, ComplexityGroup]:
    """The run split by the number of facts of its cases in thirds (Figure 7): ``low``,
    ``mid`` and ``high``, each with its ``facts`` range, ``n``, ``accuracy``, patient and
    doctor F1 and ``avg_turns``. Cases are sorted by their number of facts and cut into three
    groups of (nearly) equal size; an empty group is left out."""
    ranked = sorted(
        (m for m in per_case if m.get("n_facts") is not None), key=lambda m: m["n_facts"]
    )
    n = len(ranked)
    out: dict[str, ComplexityGroup] = {}
    for i, name in enumerate(("low", "mid", "high")):
        group = ranked[i * n // 3 : (i + 1) * n // 3]
        if not group:
            continue
        low, high = group[0]["n_facts"], group[-1]["n_facts"]
        out[name] = {
            "facts": str(low) if low == high else f"{low}-{high}",
            "n": len(group),
            "accuracy": round(100 * sum(bool(m.get("correct")) for m in group) / len(group), 2),
            "patient_f1": _pct(group, "patient_f1"),
            "doctor_f1": _pct(group, "doctor_f1"),
            "avg_turns": round(_mean([m["turns"] for m in group]) or 0.0, 2),
        }
    return out


# -- views over stored runs -----------------------------------------------------------------


def fact_view(case: Case, turns: Sequence[Turn]) -> list[FactStatus]:
    """Each fact of ``case`` with its status in a stored consultation.

    ``status`` is ``revealed`` (said by the patient; ``turn`` = first turn), ``given`` (passed
    to the patient but not said) or ``never_asked``; ``leaked`` marks facts revealed in a turn
    whose question did not ask for them.
    """
    view: list[FactStatus] = [
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


def uncovered_facts(case: Case, turns: Sequence[Turn]) -> list[JSONDict]:
    """The facts of ``case`` the patient revealed in a stored consultation, in the order they
    came out: ``{index, key, value, turn, leaked}`` (``leaked``: said without being asked).
    What a person uncovered, to show beside the word-overlap metrics, which measure words,
    not facts.

    >>> from engine.consult.cases.cases import Task
    >>> case = Case("c", [Fact("Fever", "38.5 °C"), Fact("Cough", "dry, three days")],
    ...             "I feel unwell", Task(diagnosis="flu"))
    >>> turns = [{"role": "patient", "turn": 1, "text": "Yes, 38.5.",
    ...           "extra": {"kind": "reply", "revealed": [0], "leaked": []}}]
    >>> [(f["key"], f["turn"]) for f in uncovered_facts(case, turns)]
    [('Fever', 1)]
    """
    found = [row for row in fact_view(case, turns) if row["status"] == "revealed"]
    found.sort(key=lambda row: (row["turn"], row["index"]))
    return [{k: row[k] for k in ("index", "key", "value", "turn", "leaked")} for row in found]


def truncate(turns: Sequence[Turn], fraction: float) -> list[Turn]:
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
    store: Store,
    run_id: int,
    fractions: Sequence[float] = FRACTIONS,
    solver: Solver | None = None,
) -> list[TurnPoint]:
    """Patient/doctor F1 (and accuracy) against the fraction of each consultation completed.

    F1 comes from the stored turns. Accuracy at 1.0 comes from the stored answers; at earlier
    fractions from ``solver`` (a :class:`engine.consult.doctor.final_task.Solver`), which answers
    the task again from the truncated dialogue, else from the answers a run with ``answer_at``
    stored at that share (:mod:`engine.consult.scoring.shares`); without either it is None.
    """
    from engine.consult.cases.cases import load_cases

    run = store.run(run_id)
    cases = {c.id: c for c in load_cases(store, run["dataset"])}
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    rows: list[TurnPoint] = []
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
            stored = (answer.get("scores") or {}).get(share_key("correct", fraction))
            if fraction >= 1.0:
                correct.append(bool(answer["correct"]))
            elif solver is not None:
                correct.append(solver.answer(case, part).correct)
            elif stored is not None:  # the run answered at this share (answer_at)
                correct.append(bool(stored))
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
