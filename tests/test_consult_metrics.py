"""Consultation metrics against examples computed by hand."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task, save_cases
from engine.consult.scoring.metrics import (
    SUMMARY_KEYS,
    asked_facts,
    avg_length,
    consultation_metrics,
    diversity,
    doctor_score,
    fact_view,
    patient_score,
    revealed,
    truncate,
    turn_analysis,
    turn_leakage,
)
from engine.core.scoring import Scored

FACTS = [Fact("Fever", "high fever"), Fact("Cough type", "dry cough")]


def averaged(per_case):
    """A consultation run's metrics over ``per_case`` as its scorers reduce them."""
    from engine.core.scoring import metric_values, scorers_of

    return metric_values(scorers_of("consult"), per_case, len(per_case))


def turn(n: int, role: str, text: str, **extra: object) -> dict:
    kind = {"doctor": "question", "patient": "reply"}[role] if n else "opening"
    return {"turn": n, "role": role, "text": text, "extra": {"kind": kind, **extra}}


def test_patient_score_is_rouge1_of_replies_against_values() -> None:
    # replies "i have a high fever no cough" (7 words), values "high fever dry cough" (4)
    # overlap: high, fever, cough = 3
    s = patient_score(["I have a high fever", "no cough"], FACTS)
    assert s.recall == pytest.approx(3 / 4)
    assert s.precision == pytest.approx(3 / 7)
    assert s.fmeasure == pytest.approx(18 / 33)


def test_doctor_score_is_rouge1_of_questions_against_keys() -> None:
    # questions "do you have fever what cough" (6), keys "fever cough type" (3); overlap 2
    s = doctor_score(["Do you have fever?", "What cough?"], FACTS)
    assert s.recall == pytest.approx(2 / 3)
    assert s.precision == pytest.approx(2 / 6)
    assert s.fmeasure == pytest.approx(4 / 9)


def test_no_utterances_score_zero() -> None:
    assert patient_score([], FACTS).fmeasure == 0.0
    assert doctor_score([], FACTS).recall == 0.0


def test_diversity_is_mean_pairwise_rouge_l() -> None:
    # (q1, q2): LCS "a b" → P = R = 2/3 → F = 2/3; the other two pairs share nothing.
    assert diversity(["a b c", "a b d", "x y z"]) == pytest.approx(2 / 9)
    assert diversity(["same question", "same question"]) == pytest.approx(1.0)
    assert diversity(["only one"]) is None
    assert diversity([]) is None


def test_avg_length_counts_tokens_per_utterance() -> None:
    assert avg_length(["a b", "c d e f"]) == 3.0
    assert avg_length([]) == 0.0


LEAK_FACTS = [
    Fact("Temperature", "38.5 °C"),
    Fact("Social history", "smokes 10 cigarettes a day"),
    Fact("Allergies", "penicillin"),
]


def test_asked_facts_are_the_best_key_match_and_the_top_selection() -> None:
    assert asked_facts("What is your temperature?", LEAK_FACTS) == [0]
    assert asked_facts("Any allergies?", LEAK_FACTS, top=1) == [1, 2]
    assert asked_facts("How are you?", LEAK_FACTS) == []


def test_revealed_needs_half_of_the_value_words() -> None:
    assert revealed("It was 38.5 yesterday", LEAK_FACTS[0])  # {38, 5}: one word is half
    assert not revealed("It was 37 yesterday", LEAK_FACTS[0])
    # {smoke, 10, cigarett, day}: two words needed
    assert revealed("I smoke a lot, 10 cigarettes", LEAK_FACTS[1])
    assert not revealed("I smoke", LEAK_FACTS[1])
    assert not revealed("I'm fine", LEAK_FACTS[2])


def test_turn_leakage_counts_revealed_facts_not_asked_for() -> None:
    out = turn_leakage(
        "What is your temperature?",
        "My temperature was 38.5 and I smoke 10 cigarettes a day",
        LEAK_FACTS,
        given=[0, 1],
    )
    assert out == {"asked": [0], "revealed": [0, 1], "leaked": [1]}


CASE = Case(
    id="c1",
    facts=FACTS,
    initial_request="I feel ill.",
    task=Task(question="Which?", options={"A": "Flu", "B": "Cold"}, answer="A"),
)
DIALOGUE = [
    turn(0, "patient", "I feel ill."),
    turn(1, "doctor", "Do you have fever?"),
    turn(1, "patient", "I have a high fever", facts=[{"index": 0}], revealed=[0], leaked=[]),
    turn(2, "doctor", "What cough?"),
    turn(2, "patient", "no cough", facts=[{"index": 1}], revealed=[], leaked=[]),
    {"turn": 3, "role": "doctor", "text": "I have enough information.",
     "extra": {"kind": "conclusion"}},
]  # fmt: skip


def test_consultation_metrics_leave_out_opening_and_conclusion() -> None:
    m = consultation_metrics(CASE, DIALOGUE, correct=True)
    assert m["patient_recall"] == pytest.approx(3 / 4)
    assert m["doctor_f1"] == pytest.approx(4 / 9)
    assert m["turns"] == 2
    assert m["length"] == pytest.approx((4 + 2) / 2)
    # "do you have fever" vs "what cough": no common word
    assert m["diversity"] == 0.0
    assert (m["revealed"], m["leaked"], m["correct"]) == (1, 0, True)


def test_summarize_averages_in_percent() -> None:
    per_case = [
        {"patient_recall": 0.5, "patient_precision": 0.25, "patient_f1": 1 / 3,
         "doctor_recall": 1.0, "doctor_precision": 0.5, "doctor_f1": 2 / 3, "correct": True,
         "turns": 2, "length": 4.0, "diversity": 0.2, "revealed": 3, "leaked": 1},
        {"patient_recall": 0.0, "patient_precision": 0.0, "patient_f1": 0.0,
         "doctor_recall": 0.0, "doctor_precision": 0.0, "doctor_f1": 0.0, "correct": False,
         "turns": 1, "length": 6.0, "diversity": None, "revealed": 1, "leaked": 0},
    ]  # fmt: skip
    s = averaged(per_case)
    assert set(SUMMARY_KEYS) <= s.keys()
    assert s["patient_recall"] == 25.0
    assert s["patient_f1"] == pytest.approx(16.67)
    assert s["doctor_precision"] == 25.0
    assert s["accuracy"] == 50.0
    assert s["avg_turns"] == 1.5
    assert s["avg_length"] == 5.0
    assert s["diversity"] == 20.0  # only the consultation with two questions counts
    assert s["leakage"] == 25.0  # 1 leaked of 4 revealed


def test_summarize_of_nothing() -> None:
    s = averaged([])
    assert s["accuracy"] == 0.0 and s["diversity"] is None


def test_fact_view_marks_revealed_given_and_never_asked() -> None:
    case = Case("c", LEAK_FACTS, "Hi", Task(diagnosis="Flu"))
    turns = [
        turn(0, "patient", "Hi"),
        turn(1, "doctor", "Temperature?"),
        turn(1, "patient", "38.5", facts=[{"index": 0}, {"index": 1}], revealed=[0], leaked=[]),
    ]
    view = fact_view(case, turns)
    assert [(v["key"], v["status"], v["turn"]) for v in view] == [
        ("Temperature", "revealed", 1),
        ("Social history", "given", 1),
        ("Allergies", "never_asked", None),
    ]


def test_truncate_keeps_the_first_part_of_the_dialogue() -> None:
    assert [t["turn"] for t in truncate(DIALOGUE, 0.5)] == [0, 1, 1]
    assert [t["turn"] for t in truncate(DIALOGUE, 1.0)] == [0, 1, 1, 2, 2]
    assert [t["turn"] for t in truncate(DIALOGUE, 0.0)] == [0]


def test_turn_analysis_from_stored_turns(store) -> None:
    save_cases(store, "tiny", [CASE])
    run_id = store.start_run("consult", "tiny", "person", runner="person", n_total=1)
    for t in DIALOGUE:
        store.add_turn(run_id, "c1", t["turn"], t["role"], t["text"], extra=t["extra"])
    right = [Scored("consult.task", 1, {"correct": True})]
    store.add_answer(run_id, "c1", response="A", chosen="A", gold="A", scores=right)
    rows = turn_analysis(store, run_id, fractions=(0.5, 1.0))
    # half: replies "i have a high fever" vs values "high fever dry cough": 2 of 5 / 2 of 4
    assert rows[0]["patient_f1"] == pytest.approx(
        round(100 * 2 * (2 / 5 * 2 / 4) / (2 / 5 + 2 / 4), 2)
    )
    # half: "do you have fever" vs "fever cough type": P 1/4, R 1/3
    assert rows[0]["doctor_f1"] == pytest.approx(round(100 * 2 * (1 / 12) / (1 / 4 + 1 / 3), 2))
    assert rows[0]["accuracy"] is None  # needs a solver
    assert rows[1]["patient_f1"] == pytest.approx(round(100 * 18 / 33, 2))
    assert rows[1]["accuracy"] == 100.0


def test_a_fact_said_twice_counts_once_as_the_facts_listed_do() -> None:
    from engine.consult.scoring.metrics import fact_view

    again = [
        *DIALOGUE[:3],
        turn(2, "doctor", "Fever again?"),
        turn(2, "patient", "Yes, a high fever", facts=[{"index": 0}], revealed=[0], leaked=[0]),
        turn(3, "doctor", "And?"),
        turn(3, "patient", "A high fever.", facts=[{"index": 0}], revealed=[0], leaked=[0]),
    ]
    m = consultation_metrics(CASE, again, correct=True)
    listed = [v for v in fact_view(CASE, again) if v["status"] == "revealed"]
    assert m["revealed"] == len(listed) == 1
    assert m["leaked"] == 1
