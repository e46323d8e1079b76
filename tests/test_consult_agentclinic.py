"""Importing AgentClinic OSCE cases: the published file and odd shapes of the same format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.consult.cases.agentclinic import (
    convert_record,
    flatten,
    humanize,
    import_agentclinic,
    opening_request,
    read_agentclinic,
)
from engine.consult.cases.cases import CaseError, Fact, load_cases


def test_humanize_keeps_acronyms() -> None:
    assert humanize("Blood_Pressure") == "Blood pressure"
    assert humanize("Chest_CT") == "Chest CT"
    assert humanize("HEENT") == "HEENT"


def test_flatten_any_depth() -> None:
    data = {
        "Vital_Signs": {"Blood_Pressure": "120/80 mmHg", "Pulse": 72},
        "Imaging": {"MRI": {"Brain": {"Findings": ["lesion A", "lesion B"]}}},
        "Scans": [{"Name": "CT", "Result": "normal"}, {"Name": "US", "Result": None}],
        "Flag": True,
        "Nothing": "Information not provided.",
        "Empty": [],
    }
    assert flatten(data) == [
        Fact("Vital signs - Blood pressure", "120/80 mmHg"),
        Fact("Vital signs - Pulse", "72"),
        Fact("Imaging - MRI - Brain - Findings", "lesion A; lesion B"),
        Fact("Scans 1 - Name", "CT"),
        Fact("Scans 1 - Result", "normal"),
        Fact("Scans 2 - Name", "US"),
        Fact("Flag", "yes"),
    ]


def test_published_file(shared_data: Path, store) -> None:
    path = shared_data / "agentclinic" / "agentclinic_medqa.jsonl"
    if not path.is_file():
        pytest.skip("agentclinic_medqa.jsonl is not in ../shared/data")
    cases = read_agentclinic(path)
    assert len(cases) == 107
    first = cases[0]
    assert first.task.kind == "diagnosis" and first.task.diagnosis == "Myasthenia gravis"
    keys = dict((f.key, f.value) for f in first.facts)
    assert keys["Vital signs - Blood pressure"] == "125/80 mmHg"
    assert keys["Demographics"] == "35-year-old female"
    assert keys["Blood tests - Acetylcholine receptor antibodies"] == "Present (elevated)"
    assert "Difficulty climbing stairs" in keys["Symptoms - Secondary symptoms"]
    assert first.initial_request.startswith("Hello doctor, I've come in because of double vision")
    for case in cases:
        assert case.facts and case.task.diagnosis
        assert not any(f.key.startswith(("Patient actor", "Correct")) for f in case.facts)
        assert "Objective" not in " ".join(case.keys)
    # an infant's case is told by the parent
    baby = next(c for c in cases if "8-month-old" in " ".join(c.values))
    assert "my child" in baby.initial_request
    import_agentclinic(store, path, "ac")
    ds = store.dataset("ac")
    assert ds["activity"] == "consult" and ds["n_items"] == 107
    assert load_cases(store, "ac", limit=1)[0].id == "ac-001"


ODD = [
    # no wrapper, no physical examination, symptoms as a list, a nested test result
    {"Objective_for_Doctor": "Evaluate the patient presenting with chronic cough.",
     "Patient_Actor": {"Demographics": "60-year-old man", "Symptoms": ["cough", "weight loss"]},
     "Test_Results": {"Imaging": [{"Chest_XRay": {"Findings": {"Right": "mass", "Left": ""}}}]},
     "Correct_Diagnosis": "Lung cancer"},
    # only the objective to make the opening request from; an extra section; numbers, bools
    {"OSCE_Examination": {
        "Objective_for_Doctor": "Assess the patient presenting with dyspnea and a significant "
                                "medical history.",
        "Physical_Examination_Findings": {"Vital_Signs": {"Heart_Rate": 110, "Febrile": False}},
        "Family_History": "Father had a heart attack at 50",
        "Correct_Diagnosis": ["Heart failure"]}},
    # a newborn, nothing but the primary symptom
    {"OSCE_Examination": {"Patient_Actor": {"Demographics": "Newborn, female",
                          "Symptoms": {"Primary_Symptom": "Bilious vomiting"}},
                          "Correct_Diagnosis": "Malrotation with volvulus"}},
]  # fmt: skip


def write_jsonl(tmp_path: Path, records: list) -> Path:
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_odd_shapes_of_the_same_format(tmp_path: Path, store) -> None:
    cases = read_agentclinic(write_jsonl(tmp_path, ODD))
    assert [c.id for c in cases] == ["odd-001", "odd-002", "odd-003"]
    one, two, three = cases
    assert Fact("Symptoms", "cough; weight loss") in one.facts
    assert Fact("Imaging 1 - Chest XRay - Findings - Right", "mass") in one.facts
    assert all(f.value for f in one.facts)
    assert one.initial_request == (
        "Hello doctor, I've come in because of long-lasting cough. "
        "Can you help me find out what is wrong?"
    )
    assert Fact("Vital signs - Heart rate", "110") in two.facts
    assert Fact("Vital signs - Febrile", "no") in two.facts
    assert Fact("Family history", "Father had a heart attack at 50") in two.facts
    assert two.task.diagnosis == "Heart failure"
    assert "shortness of breath" in two.initial_request  # lay words for "dyspnea"
    assert "history" not in two.initial_request
    assert "my child" in three.initial_request and "bilious vomiting" in three.initial_request
    import_agentclinic(store, write_jsonl(tmp_path, ODD), "odd")
    assert store.dataset("odd")["n_items"] == 3


def test_records_without_diagnosis_or_information_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="record 2: missing 'Correct_Diagnosis'"):
        read_agentclinic(write_jsonl(tmp_path, [ODD[0], {"OSCE_Examination": {}}]))
    with pytest.raises(CaseError, match="no patient information"):
        convert_record({"Correct_Diagnosis": "Flu"}, "x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"OSCE_Examination": {}\n')
    with pytest.raises(CaseError, match="line 1: not valid JSON"):
        read_agentclinic(bad)


def test_opening_request_without_any_complaint() -> None:
    assert opening_request({}) == (
        "Hello doctor, I'm not feeling well. Can you help us find out what is wrong?"
    )
