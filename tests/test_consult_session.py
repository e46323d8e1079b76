"""A consultation turn by turn with the real embedded model as the patient (and solver)."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Case, Fact, Task, ensure_sample, get_case
from engine.consult.doctor.dialogue import Consultation, ConsultationError
from engine.consult.doctor.final_task import Solver
from engine.consult.doctor.person import finish_person_consultation, start_person_consultation
from engine.consult.patient.simulated import Patient
from engine.consult.text import UNKNOWN_PHRASES

pytestmark = pytest.mark.slow


@pytest.fixture
def case(store) -> Case:
    return get_case(store, ensure_sample(store), "sample-01")


def test_person_consultation_is_stored_turn_by_turn(store, case, chat_model) -> None:
    c = start_person_consultation(store, "cases-sample", case, chat_model, max_turns=2)
    run_id = c.run_id
    assert c.turns[0]["text"] == case.initial_request
    reply = c.ask("What is your age?")
    assert reply["role"] == "patient" and reply["turn"] == 1 and reply["text"]
    given = reply["extra"]["facts"]
    assert [f["key"] for f in given] == ["Age"]
    assert reply["extra"]["source"] in ("model", "guard")
    assert reply["extra"]["asked"] == [0]
    unknown = c.ask("Do you have any allergies?")
    assert unknown["text"] == UNKNOWN_PHRASES["en"] and unknown["extra"]["facts"] == []
    assert c.questions_left == 0
    with pytest.raises(ConsultationError, match="no questions left"):
        c.ask("Anything else?")
    result = finish_person_consultation(c, "b")
    assert result.correct and result.task.chosen == "B"
    assert result.metrics["turns"] == 2
    stored = store.turns(run_id, case.id)
    assert [(t["turn"], t["role"]) for t in stored] == [
        (0, "patient"), (1, "doctor"), (1, "patient"), (2, "doctor"), (2, "patient"),
    ]  # fmt: skip
    assert stored[2]["extra"]["facts"][0]["value"] == "22 years old"
    (answer,) = store.answers(run_id)
    assert answer["chosen"] == "B" and answer["correct"] == 1
    assert answer["scores"]["doctor_recall"] > 0
    with pytest.raises(ConsultationError, match="already finished"):
        c.finish("A")


def test_streamed_reply_is_recorded_when_done(case, chat_model) -> None:
    c = Consultation(case, chat_model, max_turns=3)
    c.start()
    stream = c.ask_stream("What is your temperature?")
    pieces = list(stream)
    assert pieces and stream.turn is not None
    assert stream.turn["extra"]["facts"][0]["key"] == "Vital signs - Temperature"
    result = stream.stream.result
    assert result.source == "guard" or "".join(pieces).strip().startswith(result.text[:10])
    assert [t["role"] for t in c.turns] == ["patient", "doctor", "patient"]


def test_the_solver_answers_when_no_answer_is_given(case, chat_model) -> None:
    c = Consultation(case, chat_model, solver=Solver(chat_model))
    c.start()
    result = c.finish()
    assert result.task.chosen in "ABCDE" and set(result.task.extra["logprobs"]) == set("ABCDE")
    assert result.metrics["turns"] == 0 and result.metrics["patient_f1"] == 0.0


def test_misuse_is_refused(case, chat_model) -> None:
    c = Consultation(case, chat_model)
    with pytest.raises(ConsultationError, match="start"):
        c.ask("Hello?")
    c.start()
    with pytest.raises(ConsultationError, match="empty question"):
        c.ask("  ")
    with pytest.raises(ConsultationError, match="no solver"):
        c.finish()


def test_patient_guard_keeps_grounded_replies_only(chat_model) -> None:
    case = Case("g", [Fact("Temperature", "38.5 °C"), Fact("Smoking", "never smoked")],
                "I feel hot.", Task(diagnosis="Flu"))  # fmt: skip
    patient = Patient(case, chat_model)
    facts = patient.facts_for("Do you smoke?")
    assert [m.key for m in facts] == ["Smoking"]
    assert patient.check("No, I have never smoked.", "Do you smoke?", facts)
    # a sentence cut off by the token limit is dropped; repeats are said once
    said = patient.check("I never smoked. I never smoked. I have never smoked and", "?", facts)
    assert said == "I never smoked."
    # a number nobody gave it, a reply about something else, an empty reply
    assert patient.check("I never smoked, only 20 a day.", "Do you smoke?", facts) is None
    assert patient.check("As a patient I am not a doctor.", "Do you smoke?", facts) is None
    assert patient.check("", "Do you smoke?", facts) is None
    assert patient.read_out(facts) == "Never smoked."


def test_unknown_phrase_follows_the_case_language(chat_model) -> None:
    case = Case("f", [Fact("Tabac", "fume dix cigarettes par jour")], "J'ai mal.",
                Task(diagnosis="Grippe"), language="fr")  # fmt: skip
    reply = Patient(case, chat_model).reply("Avez-vous des allergies ?")
    assert reply.text == UNKNOWN_PHRASES["fr"] and reply.source == "unknown"
