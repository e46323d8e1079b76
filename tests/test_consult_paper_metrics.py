"""The paper's metrics, computed by hand: lengths (Table 2's Len), eq. 4 with ROUGE-1, -2
and -L, the bounds' rows, the split by number of facts and the leakage of a patient that
was given every fact."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task
from engine.consult.scoring.metrics import (
    FRACTIONS,
    SUMMARY_KEYS,
    bound_metrics,
    by_complexity,
    consultation_metrics,
    diversity,
    truncate,
    turn_leakage,
)

CASE = Case(
    "c1",
    [Fact("Symptom", "chest pain"), Fact("Duration", "40 years")],
    "Doctor, I have chest pain.",
    Task(question="Which?", options={"A": "Angina", "B": "Reflux"}, answer="A"),
)


def averaged(per_case):
    """A consultation run's metrics over ``per_case`` as its scorers reduce them."""
    from engine.core.scoring import metric_values, scorers_of

    return metric_values(scorers_of("consult"), per_case, len(per_case))


def _turns(pairs: list[tuple[str, str]]) -> list[dict]:
    turns = [
        {"turn": 0, "role": "patient", "text": CASE.initial_request, "extra": {"kind": "opening"}}
    ]
    for i, (q, r) in enumerate(pairs, 1):
        turns.append({"turn": i, "role": "doctor", "text": q, "extra": {"kind": "question"}})
        turns.append({"turn": i, "role": "patient", "text": r, "extra": {"kind": "reply"}})
    return turns


def test_eq4_with_rouge1_rouge2_and_rougeL() -> None:
    two = ["do you smoke", "do you drink"]
    # unigrams: 2 of 3 shared (F = 2/3); bigrams: "do you" of 2 (F = 1/2); LCS "do you" (2/3)
    assert diversity(two, "rouge1") == pytest.approx(2 / 3)
    assert diversity(two, "rouge2") == pytest.approx(1 / 2)
    assert diversity(two, "rougeL") == pytest.approx(2 / 3)
    three = two + ["any allergies today"]  # shares nothing with either: two pairs score 0
    assert diversity(three, "rouge1") == pytest.approx(2 / 9)
    assert diversity(three, "rouge2") == pytest.approx(1 / 6)
    assert diversity(three) == pytest.approx(2 / 9)  # ROUGE-L by default
    assert diversity(["only one"], "rouge1") is None
    with pytest.raises(ValueError):
        diversity(two, "rouge3")


def test_lengths_are_words_per_turn() -> None:
    m = consultation_metrics(
        CASE, _turns([("Do you smoke?", "No."), ("Any chest pain at all?", "Yes, chest pain.")])
    )
    assert m["doctor_length"] == m["length"] == 4.0  # (3 + 5) / 2
    assert m["patient_length"] == 2.0  # (1 + 3) / 2
    assert m["n_facts"] == 2
    assert m["diversity_rouge2"] == 0.0  # no bigram in common


def test_lower_bound_scores_the_opening_against_the_values() -> None:
    m = bound_metrics(CASE, "lower", correct=True)
    # P0 = doctor i have chest pain (5 words); values = chest pain 40 years (4); 2 shared
    assert m["patient_precision"] == pytest.approx(2 / 5)
    assert m["patient_recall"] == pytest.approx(2 / 4)
    assert m["patient_f1"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)
    assert m["patient_length"] == 5.0
    assert m["doctor_f1"] == 0.0 and m["turns"] == 0 and m["diversity_rouge1"] is None
    s = averaged([m])
    assert (s["patient_recall"], s["patient_precision"], s["patient_f1"]) == (50.0, 40.0, 44.44)
    assert s["patient_length"] == 5.0 and s["doctor_length"] == 0.0
    upper = bound_metrics(CASE, "upper")
    assert upper["patient_f1"] == pytest.approx(1.0) and upper["patient_length"] == 2.0
    with pytest.raises(ValueError):
        bound_metrics(CASE, "middle")


def test_the_summary_carries_every_key() -> None:
    m = consultation_metrics(CASE, _turns([("do you smoke", "no"), ("do you drink", "no")]))
    s = averaged([m])
    for key in SUMMARY_KEYS + ("leakage", "by_complexity"):
        assert key in s
    assert s["diversity_rouge1"] == pytest.approx(66.67) and s["diversity_rouge2"] == 50.0
    assert s["diversity_rougeL"] == s["diversity"] == pytest.approx(66.67)
    assert s["patient_length"] == 1.0 and s["doctor_length"] == 3.0


def test_split_by_number_of_facts_in_thirds() -> None:
    per_case = [
        {"n_facts": n, "correct": ok, "patient_f1": 0.5, "doctor_f1": 0.25, "turns": 2}
        for n, ok in [(20, True), (3, True), (10, False), (5, False), (12, True), (8, True)]
    ]
    out = by_complexity(per_case)
    assert list(out) == ["low", "mid", "high"]
    assert out["low"] == {
        "facts": "3-5",
        "n": 2,
        "accuracy": 50.0,
        "patient_f1": 50.0,
        "doctor_f1": 25.0,
        "avg_turns": 2.0,
    }
    assert out["mid"]["facts"] == "8-10" and out["mid"]["accuracy"] == 50.0
    assert out["high"]["facts"] == "12-20" and out["high"]["accuracy"] == 100.0
    assert by_complexity(per_case[:1]) == {
        "high": {
            "facts": "20",
            "n": 1,
            "accuracy": 100.0,
            "patient_f1": 50.0,
            "doctor_f1": 25.0,
            "avg_turns": 2.0,
        }
    }


def test_turn_analysis_steps_of_20_percent() -> None:
    assert FRACTIONS == (0.2, 0.4, 0.6, 0.8, 1.0)
    turns = _turns([(f"q{i}", f"r{i}") for i in range(1, 6)])
    kept = truncate(turns, 0.2)
    assert [t["text"] for t in kept] == [CASE.initial_request, "q1", "r1"]
    assert len(truncate(turns, 0.6)) == 1 + 2 * 3


def test_leakage_of_a_patient_given_every_fact() -> None:
    facts = [Fact("Age", "40"), Fact("Smoking", "never smoked"), Fact("Allergies", "penicillin")]
    leak = turn_leakage(
        "Do you smoke?", "I never smoked, but I'm allergic to penicillin.", facts, range(3), top=1
    )
    assert leak == {"asked": [1], "revealed": [1, 2], "leaked": [2]}
    # nothing matched the question: everything revealed is leaked
    leak = turn_leakage("How are you?", "I'm allergic to penicillin.", facts, range(3), top=None)
    assert leak == {"asked": [], "revealed": [2], "leaked": [2]}
