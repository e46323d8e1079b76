"""``medexam import agentclinic|cases`` and ``medexam consult …`` through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.doctor.runner import run_consult
from engine.consult.scoring.metrics import SUMMARY_KEYS
from engine.models.scripted import ScriptedModel
from engine.store.store import Store

CASE = {
    "id": "c1",
    "facts": [{"key": "Age", "value": "40 years"}, {"key": "Smoking", "value": "never"}],
    "initial_request": "Doctor, my chest hurts.",
    "task": {"question": "Most likely?", "options": ["Angina", "Reflux"], "answer": "B"},
}
OSCE = {"OSCE_Examination": {
    "Patient_Actor": {"Demographics": "50-year-old man",
                      "Symptoms": {"Primary_Symptom": "Chest pain",
                                   "Secondary_Symptoms": ["Sweating"]}},
    "Test_Results": {"ECG": {"Findings": "ST elevation in II, III, aVF"}},
    "Correct_Diagnosis": "Inferior myocardial infarction"}}  # fmt: skip


def invoke(db: str, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", db, *args], input=input, catch_exceptions=False)


def last_json(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_cases(db_path: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([CASE, {**CASE, "id": "c2"}]))
    result = invoke(db_path, "import", "cases", str(path))
    assert result.exit_code == 0 and "imported 2 cases as 'mine'" in result.output
    result = invoke(db_path, "import", "cases", str(path), "--name", "again", "--json")
    assert json.loads(result.stdout)["activity"] == "consult"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([CASE, {**CASE, "id": "c3", "facts": []}]))
    result = invoke(db_path, "import", "cases", str(bad))
    assert result.exit_code == 1
    assert "record 2: 'facts' must be a non-empty list" in result.output
    result = invoke(db_path, "consult", "cases", "--cases", "mine")
    assert result.output.splitlines()[0].startswith("c1") and "mcq" in result.output


def test_import_agentclinic(db_path: str, tmp_path: Path) -> None:
    path = tmp_path / "osce.jsonl"
    path.write_text(json.dumps(OSCE) + "\n" + json.dumps(OSCE) + "\n")
    result = invoke(db_path, "import", "agentclinic", str(path), "--name", "ac")
    assert (
        result.exit_code == 0
        and "imported 2 cases (AgentClinic MedQA (OSCE)) as 'ac'" in result.output
    )
    result = invoke(db_path, "consult", "cases", "--cases", "ac", "--json")
    first = json.loads(result.stdout)[0]
    assert first["id"] == "ac-001" and first["task"] == {
        "diagnosis": "Inferior myocardial infarction",
        "question": "What is the most likely diagnosis?",
    }
    assert {"key": "ECG - Findings", "value": "ST elevation in II, III, aVF"} in first["facts"]
    path.write_text(json.dumps({"OSCE_Examination": {"Patient_Actor": {}}}) + "\n")
    result = invoke(db_path, "import", "agentclinic", str(path), "--name", "bad")
    assert result.exit_code == 1 and "record 1: missing 'Correct_Diagnosis'" in result.output


def test_import_the_published_agentclinic_file(db_path: str, shared_data: Path) -> None:
    path = shared_data / "agentclinic" / "agentclinic_medqa.jsonl"
    if not path.is_file():
        pytest.skip("agentclinic_medqa.jsonl is not in ../shared/data")
    result = invoke(db_path, "import", "agentclinic", str(path))
    assert result.exit_code == 0 and "imported 107 cases" in result.output


@pytest.mark.slow
def test_run_a_model_doctor_then_show_it(db_path: str) -> None:
    result = invoke(db_path, "consult", "run", "--doctor", "model", "--limit", "1",
                    "--max-turns", "1", "--doctor-max-tokens", "48", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = last_json(result)
    for key in SUMMARY_KEYS:
        assert key in summary
    assert summary["n"] == 1 and summary["status"] == "finished"
    run = Store(db_path).run(summary["run_id"])
    assert run["dataset"] == "cases-sample" and run["settings"]["max_turns"] == 1
    assert run["settings"]["doctor_max_tokens"] == 48
    shown = invoke(db_path, "consult", "show", str(summary["run_id"]))
    assert "== sample-01" in shown.output and "fraction  patient_f1" in shown.output
    detail = json.loads(invoke(db_path, "consult", "show", str(summary["run_id"]), "--json").stdout)
    assert len(detail["consultations"]) == 1 and detail["turn_analysis"][-1]["fraction"] == 1.0


@pytest.mark.slow
def test_run_a_baseline_in_plain_text(db_path: str) -> None:
    result = invoke(db_path, "consult", "run", "--doctor", "lower", "--limit", "1")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(re.fullmatch(r"Accuracy \(%\) +\d+\.\d", line) for line in lines)
    assert any(re.fullmatch(r"Question diversity \(%\) +—", line) for line in lines)
    assert "patient_recall" not in result.output.split("{")[0]  # labels, not raw keys
    assert last_json(result)["avg_turns"] == 0.0
    assert invoke(db_path, "consult", "run", "--cases", "nope").exit_code == 1


@pytest.mark.slow
def test_chat_as_the_doctor(db_path: str) -> None:
    typed = "What is your age?\nDo you have allergies?\n/done\nb\n"
    result = invoke(db_path, "consult", "chat", "--case", "sample-01", input=typed)
    assert result.exit_code == 0, result.output
    assert "Patient: Hi doctor, my stomach has been hurting" in result.output
    assert "I'm not sure about that" in result.output
    assert "Which of the following is the most likely diagnosis?" in result.output
    assert "correct: the answer is B" in result.output
    metrics = last_json(result)
    assert metrics["turns"] == 2 and metrics["correct"] is True
    store = Store(db_path)
    run = store.run(metrics["run_id"])
    assert run["runner"] == "person" and run["model"] == "person"
    assert run["status"] == "finished" and run["summary"]["accuracy"] == 100.0
    assert len(store.turns(metrics["run_id"], "sample-01")) == 5


@pytest.mark.slow
def test_chat_stops_on_an_empty_line(db_path: str) -> None:
    result = invoke(db_path, "consult", "chat", "--case", "sample-02", input="\nA\n")
    assert result.exit_code == 0, result.output
    assert last_json(result)["turns"] == 0
    missing = invoke(db_path, "consult", "chat", "--case", "nope", input="\n")
    assert missing.exit_code == 1 and "no case 'nope'" in missing.output


@pytest.mark.slow
def test_convert_an_exam_question(db_path: str) -> None:
    store = Store(db_path)
    store.add_dataset("usmle", "exam", [{
        "id": 7, "options": ["Migraine", "Bacterial meningitis", "Sinusitis"], "answer": "B",
        "question": "A 24-year-old woman comes in because of fever and a headache for 2 days. "
                    "Her temperature is 39.4°C. Which of the following is the most likely "
                    "diagnosis?"}])  # fmt: skip
    args = ["consult", "convert", "--dataset", "usmle", "--item", "7", "--model", "smollm2"]
    result = invoke(db_path, *args, "--save", "drafts", input="y\n")
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout[: result.stdout.index("Save this case")])
    assert draft["id"] == "usmle-7" and draft["task"]["answer"] == "B"
    assert "saved 'usmle-7' in 'drafts'" in result.output
    (saved,) = store.items("drafts")
    assert saved["facts"] == draft["facts"]
    missing = invoke(db_path, "consult", "convert", "--dataset", "usmle", "--item", "99")
    assert missing.exit_code == 1 and "no item '99'" in missing.output


ESC = "\x1b[31m\x1b]8;;http://x.invalid\x07link\x1b]8;;\x07\x1b]0;title\x07\u202e"


def test_show_and_cases_never_send_a_cases_escapes_to_the_terminal(
    store: Store, tmp_path: Path, scripted_pool
) -> None:
    case = {**CASE, "id": f"c1{ESC}", "initial_request": f"Doctor, my chest hurts.{ESC}",
            "facts": [{"key": f"Age{ESC}", "value": f"40 years{ESC}"}]}  # fmt: skip
    path = tmp_path / "evil.json"
    path.write_text(json.dumps([case]), encoding="utf-8")
    assert invoke(store.path, "import", "cases", str(path)).exit_code == 0
    pool = scripted_pool(
        ScriptedModel("doctor", replies="How old are you?"),
        ScriptedModel("patient", replies=f"I am 40 years old.{ESC}\nSecond line{ESC}"),
        ScriptedModel("solver", replies="B"),
    )
    summary = run_consult(store, "evil", "doctor", max_turns=1, pool=pool, patient="patient",
                          solver="solver")  # fmt: skip
    assert summary["status"] == "finished", summary
    shown = ["consult", "show", str(summary["run_id"])]
    for args in (shown, ["consult", "cases", "--cases", "evil"]):
        out = invoke(store.path, *args)
        assert out.exit_code == 0, out.output
        for raw in ("\x1b", "\x07", "\u202e"):
            assert raw not in out.output, args
        assert "\\x1b]8;;http://x.invalid\\x07link" in out.output
