"""Turning an exam question into a draft consultation case with the real model."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import CaseError, Fact
from engine.consult.cases.draft import (
    draft_case,
    fact_is_grounded,
    fallback_opening,
    grounded,
    mcq_parts,
    parse_facts,
    sentences,
    split_stem,
)

ITEM = {
    "id": 12,
    "question": (
        "A 24-year-old woman comes to the emergency department because of fever and a "
        "headache for 2 days. She has neck stiffness and is bothered by light. Her "
        "temperature is 39.4°C (102.9°F). Lumbar puncture shows 1,200 neutrophils/mm3 and a "
        "low glucose. Which of the following is the most likely diagnosis?"
    ),
    "options": ["Migraine", "Bacterial meningitis", "Tension headache", "Sinusitis"],
    "answer": "B",
}


def test_the_last_question_is_the_task() -> None:
    info, task = split_stem(ITEM["question"])
    assert task == "Which of the following is the most likely diagnosis?"
    assert info.startswith("A 24-year-old woman") and info.endswith("low glucose.")
    assert split_stem("Only one sentence?") == ("", "Only one sentence?")


def test_item_shapes() -> None:
    assert mcq_parts(ITEM)[1] == {"A": "Migraine", "B": "Bacterial meningitis",
                                  "C": "Tension headache", "D": "Sinusitis"}  # fmt: skip
    q, options, answer = mcq_parts({"question": "Q?", "answers": {"a": "x", "b": "y"},
                                    "correct_answers": ["b"]})  # fmt: skip
    assert options == {"A": "x", "B": "y"} and answer == "B"


def test_parse_and_ground_facts() -> None:
    text = "Here are the facts:\n- Age: 24 years\n2. Temperature: 39.4°C\nnonsense line\n"
    assert parse_facts(text) == [Fact("Age", "24 years"), Fact("Temperature", "39.4°C")]
    assert parse_facts("Key: Age: 24, Sex: Female, Chief complaint: Neck stiffness") == [
        Fact("Age", "24"), Fact("Sex", "Female"), Fact("Chief complaint", "Neck stiffness"),
    ]  # fmt: skip
    stem = ITEM["question"]
    assert grounded("24 years", stem)
    assert not grounded("history of diabetes", stem)
    assert not grounded("temperature 39.9", stem)  # a number the stem does not hold
    assert fact_is_grounded(Fact("Temperature", "39.4°C"), stem)
    assert fact_is_grounded(Fact("Symptoms", "neck stiffness"), stem)
    assert not fact_is_grounded(Fact("LDR", "2"), stem)  # one word under an unknown key


def test_sentences_keep_decimal_numbers() -> None:
    assert sentences("It is 39.4°C (102.9°F). Then 1,200 cells. Why?") == [
        "It is 39.4°C (102.9°F).", "Then 1,200 cells.", "Why?",
    ]  # fmt: skip


def test_fallback_opening_uses_the_complaint() -> None:
    assert fallback_opening(ITEM["question"]) == (
        "Hello doctor, I've come in because of fever and a headache for 2 days. Can you help me?"
    )
    assert fallback_opening("A man is seen.").startswith("Hello doctor, I'm not feeling well")


@pytest.mark.slow
def test_draft_case_is_grounded_and_reviewable(chat_model) -> None:
    case = draft_case(ITEM, chat_model, dataset="usmle", model_name="smollm2")
    assert case.id == "usmle-12" and case.meta["draft"] is True
    assert case.task.question == "Which of the following is the most likely diagnosis?"
    assert case.task.answer == "B" and len(case.task.options) == 4
    assert case.initial_request
    info = case.meta["information"]
    for fact in case.facts:  # every fact comes from the question's text
        assert grounded(fact.value, info), fact
    # every sentence of the information is covered by some fact
    assert any("1,200 neutrophils" in f.value for f in case.facts)
    assert any("bothered by light" in f.value for f in case.facts)
    assert "year-old" not in case.initial_request  # the patient's own words
    assert isinstance(case.meta["review"], list)
    assert "Which of the following" not in " ".join(case.values)


def test_a_question_without_information_is_refused(chat_model) -> None:
    with pytest.raises(CaseError, match="no patient information"):
        draft_case({"id": 1, "question": "What is 2+2?", "options": ["3", "4"], "answer": "B"},
                   chat_model)  # fmt: skip
