"""The patient audit measured against a person's reading: real replies of the embedded
models as the patient, labelled by hand per requirement (honesty, strictness, everyday
words, voice; tests/data/patient_replies_labelled.md says how), split by a hash of the
reply's words into a development half (the rules were tuned on it) and a held-apart half
(where the agreement is measured). Rules only: no model runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import Case, Fact, Task, ensure_sample
from engine.consult.doctor.runner import run_consult
from engine.consult.scoring.audit import audit, run_audit, tally_lines
from engine.consult.scoring.requirements import CATEGORIES, read_reply
from engine.models.scripted import ScriptedModel
from engine.reports import build_report, render

FIXTURE = Path(__file__).parent / "data" / "patient_replies_labelled.jsonl"


@pytest.fixture(scope="module")
def labelled() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _case(row: dict) -> Case:
    facts = [Fact(k, v) for k, v in row["facts"]]
    return Case(row["case"], facts, row["opening"], Task(diagnosis="-"), row["language"])


def agreement(rows: list[dict]) -> dict[str, float]:
    """Per category, the share of ``rows`` whose reading by the rules is the label."""
    same = dict.fromkeys(CATEGORIES, 0)
    for row in rows:
        read = read_reply(_case(row), row["question"], row["reply"], row["asked"])
        for category in CATEGORIES:
            same[category] += read[category] == row["labels"][category]
    return {c: same[c] / len(rows) for c in CATEGORIES}


def test_patient_audit_labelled_fixture_is_real_and_split_by_the_reply(labelled):
    assert len(labelled) >= 150
    assert {r["patient"] for r in labelled} == {"smollm2", "gemma3-270m"}
    assert {r["mode"] for r in labelled} == {"paper", "grounded"}
    assert {r["cases"] for r in labelled} >= {"osce", "cases-sample"}
    assert any(r["language"] == "zh" for r in labelled)  # cases converted from ExplainCPE
    for r in labelled:  # the half is fixed by the reply's words, before any rule was tuned
        words = " ".join(r["reply"].lower().split())
        held = int(hashlib.sha1(words.encode("utf-8")).hexdigest(), 16) % 2
        assert r["half"] == ("held" if held else "dev")
        for category, kinds in CATEGORIES.items():
            assert r["labels"][category] in ("ok", *kinds), r["id"]
    assert sum(r["half"] == "held" for r in labelled) >= 60


def test_patient_audit_labelled_agreement_per_category(labelled):
    """The audit reads each held-apart reply as the person did, 90% or more in each
    requirement (the kind that breaks it included: a denial is not a contradiction)."""
    held = agreement([r for r in labelled if r["half"] == "held"])
    assert all(share >= 0.9 for share in held.values()), held


def test_patient_audit_labelled_breaks_of_the_issue_are_found():
    """The replies a reader saw as nonsense while the audit said 0%, and variants."""
    woman = Case(
        "w",
        [
            Fact("Demographics", "35-year-old woman"),
            Fact("Symptoms", "Double vision for 1 month"),
            Fact("Pain", "Abdominal pain since Monday"),
        ],
        "I see double.",
        Task(diagnosis="myasthenia gravis"),
    )
    said = {
        "I'm sorry for your loss. I'm a medical record.": ("voice", "record"),
        "I'm sorry for any harm or injury.": ("voice", "apology"),
        "The patient has been experiencing double vision.": ("voice", "third_person"),
        "She reports double vision for a month.": ("voice", "third_person"),
        "I'm unable to provide medical information.": ("voice", "refusal"),
        "How can I help you today?": ("voice", "assistant"),
        "I'm 35 and I'm a doctor.": ("voice", "doctor"),
        "I've had double vision for a month.": ("voice", "ok"),
    }
    for reply, (category, kind) in said.items():
        assert read_reply(woman, "What brings you in?", reply)[category] == kind, reply
    asked = {
        ("Are you a man?", "I'm not sure about that, doctor."): "denied",
        ("Are you a woman?", "I don't know."): "denied",
        ("Are you a man?", "Yes, I'm a man."): "contradiction",
        ("How old are you?", "I'm 53."): "contradiction",
        ("How long have you seen double?", "For 2 years."): "contradiction",
        ("Do you have double vision?", "No."): "denied",
        ("Any chest pain?", "No, I don't have any chest pain."): "ok",
        ("Anything else?", "I also have a rash on my legs."): "made_up",
        ("Have you had any chest pain?", "Yes, I have had chest pain."): "made_up",
        ("Do you have double vision?", "Yes, I do."): "ok",
        ("Do you smoke or see double?", "Yes."): "ok",
        ("How old are you?", "I'm 35."): "ok",
    }
    for (question, reply), kind in asked.items():
        assert read_reply(woman, question, reply)["honesty"] == kind, (question, reply)
    assert read_reply(woman, "How old are you?", "I'm 35. I see double.")["strictness"] == "ok"
    assert read_reply(woman, "Do you smoke?", "No. I'm 35.")["strictness"] == "unasked"
    assert read_reply(woman, "Symptoms?", "I have diplopia.")["colloquialism"] == "jargon"
    assert read_reply(woman, "Symptoms?", "I see double.")["colloquialism"] == "ok"


def turn(role: str, n: int, text: str, facts: tuple[int, ...] = ()) -> dict:
    extra = {"kind": "reply", "facts": [{"index": i} for i in facts]} if role == "patient" else {}
    return {"role": role, "turn": n, "text": text, "extra": extra}


def test_patient_audit_labelled_shares_per_category_with_an_example():
    case = Case(
        "c",
        [Fact("Demographics", "35-year-old woman"), Fact("Fever", "38.5 °C since Monday")],
        "I feel hot.",
        Task(diagnosis="flu"),
    )
    turns = [
        turn("doctor", 1, "Are you a man?"),
        turn("patient", 1, "I'm not sure about that, doctor."),
        turn("doctor", 2, "Any fever?"),
        turn("patient", 2, "Yes, since Monday.", (1,)),
        turn("doctor", 3, "Anything else?"),
        turn("patient", 3, "The patient has been experiencing pyrexia."),
    ]
    found = audit(case, turns)
    assert found["patient_replies"] == 3
    assert found["patient_dishonest"] == pytest.approx(1 / 3, abs=1e-4)
    assert found["patient_off_voice"] == pytest.approx(1 / 3, abs=1e-4)
    assert found["patient_jargon"] == pytest.approx(1 / 3, abs=1e-4)
    from engine.consult.scoring.audit import readings, tally

    lines = tally_lines(tally(readings(case, turns)))
    assert lines[0] == "Honesty: 1 of 3 replies (33%) not honest: denied 1"
    assert "  e.g. c reply 1: “I'm not sure about that, doctor.”" in lines
    assert any(line.startswith("Voice: 1 of 3 replies (33%)") for line in lines)


def test_patient_audit_labelled_table_in_the_report_and_the_cli(store, scripted_pool, tmp_path):
    cases = ensure_sample(store)
    pool = scripted_pool(
        ScriptedModel("patient", replies="I'm sorry for any harm or injury."),
        ScriptedModel("solver", replies="B"),
    )
    summary = run_consult(store, cases, "oracle-direct", limit=1, max_turns=2, pool=pool,
                          patient="patient", solver="solver")  # fmt: skip
    run_id = summary["run_id"]
    assert summary["patient_off_voice"] == 100.0 and summary["patient_dishonest"] == 0.0
    found = run_audit(store, run_id)
    voice = found["categories"]["voice"]
    assert voice["kinds"] == {"apology": found["replies"]} and voice["share"] == 100.0
    text = render(build_report(store, [run_id]), "text")
    assert "The patient audited" in text and "Requirement broken" in text
    assert "patient (paper)" in text and f"apology {found['replies']}" in text
    db_path = str(tmp_path / "medexam.db")  # the store's
    out = CliRunner().invoke(cli, ["--db", db_path, "consult", "audit", str(run_id)])
    assert out.exit_code == 0, out.output
    assert f"Voice: {found['replies']} of {found['replies']} replies (100%)" in out.output
    assert "I'm sorry for any harm or injury." in out.output
    said = json.loads(
        CliRunner().invoke(cli, ["--db", db_path, "consult", "audit", str(run_id), "--json"]).output
    )  # the JSON names the run and its patient as the text's first line does
    assert (said["run_id"], said["patient"], said["patient_mode"]) == (run_id, "patient", "paper")
    assert out.output.startswith(f"run {run_id}: patient as the patient (paper mode)")
    assert said["categories"] == found["categories"]
    wrong = CliRunner().invoke(cli, ["--db", db_path, "consult", "audit", "999"])
    assert wrong.exit_code != 0 and "Traceback" not in wrong.output
    store.delete_dataset(cases)  # the run stays; its replies can no longer be read
    assert run_audit(store, run_id)["replies"] == 0
    assert "The patient audited" not in render(build_report(store, [run_id]), "text")


def test_patient_audit_labelled_voice_rules_guard_the_grounded_patient():
    """The grounded patient shows no reply the audit reads out of voice: a third-person or
    apologising reply is replaced by the fact read out in the patient's voice."""
    from engine.consult.patient.simulated import Patient

    case = Case(
        "v",
        [Fact("Demographics", "35-year-old female"), Fact("Symptoms", "Double vision")],
        "I see double.",
        Task(diagnosis="myasthenia gravis"),
    )
    for said in ("The patient is a 35-year-old female.", "I'm sorry for any harm or injury."):
        model = ScriptedModel("patient", replies=[said, said])
        reply = Patient(case, model, match="bm25").reply("How old are you?")
        assert reply.source == "guard" and reply.text == "I'm a 35-year-old female.", said
