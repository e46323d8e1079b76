"""Doctors without a model: stop detection, the oracle's questions, answering the task."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task
from engine.consult.doctor.doctors import (
    OracleDoctor,
    conclusion_reason,
    first_question,
    oracle_key,
)
from engine.consult.doctor.final_task import (
    clean_diagnosis,
    diagnosis_match,
    extract_letter,
    normalize_diagnosis,
    task_result,
)

CASE = Case(
    "c",
    [Fact("Age", "40"), Fact("Vital signs - Blood pressure", "120/80"), Fact("ECG", "normal")],
    "Hi doctor.",
    Task(question="Which?", options={"A": "Angina", "B": "Reflux"}, answer="B"),
)


@pytest.mark.parametrize(
    ("text", "reason", "question"),
    [
        ("Do you have a fever?", None, "Do you have a fever?"),
        ("I'm sorry to hear that. How long has it lasted? Any pain?", None,
         "How long has it lasted?"),
        ("Tell me about your medical history.", None, "Tell me about your medical history."),
        ("Based on your symptoms, you most likely have reflux.", "conclusion", None),
        ("I have enough information. The diagnosis is angina.", "conclusion", None),
        ("The answer is B. Do you smoke?", None, "Do you smoke?"),  # a question goes on
        ("Okay.", "no_question", None),
        ("  ", "empty", None),
        ("J'ai assez d'informations.", "conclusion", None),
        ("您吸烟吗？", None, "您吸烟吗？"),
    ],
)  # fmt: skip
def test_stop_detection(text: str, reason: str | None, question: str | None) -> None:
    assert conclusion_reason(text) == reason
    assert first_question(text) == question


def test_oracle_orders() -> None:
    direct = OracleDoctor("direct").questions(CASE)
    assert direct == [
        "Can you tell me about age?",
        "Can you tell me about vital signs - blood pressure?",
        "Can you tell me about ECG?",
    ]
    assert OracleDoctor("reverse").questions(CASE) == direct[::-1]
    shuffled = OracleDoctor("random", seed=3).questions(CASE)
    assert sorted(shuffled) == sorted(direct)
    assert OracleDoctor("random", seed=3).questions(CASE) == shuffled  # seeded
    assert oracle_key("Chest CT - Findings") == "chest CT - findings"


def test_oracle_moves_until_every_key_is_asked() -> None:
    doctor = OracleDoctor("direct")
    turns: list[dict] = [{"turn": 0, "role": "patient", "text": "Hi", "extra": {}}]
    move = doctor.next(CASE, turns)
    assert move.question == "Can you tell me about age?"
    turns += [{"turn": 1, "role": "doctor", "text": move.question, "extra": {}}] * 2
    assert not doctor.next(CASE, turns).stop  # the third key is still to ask
    turns += [{"turn": 3, "role": "doctor", "text": "x", "extra": {}}]
    assert doctor.next(CASE, turns).stop and doctor.next(CASE, turns).reason == "all_asked"
    with pytest.raises(ValueError):
        OracleDoctor("sideways")


def test_mcq_answers_are_letters() -> None:
    assert extract_letter("B", CASE.task.options).letter == "B"
    assert extract_letter("The answer is (a).", CASE.task.options).letter == "A"
    assert extract_letter("reflux", CASE.task.options).letter == "B"
    result = task_result(CASE.task, "b")
    assert (result.chosen, result.gold, result.correct) == ("B", "B", True)
    assert task_result(CASE.task, "no idea").chosen is None


def test_diagnosis_matching() -> None:
    assert normalize_diagnosis("The Ménière's disease (MD)") == "meniere s disease"
    assert diagnosis_match("Progressive multifocal encephalopathy", "Progressive multifocal "
                           "encephalopathy (PML)")  # fmt: skip
    assert diagnosis_match("PML", "Progressive multifocal encephalopathy (PML)")
    assert diagnosis_match("I think it is myasthenia gravis", "Myasthenia gravis")
    assert not diagnosis_match("Lambert-Eaton syndrome", "Myasthenia gravis")
    assert not diagnosis_match("", "Myasthenia gravis")
    assert clean_diagnosis("The most likely diagnosis is myasthenia gravis.\nBecause…") == (
        "myasthenia gravis"
    )


def test_diagnosis_answers_report_match_and_similarity() -> None:
    task = Task(diagnosis="Myasthenia gravis")
    right = task_result(task, "Diagnosis: myasthenia gravis")
    assert right.correct and right.similarity > 0.95
    wrong = task_result(task, "Multiple sclerosis")
    assert not wrong.correct and wrong.similarity < right.similarity


def test_a_final_answer_without_a_letter_says_why() -> None:
    echoed = task_result(CASE.task, "A. Angina\nB. Reflux", "stop")
    assert (echoed.chosen, echoed.extra["no_answer"]) == (None, "echo")
    cut = task_result(CASE.task, "The patient's burning pain after meals suggests", "length")
    assert (cut.chosen, cut.extra["no_answer"]) == (None, "cut_off")
    assert task_result(CASE.task, "C", "stop").extra["no_answer"] == "out_of_range"
    assert "no_answer" not in task_result(CASE.task, "The answer is B.", "length").extra


def test_a_consult_run_summary_gives_no_answers_and_chance(store, scripted_pool) -> None:
    from engine.consult.cases.cases import ensure_sample
    from engine.consult.doctor.runner import run_consult
    from engine.models.scripted import ScriptedModel

    pool = scripted_pool(ScriptedModel("solver", replies=["A. x\nB. y\nC. z", "B"]))
    cases = ensure_sample(store)
    summary = run_consult(
        store, cases, "upper", limit=2, pool=pool, solver="solver", answer_method="generate"
    )
    answers = store.answers(summary["run_id"])
    options = [len(case["task"]["options"]) for case in store.items(cases)[:2]]
    assert summary["no_answer"] == {"echo": 50.0} and summary["cut_off"] == 0.0
    assert summary["chance"] == {"accuracy": round(100 * sum(1 / k for k in options) / 2, 2)}
    assert answers[0]["extra"]["finish_reason"] == "stop"
