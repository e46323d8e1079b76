"""The consultation paper's stopping rule: a doctor that repeats a question has asked one more
question (a turn, seen by the repetition measure); the repeat stop is a setting for small
models that loop."""

from __future__ import annotations

from engine.consult.cases.cases import ensure_sample
from engine.consult.settings import ConsultSettings
from engine.core.runs import run
from engine.models.scripted import ScriptedModel
from engine.reports.label import run_label

ASKED = ["How long have you had the pain?", "Do you have a fever?"]
# The doctor asks two questions, asks the first again, then concludes.
SCRIPT = [ASKED[0], ASKED[1], ASKED[0], "The most likely diagnosis is migraine."]
SETTINGS = {"doctor": "doctor", "patient": "patient", "solver": "solver", "limit": 1}


def _run(store, scripted_pool, **settings):
    pool = scripted_pool(
        ScriptedModel("doctor", replies=SCRIPT),
        ScriptedModel("patient", replies="For three days, doctor."),
        ScriptedModel("solver", replies="B"),
    )
    summary = run(store, "consult", ensure_sample(store), {**SETTINGS, **settings}, pool=pool)
    assert summary["status"] == "finished"
    (answer,) = store.answers(summary["run_id"])
    turns = store.turns(summary["run_id"], answer["item_key"])
    questions = [t for t in turns if t["role"] == "doctor" and t["extra"]["kind"] == "question"]
    return summary, answer, questions, turns


def test_a_repeated_question_counts_as_a_turn_by_default(store, scripted_pool) -> None:
    assert ConsultSettings().stop_on_repeat is False  # the paper's rule is the default
    summary, answer, questions, turns = _run(store, scripted_pool)
    assert [q["text"] for q in questions] == [ASKED[0], ASKED[1], ASKED[0]]
    assert questions[2]["extra"].get("repeat") is True and "repeat" not in questions[0]["extra"]
    assert answer["scores"]["turns"] == 3 and summary["avg_turns"] == 3
    conclusion = [t for t in turns if t["extra"].get("kind") == "conclusion"]
    assert conclusion[0]["extra"]["reason"] == "conclusion"
    # The repetition measure sees the repeat: a pair of identical questions scores 1.
    repeated = answer["scores"]["diversity_rougeL"]
    _, without, _, _ = _run(store, scripted_pool, stop_on_repeat=True)
    assert repeated > without["scores"]["diversity_rougeL"]
    assert "repeat" not in run_label(store.run(summary["run_id"]))


def test_with_the_setting_on_a_repeat_ends_the_consultation(store, scripted_pool) -> None:
    summary, answer, questions, turns = _run(store, scripted_pool, stop_on_repeat=True)
    assert [q["text"] for q in questions] == ASKED
    assert answer["scores"]["turns"] == 2
    conclusion = [t for t in turns if t["extra"].get("kind") == "conclusion"]
    assert conclusion[0]["extra"]["reason"] == "repeat"
    assert store.run(summary["run_id"])["settings"]["stop_on_repeat"] is True
    assert "stops on a repeat" in run_label(store.run(summary["run_id"]))
