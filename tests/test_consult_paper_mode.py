"""Consultations as the paper defines them, with the real model: a patient that knows every
fact (and whose leakage is measured), oracles that ask every key, the bounds, and the
settings recorded on the run."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task, ensure_sample, save_cases
from engine.consult.doctor.runner import run_consult
from engine.consult.patient.simulated import PaperPatient
from engine.consult.scoring.metrics import SUMMARY_KEYS

pytestmark = pytest.mark.slow

CASE = Case(
    "small-1",
    [
        Fact("Age", "58 years"),
        Fact("Smoking", "20 cigarettes a day for 30 years"),
        Fact("Chest pain", "crushing, for one hour"),
    ],
    "Doctor, my chest hurts a lot.",
    Task(
        question="Which is most likely?", options={"A": "Heart attack", "B": "Reflux"}, answer="A"
    ),
)


def test_the_paper_patient_sees_everything(chat_model) -> None:
    patient = PaperPatient(CASE, chat_model)
    system = patient.messages("Do you smoke?")[0]["content"]
    for fact in CASE.facts:
        assert f"- {fact.key}: {fact.value}" in system
    assert "Be honest" in system and "Be strict" in system and "colloquially" in system
    reply = patient.reply("Do you smoke?")
    assert reply.text and reply.source in ("model", "unknown")
    assert [m.key for m in reply.facts][:1] == ["Smoking"]  # matched, for the leakage measure
    second = patient.messages("How old are you?")
    assert [m["role"] for m in second[1:]] == ["assistant", "user", "assistant", "user"]
    assert second[3]["content"] == reply.text  # the dialogue so far comes along


def test_an_oracle_asks_every_key_in_paper_mode(store, chat_model) -> None:
    save_cases(store, "small", [CASE])
    summary = run_consult(store, "small", "oracle-reverse", max_turns=1)
    assert summary["status"] == "finished" and summary["avg_turns"] == 3
    assert summary["patient_mode"] == "paper" and summary["solver_model"] == "smollm2"
    for key in SUMMARY_KEYS + ("leakage", "by_complexity"):
        assert key in summary
    assert summary["doctor_recall"] == 100.0  # every key was asked
    assert summary["patient_length"] > 0 and summary["doctor_length"] > 0
    assert summary["by_complexity"]["high"]["facts"] == "3"
    replies = [t for t in store.turns(summary["run_id"]) if t["role"] == "patient"][1:]
    assert len(replies) == 3
    for t in replies:
        extra = t["extra"]
        assert extra["patient_mode"] == "paper" and set(extra) >= {"asked", "revealed", "leaked"}
    run = store.run(summary["run_id"])
    assert run["settings"]["patient_mode"] == "paper" and run["settings"]["keep_conclusions"]


def test_the_lower_bound_scores_the_opening(store, chat_model) -> None:
    name = ensure_sample(store)
    summary = run_consult(store, name, "lower", limit=1)
    assert summary["patient_recall"] > 0 and summary["patient_precision"] > 0
    assert summary["patient_f1"] > 0 and summary["patient_length"] > 0
    assert summary["doctor_f1"] == 0.0 and summary["avg_turns"] == 0


def test_a_model_doctor_in_paper_mode(store, chat_model) -> None:
    save_cases(store, "small", [CASE])
    summary = run_consult(store, "small", "model", max_turns=2, doctor_max_tokens=128)
    assert summary["status"] == "finished" and summary["avg_turns"] <= 2
    run = store.run(summary["run_id"])
    assert run["settings"]["doctor_max_tokens"] == 128
    assert run["settings"]["solver"] == "smollm2" and run["settings"]["patient_mode"] == "paper"
    doctor_turns = [t for t in store.turns(summary["run_id"]) if t["role"] == "doctor"]
    questions = [t for t in doctor_turns if t["extra"]["kind"] == "question"]
    assert len(questions) == summary["avg_turns"]
    for t in questions:  # the whole output is the turn; it holds a question
        assert "raw" not in t["extra"] or t["extra"]["raw"].startswith(t["text"][:20])
