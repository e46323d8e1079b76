"""The scripted check of the grounded patient: a scripted patient model that states wrong
facts (the wrong sex, age and duration, a denied fever, a symptom the patient denies) — every
reply shown contradicts no fact of the case; a reply is asked again once, then replaced by
the fact's own words in the patient's voice; a question that asks two things gets both; a
fact is marked told only when a reply stated it; the patient audit of a person's chat."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import Case, Fact, Task, save_cases
from engine.consult.doctor.dialogue import Consultation
from engine.consult.doctor.person import finish_person_consultation, start_person_consultation
from engine.consult.patient.contradict import contradictions
from engine.consult.patient.simulated import RETRY_TEMPERATURE, Patient
from engine.consult.scoring.audit import audit_lines, person_audit
from engine.consult.scoring.metrics import uncovered_facts
from engine.models.scripted import Request, ScriptedModel

CASE = Case(
    "dv",
    [
        Fact("Demographics", "35-year-old female"),
        Fact("History", "The patient reports a 1-month history of double vision."),
        Fact("Review of systems", "Patient denies chest pain or cough."),
        Fact("Vital signs - Temperature", "38.9°C (102°F)"),
        Fact("Social history", "Non-smoker, drinks wine occasionally."),
    ],
    "Hello doctor, I've come in because of double vision.",
    Task(diagnosis="Myasthenia gravis"),
)
#: What a patient model that gets every fact wrong says to each question.
WRONG = {
    "How old are you?": "I'm a 35-year-old male.",
    "When did the double vision start?": "It started two weeks ago.",
    "Do you have a fever?": "No fever at all, my temperature is fine.",
    "Any chest pain?": "Yes, I have chest pain and a cough.",
    "Do you smoke?": "Yes, I smoke a pack a day.",
}


def asked(request: Request) -> str:
    return str(request.messages[-1]["content"])


def wrong(request: Request) -> str:
    return WRONG.get(asked(request), "I'm 53 years old.")


def test_grounded_patient_contradicts_no_fact_scripted_check():
    """The scripted check: the model states a wrong fact every time, twice; no reply shown
    contradicts a fact, each says the fact's own words, and the contradictions caught are
    kept with the turn."""
    model = ScriptedModel("patient", replies=wrong)
    c = Consultation(CASE, model, match="bm25", max_turns=len(WRONG) + 1)
    c.start()
    questions = [*WRONG, "How old are you and when did the double vision start?"]
    for question in questions:
        turn = c.ask(question)
        assert contradictions(turn["text"], CASE.facts, "en", question) == [], turn["text"]
        assert turn["extra"]["source"] == "guard", turn["text"]
    caught = [t["extra"].get("caught") for t in c.turns if t["role"] == "patient"]
    # the others state no fact given to the patient: the older guard reads the facts out
    assert [c[0]["kind"] for c in caught if c] == ["sex", "negation", "sex"]
    said = {t["text"] for t in c.turns if t["role"] == "patient"}
    assert "I'm a 35-year-old female." in said
    assert "I haven't had chest pain or cough." in said
    assert "I don't smoke. I drink wine occasionally." in said
    assert "My temperature is 38.9°C (102°F)." in said
    # every wrong reply was asked again once, at the next seed and sampled
    seeds = [(r.options.get("seed"), r.options.get("temperature")) for r in model.requests]
    assert seeds[:2] == [(0, 0.0), (1, RETRY_TEMPERATURE)]


def test_the_second_try_is_kept_when_it_contradicts_nothing():
    model = ScriptedModel("patient", replies=["I'm a 35-year-old man.", "I'm 35 years old."])
    reply = Patient(CASE, model, match="bm25").reply("How old are you?")
    assert reply.text == "I'm 35 years old." and reply.source == "retry"
    assert [c["kind"] for c in reply.caught] == ["sex"]


def test_without_the_check_the_wrong_facts_are_shown():
    """What the check changes: the patient as it was shows the wrong sex and the chest pain
    the patient denies (both pass the older guard)."""
    model = ScriptedModel("patient", replies=wrong)
    patient = Patient(CASE, model, match="bm25", check_facts=False)
    shown = [patient.reply(q).text for q in ("How old are you?", "Any chest pain?")]
    assert shown == ["I'm a 35-year-old male.", "Yes, I have chest pain and a cough."]
    assert all(contradictions(s, CASE.facts) for s in shown)


def test_a_question_that_asks_two_things_gets_both():
    right = {
        "How old are you?": "I'm 35 years old.",
        "When did the double vision start?": "The double vision started a month ago.",
    }
    model = ScriptedModel("patient", replies=lambda r: right.get(asked(r), "Hmm."))
    reply = Patient(CASE, model, match="bm25").reply(
        "How old are you and when did the double vision start?"
    )
    assert reply.text == "I'm 35 years old. The double vision started a month ago."
    assert [p["question"] for p in reply.parts] == list(right)
    assert {m.key for m in reply.facts} >= {"Demographics", "History"}
    # a part the model cannot answer is the fact's own words
    model = ScriptedModel("patient", replies=lambda r: right.get(asked(r), "Hmm."))
    reply = Patient(CASE, model, match="bm25").reply("How old are you? Do you smoke?")
    assert reply.text == "I'm 35 years old. I don't smoke. I drink wine occasionally."


def test_a_streamed_grounded_reply_shows_only_the_checked_text():
    model = ScriptedModel("patient", replies=wrong)
    c = Consultation(CASE, model, match="bm25")
    c.start()
    stream = c.ask_stream("How old are you?")
    assert list(stream) == ["I'm a 35-year-old female."]  # never "male", not even a piece
    assert stream.turn is not None and stream.turn["text"] == "I'm a 35-year-old female."


def test_a_fact_is_told_only_when_a_reply_states_it():
    """The paper's patient is not checked: its "35-year-old male" states the age but
    contradicts the fact, which is then not marked told."""
    model = ScriptedModel(
        "patient", replies=["I'm a 35-year-old male.", "I'm a 35-year-old woman."]
    )
    c = Consultation(CASE, model, match="bm25", patient_mode="paper")
    c.start()
    first = c.ask("How old are you?")
    assert first["extra"]["contradicted"] == [0] and first["extra"]["revealed"] == []
    assert uncovered_facts(CASE, c.turns) == []
    c.ask("How old are you, really?")
    assert [f["key"] for f in uncovered_facts(CASE, c.turns)] == ["Demographics"]


def test_a_persons_chat_is_audited(store):
    save_cases(store, "dv", [CASE])
    model = ScriptedModel("patient", replies=["I'm a 35-year-old male.", "Hmm, I'm 53."])
    c = start_person_consultation(store, "dv", CASE, model, max_turns=3)
    c.patient.check_facts = False  # the patient as it was: its wrong words are audited
    c.ask("How old are you?")
    result = finish_person_consultation(c, "myasthenia gravis")
    assert result.metrics["patient_replies"] == 1  # the run's audit scorer ran
    found = person_audit(CASE, result.turns)
    assert found["patient_contradicting"] == 1.0
    lines = audit_lines(found)
    assert lines[0] == "Replies contradicting a fact of the case: 1 of 1 (100%)"
    assert "“male” against Demographics: 35-year-old female" in "\n".join(lines)


def test_consult_chat_shows_the_audit(db_path: str, home: Path) -> None:
    (home / "models.json").write_text(
        json.dumps({"patient": {"backend": "scripted", "replies": "I'm a 22-year-old woman."}})
    )
    typed = "How old are you?\n/done\nb\n"
    result = CliRunner().invoke(
        cli,
        ["--db", db_path, "consult", "chat", "--case", "sample-01", "--patient", "patient"],
        input=typed,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "Patient: I'm 22 years old." in result.output  # "woman" for a man: replaced
    assert "The patient audited:" in result.output
    assert "Replies contradicting a fact of the case: 0 of 1 (0%)" in result.output
    assert "Replies checked before they were shown: 1 the case's own words" in result.output


def test_the_audit_counts_the_facts_own_words_in_the_patients_voice_as_supported():
    """What the grounded patient reads out ("I don't smoke.") matches its fact
    ("Non-smoker") in the audit's word overlap."""
    from engine.consult.scoring.audit import audit

    said = Patient(CASE, None, match="bm25").read_out(Patient(CASE, None).facts_for("Smoking?"))
    assert said == "I don't smoke. I drink wine occasionally."
    turns = [{"role": "patient", "turn": 1, "text": said, "extra": {"kind": "reply"}}]
    assert audit(CASE, turns)["patient_unsupported"] == 0.0
    # one part's "I don't know" in a two-part reply states nothing either
    turns[0]["text"] = f"{said} {Patient(CASE, None).unknown()}"
    assert audit(CASE, turns)["patient_unsupported"] == 0.0
