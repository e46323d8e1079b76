"""Every doctor and baseline over a few cases with the real model; resume and cancel."""

from __future__ import annotations

import pytest

from engine.consult.agentclinic import convert_record
from engine.consult.cases import ensure_sample, save_cases
from engine.consult.metrics import SUMMARY_KEYS
from engine.consult.run import run_consult
from engine.progress import Cancel

pytestmark = pytest.mark.slow


@pytest.fixture
def opener(chat_model):
    """The default chat model, already held in the pool (runs lease it from there)."""
    return chat_model


@pytest.mark.parametrize(
    ("doctor", "max_turns", "runner"),
    [
        ("model", 2, "model"),
        ("upper", 10, "upper"),
        ("lower", 10, "lower"),
    ],
)
def test_every_doctor_reports_every_metric(store, opener, doctor, max_turns, runner) -> None:
    name = ensure_sample(store)
    seen = []
    summary = run_consult(store, name, doctor, max_turns=max_turns, limit=1,
                          progress=seen.append)  # fmt: skip
    assert summary["status"] == "finished" and summary["n"] == 1
    for key in SUMMARY_KEYS + ("leakage",):
        assert key in summary
    for key in SUMMARY_KEYS[:7]:
        assert 0.0 <= summary[key] <= 100.0
    run = store.run(summary["run_id"])
    assert run["runner"] == runner and run["activity"] == "consult"
    assert run["summary"]["accuracy"] == summary["accuracy"]
    (answer,) = store.answers(summary["run_id"])
    assert answer["chosen"] in "ABCDE" and answer["gold"] == "B"
    turns = store.turns(summary["run_id"], "sample-01")
    questions = [t for t in turns if t["role"] == "doctor" and t["extra"]["kind"] == "question"]
    assert summary["avg_turns"] == len(questions) <= max_turns
    if doctor in ("upper", "lower"):
        assert turns == [] and summary["avg_turns"] == 0 and summary["diversity"] is None
        assert answer["extra"]["context"] == ("all" if doctor == "upper" else "opening")
    assert seen[-1].done == seen[-1].total == 1


def test_model_doctor_prompt_styles(store, opener) -> None:
    name = ensure_sample(store)
    summary = run_consult(store, name, "model", style="short", max_turns=1, limit=1)  # fmt: skip
    assert store.run(summary["run_id"])["settings"]["style"] == "short"
    assert summary["avg_turns"] <= 1


def test_diagnosis_cases_report_match_and_similarity(store, opener) -> None:
    case = convert_record(
        {"Patient_Actor": {"Demographics": "35-year-old woman",
                           "Symptoms": {"Primary_Symptom": "Double vision"}},
         "Test_Results": {"Acetylcholine_Receptor_Antibodies": "Present"},
         "Correct_Diagnosis": "Myasthenia gravis"}, "mg-1")  # fmt: skip
    save_cases(store, "mg", [case])
    summary = run_consult(store, "mg", "oracle-direct", max_turns=1)
    assert 0.0 <= summary["similarity"] <= 100.0
    (answer,) = store.answers(summary["run_id"])
    assert answer["gold"] == "Myasthenia gravis" and answer["response"]
    assert answer["scores"]["similarity"] is not None


def test_cancel_then_resume(store, opener) -> None:
    name = ensure_sample(store)
    cancel = Cancel()

    def stop_after_first(p) -> None:
        if p.done >= 1:
            cancel.set()

    first = run_consult(store, name, "lower", limit=2,
                        progress=stop_after_first, cancel=cancel)  # fmt: skip
    assert first["status"] == "cancelled" and first["answered"] == 1 and first["n"] == 2
    assert store.run(first["run_id"])["status"] == "cancelled"
    again = run_consult(store, "", resume=first["run_id"])
    assert again["run_id"] == first["run_id"] and again["status"] == "finished"
    assert again["n"] == again["answered"] == 2
    assert store.answered_keys(first["run_id"]) == {"sample-01", "sample-02"}


def test_unknown_data_set_fails_cleanly(store, opener) -> None:
    from engine.store import StoreError

    with pytest.raises(StoreError):
        run_consult(store, "nope", "upper")


def test_turn_analysis_with_a_solver(store, opener, chat_model) -> None:
    from engine.consult.metrics import turn_analysis
    from engine.consult.solve import Solver

    case = convert_record(
        {"Patient_Actor": {"Demographics": "35-year-old woman", "History": "Double vision"},
         "Test_Results": {"Acetylcholine_Receptor_Antibodies": "Present"},
         "Correct_Diagnosis": "Myasthenia gravis"}, "mg-1")  # fmt: skip
    save_cases(store, "mg", [case])
    summary = run_consult(store, "mg", "oracle-direct", max_turns=1)
    assert summary["avg_turns"] == 3  # every key, whatever max_turns says
    rows = turn_analysis(store, summary["run_id"], fractions=(0.5, 1.0),
                         solver=Solver(chat_model))  # fmt: skip
    assert [r["fraction"] for r in rows] == [0.5, 1.0]
    assert rows[0]["accuracy"] in (0.0, 100.0) and rows[1]["accuracy"] == summary["accuracy"]
    # half the dialogue reaches half the facts at most: the F1 cannot be higher
    assert rows[0]["doctor_f1"] <= rows[1]["doctor_f1"]
    assert rows[1]["patient_f1"] == pytest.approx(summary["patient_f1"], abs=0.01)
