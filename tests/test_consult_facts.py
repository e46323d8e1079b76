"""Selecting the facts a doctor's question asks about (what the patient is given)."""

from __future__ import annotations

from engine.consult.cases.cases import Fact
from engine.consult.patient.facts import FactSelector

FACTS = [
    Fact("Demographics", "35-year-old female"),
    Fact("Social history", "Non-smoker, drinks wine occasionally"),
    Fact("Vital signs - Temperature", "38.6 °C"),
    Fact("Vital signs - Heart rate", "72 bpm"),
    Fact("Vital signs - Respiratory rate", "16 breaths/min"),
    Fact("Symptoms - Primary symptom", "Double vision"),
    Fact("Symptoms - Secondary symptoms", "Difficulty climbing stairs"),
    Fact("Blood tests - Acetylcholine receptor antibodies", "Present (elevated)"),
]


def keys(selector: FactSelector, question: str) -> list[str]:
    return [m.key for m in selector.select(question)]


def test_bm25_matches_keys_and_values() -> None:
    s = FactSelector(FACTS, method="bm25")
    assert keys(s, "How old are you?") == ["Demographics"]
    assert keys(s, "Do you smoke or drink alcohol?") == ["Social history"]
    assert keys(s, "Can you tell me about vital signs - heart rate?") == [
        "Vital signs - Heart rate"
    ]
    assert set(keys(s, "Tell me about your symptoms.")) == {
        "Symptoms - Primary symptom",
        "Symptoms - Secondary symptoms",
    }
    assert keys(s, "Have you had any blood tests?") == [
        "Blood tests - Acetylcholine receptor antibodies"
    ]


def test_nothing_matches_an_unrelated_question() -> None:
    s = FactSelector(FACTS, method="bm25")
    assert s.select("Do you have any allergies?") == []
    assert s.select("Hello!") == []


def test_match_records_its_scores() -> None:
    (m,) = FactSelector(FACTS, method="bm25").select("What is your heart rate?")
    assert (m.index, m.key, m.value) == (3, "Vital signs - Heart rate", "72 bpm")
    assert m.bm25 > 1.0 and m.cosine is None
    assert m.to_dict()["index"] == 3


def test_at_most_k_facts() -> None:
    s = FactSelector(FACTS, method="bm25", k=1, relative=0.1)
    assert len(s.select("vital signs")) == 1


def test_embeddings_bridge_different_words() -> None:
    s = FactSelector(FACTS)  # English: hybrid by default
    assert s.method == "hybrid"
    assert keys(s, "Do you have a fever?") == ["Vital signs - Temperature"]
    assert keys(s, "Do you have any allergies?") == []


def test_other_languages_use_bm25() -> None:
    facts = [Fact("Tabac", "fume dix cigarettes par jour"), Fact("Âge", "52 ans")]
    s = FactSelector(facts, language="fr")
    assert s.method == "bm25"
    assert keys(s, "Fumez-vous des cigarettes ?") == ["Tabac"]
    zh = FactSelector([Fact("年龄", "45岁"), Fact("吸烟史", "每天吸烟十支")], language="zh")
    assert keys(zh, "您吸烟吗？") == ["吸烟史"]
