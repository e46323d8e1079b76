"""Every doctor and baseline over a few cases: the model doctor with the real model; the
baselines, styles, diagnoses, resume and cancel with scripted models
(:mod:`engine.models.scripted`)."""

from __future__ import annotations

import pytest

from engine.consult.cases.agentclinic import convert_record
from engine.consult.cases.cases import ensure_sample, save_cases
from engine.consult.doctor.runner import run_consult
from engine.consult.scoring.metrics import SUMMARY_KEYS
from engine.core.progress import Cancel
from engine.models.scripted import ScriptedModel

#: The scripted doctor's questions, then its conclusion.
QUESTIONS = ["How long has this lasted?", "Any fever?", "I have enough information."]
#: The scripted patient and solver, named in a run's settings.
ROLES = {"patient": "patient", "solver": "solver"}
MG = {"Patient_Actor": {"Demographics": "35-year-old woman",
                        "Symptoms": {"Primary_Symptom": "Double vision"}},
      "Test_Results": {"Acetylcholine_Receptor_Antibodies": "Present"},
      "Correct_Diagnosis": "Myasthenia gravis"}  # fmt: skip


@pytest.fixture
def pool(scripted_pool):
    """A scripted doctor (the default model), patient and solver."""
    return scripted_pool(
        ScriptedModel("doctor", replies=QUESTIONS),
        ScriptedModel("patient", replies="For three days, doctor."),
        ScriptedModel("solver", replies="B"),
    )


def check_every_metric(store, summary, doctor, max_turns, runner, seen) -> None:
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


@pytest.mark.slow
def test_the_model_doctor_reports_every_metric_with_the_real_model(store, chat_model) -> None:
    seen = []
    summary = run_consult(store, ensure_sample(store), "model", max_turns=2, limit=1,
                          progress=seen.append)  # fmt: skip
    check_every_metric(store, summary, "model", 2, "model", seen)


@pytest.mark.parametrize(
    ("doctor", "max_turns", "runner"),
    [("model", 2, "model"), ("upper", 10, "upper"), ("lower", 10, "lower")],
)
def test_every_doctor_reports_every_metric(store, pool, doctor, max_turns, runner) -> None:
    seen = []
    summary = run_consult(store, ensure_sample(store), doctor, max_turns=max_turns, limit=1,
                          pool=pool, progress=seen.append, **ROLES)  # fmt: skip
    check_every_metric(store, summary, doctor, max_turns, runner, seen)
    if doctor == "model":  # the doctor asked until its turns ran out
        turns = store.turns(summary["run_id"], "sample-01")
        asked = [t["text"] for t in turns if t["role"] == "doctor"]
        assert asked[:2] == QUESTIONS[:2]


def test_model_doctor_prompt_styles(store, pool) -> None:
    name = ensure_sample(store)
    summary = run_consult(store, name, "model", style="short", max_turns=1, limit=1, pool=pool,
                          **ROLES)  # fmt: skip
    assert store.run(summary["run_id"])["settings"]["style"] == "short"
    assert summary["avg_turns"] <= 1


def test_diagnosis_cases_report_match_and_similarity(store, scripted_pool) -> None:
    save_cases(store, "mg", [convert_record(MG, "mg-1")])
    pool = scripted_pool(ScriptedModel("patient", replies="Yes."),
                         ScriptedModel("solver", replies="Myasthenia gravis"))  # fmt: skip
    summary = run_consult(store, "mg", "oracle-direct", max_turns=1, pool=pool, **ROLES)
    assert summary["similarity"] == pytest.approx(100.0)
    (answer,) = store.answers(summary["run_id"])
    assert answer["gold"] == "Myasthenia gravis" and answer["response"] == "Myasthenia gravis"
    assert answer["scores"]["similarity"] is not None


def test_cancel_then_resume(store, pool) -> None:
    name = ensure_sample(store)
    cancel = Cancel()

    def stop_after_first(p) -> None:
        if p.done >= 1:
            cancel.set()

    first = run_consult(store, name, "lower", limit=2, pool=pool,
                        progress=stop_after_first, cancel=cancel, **ROLES)  # fmt: skip
    assert first["status"] == "cancelled" and first["answered"] == 1 and first["n"] == 2
    assert store.run(first["run_id"])["status"] == "cancelled"
    again = run_consult(store, "", resume=first["run_id"], pool=pool)
    assert again["run_id"] == first["run_id"] and again["status"] == "finished"
    assert again["n"] == again["answered"] == 2
    assert store.answered_keys(first["run_id"]) == {"sample-01", "sample-02"}


def test_unknown_data_set_fails_cleanly(store, pool) -> None:
    from engine.store.store import StoreError

    with pytest.raises(StoreError):
        run_consult(store, "nope", "upper", pool=pool, **ROLES)


def test_turn_analysis_with_a_solver(store, scripted_pool) -> None:
    from engine.consult.doctor.final_task import Solver
    from engine.consult.scoring.metrics import turn_analysis

    record = {**MG, "Patient_Actor": {"Demographics": "35-year-old woman",
                                      "History": "Double vision"}}  # fmt: skip
    save_cases(store, "mg", [convert_record(record, "mg-1")])
    solver = ScriptedModel("solver", replies="Myasthenia gravis")
    pool = scripted_pool(ScriptedModel("patient", replies="Yes, it is."), solver)
    summary = run_consult(store, "mg", "oracle-direct", max_turns=1, pool=pool, **ROLES)
    assert summary["avg_turns"] == 3  # every key, whatever max_turns says
    rows = turn_analysis(store, summary["run_id"], fractions=(0.5, 1.0),
                         solver=Solver(solver))  # fmt: skip
    assert [r["fraction"] for r in rows] == [0.5, 1.0]
    assert rows[0]["accuracy"] in (0.0, 100.0) and rows[1]["accuracy"] == summary["accuracy"]
    # half the dialogue reaches half the facts at most: the F1 cannot be higher
    assert rows[0]["doctor_f1"] <= rows[1]["doctor_f1"]
    assert rows[1]["patient_f1"] == pytest.approx(summary["patient_f1"], abs=0.01)
