"""CRAFT-MD's formats: the dialogue, the vignette (the case written out at once, no
consultation) and a summary of the dialogue the solver writes and answers from alone — what
the solver reads in each (scripted models: these tests are about the prompts), and each
format end to end with the real embedded model."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task, ensure_sample, get_case, save_cases
from engine.consult.doctor.final_task import vignette
from engine.consult.doctor.runner import run_consult
from engine.models.scripted import ScriptedModel

ROLES = {"patient": "patient", "solver": "solver", "limit": 1, "answer_method": "generate"}


def solver_replies(request) -> str:
    if "Write a summary" in request.prompt:
        return "A young man with right lower abdominal pain since yesterday and a fever."
    return "B"


@pytest.fixture
def models():
    return ScriptedModel("patient", replies="It hurts on the right, doctor."), ScriptedModel(
        "solver", replies=solver_replies
    )


def test_the_vignette_gives_the_whole_case_at_once_and_no_consultation(
    store, scripted_pool, models
):
    cases = ensure_sample(store)
    patient, solver = models
    summary = run_consult(
        store,
        cases,
        "oracle-direct",
        format="vignette",
        pool=scripted_pool(patient, solver),
        **ROLES,
    )
    assert summary["status"] == "finished" and summary["avg_turns"] == 0
    assert store.turns(summary["run_id"], "sample-01") == [] and patient.requests == []
    (asked,) = solver.requests
    case = get_case(store, cases, "sample-01")
    assert "Here is the case of a patient." in asked.prompt and case.initial_request in asked.prompt
    assert all(f.value.rstrip(".") in asked.prompt for f in case.facts)
    (answer,) = store.answers(summary["run_id"])
    assert answer["extra"]["vignette"] == "written from the facts"
    assert store.run(summary["run_id"])["settings"]["format"] == "vignette"


def test_a_converted_case_keeps_its_original_vignette():
    case = Case("c", [Fact("Age", "35")], "I see double", Task(diagnosis="myasthenia gravis"),
                meta={"information": "A 35-year-old woman has had double vision for a month."})  # fmt: skip
    assert vignette(case) == ("A 35-year-old woman has had double vision for a month.", "original")


def test_the_summary_is_written_then_answered_from_alone(store, scripted_pool, models):
    cases = ensure_sample(store)
    patient, solver = models
    summary = run_consult(
        store,
        cases,
        "oracle-direct",
        format="summary",
        max_turns=2,
        pool=scripted_pool(patient, solver),
        **ROLES,
    )
    assert summary["status"] == "finished" and summary["avg_turns"] > 0
    written, answered = solver.requests
    assert (
        "Write a summary" in written.prompt and "It hurts on the right, doctor." in written.prompt
    )
    assert "Here is a summary of your consultation" in answered.prompt
    assert "right lower abdominal pain" in answered.prompt
    assert "It hurts on the right, doctor." not in answered.prompt  # the summary alone
    (answer,) = store.answers(summary["run_id"])
    assert (
        answer["extra"]["summary"].startswith("A young man")
        and answer["extra"]["context"] == "summary"
    )


#: A case of two facts: the oracle asks every key, so the real model plays two turns (a
#: sample case has a dozen) before it summarises and answers.
SMALL = Case(
    "small-1",
    [Fact("Pain", "in the right lower abdomen since yesterday"), Fact("Temperature", "38.5 °C")],
    "Doctor, my belly hurts.",
    Task(question="Which is most likely?", options={"A": "Appendicitis", "B": "Reflux"},
         answer="A"),
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["vignette", "summary"])
def test_each_format_end_to_end_with_the_real_model(store, chat_model, fmt):
    save_cases(store, "small", [SMALL])
    roles = {"patient": "smollm2", "solver": "smollm2", "max_turns": 2}
    summary = run_consult(store, "small", "oracle-direct", format=fmt, **roles)
    assert summary["status"] == "finished" and summary["answered"] == 1
    assert summary["avg_turns"] == (2 if fmt == "summary" else 0)
    (answer,) = store.answers(summary["run_id"])
    assert answer["chosen"] in "AB" and answer["extra"]["context"] == fmt
    if fmt == "summary":
        assert answer["extra"]["summary"]
