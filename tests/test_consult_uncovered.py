"""The facts a consultation uncovered, shown beside word-overlap metrics named as such."""

from __future__ import annotations

from engine.activities import metric_label
from engine.consult.cases.cases import read_cases, sample_path
from engine.consult.scoring.metrics import consultation_metrics, uncovered_facts


def test_the_doctor_metric_says_it_measures_words_not_coverage():
    for key in ("doctor_recall", "doctor_precision", "doctor_f1", "patient_recall"):
        label = metric_label(key, "consult")
        assert "ROUGE-1" in label and "word overlap" in label and "cover" not in label.lower()


def test_uncovered_facts_are_the_revealed_ones_in_the_order_they_came_out():
    case = read_cases(sample_path())[0]
    facts = case.facts
    assert len(facts) >= 3
    turns = [
        {"role": "doctor", "turn": 1, "text": f"Tell me about {facts[2].key}?", "extra": {}},
        {
            "role": "patient",
            "turn": 1,
            "text": facts[2].value,
            "extra": {"kind": "reply", "facts": [{"index": 2}], "revealed": [2], "leaked": []},
        },
        {"role": "doctor", "turn": 2, "text": "Anything else?", "extra": {}},
        {
            "role": "patient",
            "turn": 2,
            "text": f"{facts[0].value}; {facts[1].value}",
            "extra": {"kind": "reply", "facts": [{"index": 1}], "revealed": [1, 0], "leaked": [0]},
        },
    ]
    found = uncovered_facts(case, turns)
    assert [(f["index"], f["turn"], f["leaked"]) for f in found] == [
        (2, 1, False),
        (0, 2, True),
        (1, 2, False),
    ]
    assert found[0] == {
        "index": 2,
        "key": facts[2].key,
        "value": facts[2].value,
        "turn": 1,
        "leaked": False,
    }
    assert consultation_metrics(case, turns)["revealed"] == len(found)
    assert uncovered_facts(case, turns[:1]) == []
