"""Every AgentClinic case format: MedQA and MedQA-extended (OSCE) and NEJM, with records
written here in the published shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.agentclinic import (
    FORMAT_NAMES,
    convert_nejm,
    detect_format,
    import_agentclinic,
    nejm_facts,
    read_agentclinic_file,
)
from engine.consult.cases.cases import CaseError, load_cases

NEJM = {
    "question": "What is the most likely diagnosis?",
    "image_url": "https://example.org/images/rash-1.jpg",
    "answers": [
        {"text": "Erythema migrans", "correct": False},
        {"text": "Tinea corporis", "correct": True},
        {"text": "Psoriasis", "correct": False},
        {"text": "Nummular eczema", "correct": False},
    ],
    "patient_info": "A 32-year-old man presented with an itchy, ring-shaped rash on his arm of "
    "3 weeks' duration. He works on a farm with cattle. He had no fever. A potassium hydroxide "
    "preparation of skin scrapings showed fungal hyphae.",
    "physical_exams": "Examination showed an annular plaque with a raised, scaly border. "
    "The temperature was 36.8 °C.",
}

OSCE = {
    "OSCE_Examination": {
        "Objective_for_Doctor": "Assess and diagnose the patient presenting with chest pain.",
        "Patient_Actor": {
            "Demographics": "58-year-old man",
            "History": "Crushing chest pain for one hour.",
            "Symptoms": {"Primary_Symptom": "Chest pain", "Secondary_Symptoms": ["Sweating"]},
        },
        "Physical_Examination_Findings": {"Vital_Signs": {"Heart_Rate": "104 bpm"}},
        "Test_Results": {"ECG": {"Findings": "ST elevation in II, III, aVF"}},
        "Correct_Diagnosis": "Inferior myocardial infarction",
    }
}


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    return path


def test_formats_are_recognised_from_the_records() -> None:
    assert detect_format(OSCE, "agentclinic_medqa.jsonl") == "medqa"
    assert detect_format(OSCE, "agentclinic_medqa_extended.jsonl") == "medqa-extended"
    assert detect_format(OSCE, "agentclinic_mimiciv.jsonl") == "mimic"
    assert detect_format(NEJM, "cases.jsonl") == "nejm"
    assert detect_format(NEJM, "agentclinic_nejm_extended.jsonl") == "nejm-extended"
    with pytest.raises(CaseError, match="not an AgentClinic record"):
        detect_format({"question": "?"})
    assert set(FORMAT_NAMES) == {"medqa", "medqa-extended", "mimic", "nejm", "nejm-extended"}


def test_nejm_text_becomes_facts_by_sentence() -> None:
    facts = nejm_facts(NEJM["patient_info"], NEJM["physical_exams"])
    assert [f.key for f in facts] == [
        "History",
        "History",
        "History",
        "Test results",
        "Examination",
        "Examination",
    ]
    assert facts[1].value == "He works on a farm with cattle."
    assert facts[3].value.startswith("A potassium hydroxide preparation")


def test_nejm_answers_become_an_mcq_and_the_image_stays_a_reference() -> None:
    case = convert_nejm(NEJM, "nejm-001")
    assert case.task.kind == "mcq" and case.task.answer == "B"
    assert case.task.options["B"] == "Tinea corporis" and len(case.task.options) == 4
    assert case.meta == {"image_url": "https://example.org/images/rash-1.jpg"}
    assert case.initial_request.startswith("Hello doctor, I've come in because of an itchy")
    assert "on my arm" in case.initial_request  # first person
    with pytest.raises(CaseError, match="no answer is marked"):
        convert_nejm({**NEJM, "answers": [{"text": "a"}, {"text": "b"}]}, "x", 3)
    with pytest.raises(CaseError, match="record 2: no patient information"):
        convert_nejm({**NEJM, "patient_info": "", "physical_exams": ""}, "x", 2)


def test_medqa_extended_and_nejm_files_import(store, tmp_path: Path) -> None:
    ext = _jsonl(tmp_path / "agentclinic_medqa_extended.jsonl", [OSCE, OSCE])
    cases, found = read_agentclinic_file(ext)
    assert found == "medqa-extended" and len(cases) == 2
    assert cases[0].task.diagnosis == "Inferior myocardial infarction"
    nejm = _jsonl(tmp_path / "agentclinic_nejm.jsonl", [NEJM])
    import_agentclinic(store, nejm, "nejm")
    (case,) = load_cases(store, "nejm")
    assert case.id == "nejm-001" and case.task.answer == "B"
    assert store.dataset("nejm")["meta"]["agentclinic_format"] == "nejm"


def test_the_cli_says_which_format_it_found(db_path: str, tmp_path: Path) -> None:
    runner = CliRunner()
    nejm = _jsonl(tmp_path / "agentclinic_nejm.jsonl", [NEJM, NEJM])
    out = runner.invoke(cli, ["--db", db_path, "import", "agentclinic", str(nejm)])
    assert out.exit_code == 0, out.output
    assert "imported 2 cases (AgentClinic NEJM) as 'agentclinic_nejm'" in out.output
    ext = _jsonl(tmp_path / "agentclinic_medqa_extended.jsonl", [OSCE])
    out = runner.invoke(cli, ["--db", db_path, "import", "agentclinic", str(ext)])
    assert "(AgentClinic MedQA-extended (OSCE))" in out.output


def test_the_published_medqa_file(store, shared_data: Path) -> None:
    path = shared_data / "agentclinic" / "agentclinic_medqa.jsonl"
    if not path.is_file():
        pytest.skip("agentclinic_medqa.jsonl is not in ../shared/data")
    cases, found = read_agentclinic_file(path)
    assert found == "medqa" and len(cases) == 107
