"""The patient audited: statements that match no fact of the case (word overlap, labelled
so), replies out of a patient's voice (an assistant's refusal, the doctor's words), from fixed
turns (a scripted run and the report's table: tests/test_patient_audit_labelled.py)."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task
from engine.consult.scoring.audit import audit, off_voice, statements

CASE = Case(
    "c",
    [Fact("Fever", "38.5 °C since Monday"), Fact("Cough", "dry cough for three days")],
    "I feel hot and tired",
    Task(diagnosis="influenza"),
)


def reply(turn: int, text: str) -> dict:
    return {"role": "patient", "turn": turn, "text": text, "extra": {"kind": "reply"}}


def test_statements_are_checked_against_the_facts():
    turns = [
        {
            "role": "patient",
            "turn": 0,
            "text": "I feel hot and tired",
            "extra": {},
        },  # P0: not a reply
        reply(1, "I have had a fever since Monday. Yes."),  # supported; "Yes." has no content words
        reply(2, "My dry cough started three days ago. I recently travelled to Brazil."),
        reply(3, "I'm sorry, but I'm unable to provide medical information."),  # a refusal
    ]
    found = audit(CASE, turns)
    assert found["patient_replies"] == 3 and found["patient_statements"] == 3
    assert found["patient_unsupported"] == pytest.approx(1 / 3, abs=1e-4)  # the trip to Brazil
    assert found["patient_off_voice"] == pytest.approx(1 / 3, abs=1e-4)
    assert audit(CASE, turns[:1]) == {
        "patient_statements": 0,
        "patient_unsupported": None,
        "patient_replies": 0,
        "patient_dishonest": None,
        "patient_unasked": None,
        "patient_jargon": None,
        "patient_off_voice": None,
    }


def test_voice_and_sentences_in_chinese_and_english():
    assert statements("我发烧三天了。咳嗽！还有点累") == ["我发烧三天了。", "咳嗽！", "还有点累"]
    assert off_voice("As an AI language model, I cannot diagnose.") and off_voice("我建议您多喝水")
    assert not off_voice("It hurts when I breathe in, doctor.")
    zh = Case(
        "z",
        [Fact("发热", "体温38.5度，三天")],
        "医生，我发烧了",
        Task(diagnosis="流感"),
        language="zh",
    )
    found = audit(zh, [reply(1, "我体温38.5度，已经三天了。我家的猫很可爱。")])
    assert found["patient_statements"] == 2 and found["patient_unsupported"] == 0.5
