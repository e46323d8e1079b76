"""The contradiction check of a patient's reply against its case's facts
(:mod:`engine.consult.patient.contradict`), on crafted replies; and a fact said in the patient's own
voice (:mod:`engine.consult.patient.voice`), what replaces a reply that contradicts one."""

from __future__ import annotations

import pytest

from engine.consult.cases.cases import Fact
from engine.consult.patient.contradict import case_sex, contradicted, contradictions
from engine.consult.patient.voice import in_first_person

FACTS = [
    Fact("Demographics", "35-year-old female"),
    Fact("History", "The patient reports a 1-month history of double vision."),
    Fact("Social history", "Non-smoker, drinks wine occasionally."),
    Fact("Review of systems", "Patient denies chest pain, palpitations or cough."),
    Fact("Vital signs - Temperature", "38.9°C (102°F)"),
    Fact("Vital signs - Blood pressure", "125/80 mmHg"),
    Fact("Medications", "Metformin 500 mg twice a day"),
]


def kinds(reply: str, question: str = "") -> list[str]:
    return [c.kind for c in contradictions(reply, FACTS, "en", question)]


def test_contradict_sex_of_a_female_case():
    assert case_sex(FACTS) == ("female", 0)
    assert kinds("I'm a 35-year-old male.") == ["sex"]
    assert kinds("I'm 35 years old. I'm a 35-year-old male.") == ["sex"]
    assert kinds("I'm a 35-year-old woman.") == []
    # someone else's sex is not the patient's
    assert kinds("A man at work had the same thing.") == []


def test_contradict_numbers_age_duration_measures():
    assert kinds("I'm 53.") == ["age"]
    assert kinds("I'm 35 and it started a month ago.") == []
    assert kinds("I've had double vision for 2 weeks.") == ["duration"]
    assert kinds("About four weeks now.") == []  # 28 days is a month, near enough
    assert kinds("My temperature was 37.2°C.") == ["temperature"]
    assert kinds("It was 102°F.") == []
    assert kinds("My blood pressure is 140/90 mmHg.") == ["pressure"]
    assert kinds("I take 850 mg of metformin.") == ["dose"]
    assert kinds("I take metformin twice a day.") == []  # a frequency, not a duration


def test_contradict_negations_both_ways():
    # the temperature of 38.9 °C is a fever
    assert kinds("No fever at all.") == ["negation"]
    assert kinds("No.", "Do you have a fever?") == ["negation"]
    assert kinds("Yes, I've been feverish.") == []
    # the patient denies chest pain
    assert kinds("I have chest pain when I climb stairs.") == ["negation"]
    assert kinds("Yes.", "Any chest pain?") == ["negation"]
    assert kinds("No, no chest pain.", "Any chest pain?") == []
    assert kinds("I smoke a pack a day.") == ["negation"]
    assert kinds("I don't smoke, but I drink wine occasionally.") == []
    # doubt is not denial, inability is not denial
    assert kinds("I'm not sure about my blood pressure.") == []
    assert contradicted("I don't have double vision.", FACTS) == {1}


def test_contradict_leaves_words_both_stated_and_denied_alone():
    facts = [Fact("History", "Abdominal pain for 3 days"), Fact("ROS", "Denies chest pain")]
    assert contradictions("No pain.", facts) == []  # "pain" is both: left alone
    assert [c.key for c in contradictions("I have chest pain.", facts)] == ["ROS"]
    assert contradictions("", facts) == [] and contradictions("I'm 53.", []) == []


@pytest.mark.parametrize(
    ("fact", "opening", "said"),
    [
        (Fact("Demographics", "35-year-old female"), "", "I'm a 35-year-old female."),
        (Fact("Age", "22 years old"), "", "I'm 22 years old."),
        (Fact("Demographics", "9-month-old infant"), "I've brought my child in", "My child is a 9-month-old infant."),
        (Fact("Review of systems", "Patient denies experiencing any chest pain."), "", "I haven't had any chest pain."),
        (Fact("Social history", "Non-smoker, drinks wine occasionally. Works as a designer."), "",
         "I don't smoke. I drink wine occasionally. I work as a designer."),
        (Fact("History", "She notes that her symptoms worsen after activity."), "",
         "I notice that my symptoms worsen after activity."),
        (Fact("Vital signs - Heart rate", "72 bpm"), "", "My heart rate is 72 bpm."),
        (Fact("Past medical history", "No significant past medical history."), "",
         "I have no significant past medical history."),
    ],
)  # fmt: skip
def test_a_fact_in_the_patients_voice(fact, opening, said):
    assert in_first_person(fact, opening) == said
    assert not contradicted(said, [fact])  # the patient's words still agree with the fact


def test_no_read_out_fact_contradicts_its_agentclinic_case(shared_data):
    """Every fact of the 107 AgentClinic MedQA cases, said in the patient's voice as the
    grounded patient reads it out, contradicts no fact of its case (the check has no false
    alarm on what replaces a reply)."""
    from engine.consult.cases.agentclinic import read_agentclinic
    from engine.consult.patient.facts import Match
    from engine.consult.patient.simulated import Patient

    path = shared_data / "agentclinic" / "agentclinic_medqa.jsonl"
    if not path.is_file():
        pytest.skip("the AgentClinic MedQA file is not in the shared data")
    wrong = []
    for case in read_agentclinic(path):
        patient = Patient(case, None, match="bm25")
        for i, f in enumerate(case.facts):
            said = patient.read_out([Match(i, f.key, f.value, 1.0, 1.0, None)])
            if contradictions(said, case.facts, case.language):
                wrong.append((case.id, said))
    assert wrong == []
