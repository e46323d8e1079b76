"""Golden dialogues written by a model (``consult golden --writer MODEL``), as the paper had
ChatGPT write its own: each key's question checked (one question, the key's subject, not its
value) and the template's where it fails, counted; the closing analysis cites what the
patient told and ends on the case's own diagnosis; a stopped set goes on with the same call;
the dialogues are what ``train doctor`` reads. On the scripted model, then the real SmolLM2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import add_case, ensure_sample, load_cases, validate_case
from engine.consult.doctor.written import written_analysis, written_question
from engine.consult.report.tables import dialogue_records
from engine.consult.training.golden import (
    GoldenError,
    build_golden,
    doctor_dialogues,
    writer_counts,
)
from engine.core.progress import Cancel
from engine.core.runs import RunError
from engine.models.scripted import Request, ScriptedModel
from engine.store.store import Store
from engine.train.chat_lora import pieces

TOLD = "It moved to the lower right side of my belly, and my temperature was 38.2."
ANALYSIS = "The pain that moved to your lower right side and your temperature of 38.2 point to it."
CLOSING = "Thank you, I have no more questions. The most likely diagnosis is Acute appendicitis."
#: The scripted writer's failures: a question that gives the value away, one with no "?".
BAD = {"Sex": "Are you male?", "Onset": "Tell me when it started."}


def key_of(request: Request) -> str:
    return request.messages[-1]["content"].split("to learn about their ")[1].split(". Ask")[0]


def writer(request: Request) -> str:
    """Writes the closing analysis, a question naming each key, and two questions that fail."""
    text = request.messages[-1]["content"]
    if "ending a consultation" in text:
        return ANALYSIS
    key = key_of(request)
    return BAD.get(key.capitalize(), f'Doctor: "Could you tell me about your {key}?"')


def small_cases(store, n: int = 3) -> str:
    """``n`` cases of four facts (each asked costs the patient's fact matching a moment)."""
    for i in range(n):
        add_case(store, "small", validate_case({
            "id": f"case-{i + 1}", "language": "en",
            "initial_request": "Doctor, my belly has hurt since yesterday. Can you help me?",
            "facts": [{"key": "Age", "value": f"{20 + i} years old"},
                      {"key": "Sex", "value": "Male"},
                      {"key": "Onset", "value": "About 20 hours ago"},
                      {"key": "Pain location", "value": "The lower right side of the belly"}],
            "task": {"question": "Which is the most likely diagnosis?", "answer": "B",
                     "options": {"A": "Acute cholecystitis", "B": "Acute appendicitis",
                                 "C": "Renal colic"}},
        }))  # fmt: skip
    return "small"


def models(*extra: ScriptedModel) -> list[ScriptedModel]:
    return [ScriptedModel("writer", replies=writer), ScriptedModel("patient", replies=TOLD),
            ScriptedModel("solver", replies="B"), *extra]  # fmt: skip


def test_a_question_is_one_question_on_the_key_s_subject_that_keeps_the_value() -> None:
    assert written_question("How old are you?", "Age", "22 years old") == ("How old are you?", "")
    assert written_question('Doctor: "What was your temperature?"', "Vital signs - Temperature",
                            "38.2 °C")[0] == "What was your temperature?"  # fmt: skip
    assert written_question("Which medicines do you take?", "Medications", "None")[0]
    assert written_question("\n\nHow old are you?\nI hope", "Age", "22")[0] == "How old are you?"
    fails = {
        ("Was your temperature 38.2?", "Vital signs - Temperature", "38.2 °C"): "gives the value away",
        ("Are you male?", "Sex", "Male"): "gives the value away",
        ("Tell me when it started.", "Onset", "About 20 hours ago"): "not one question",
        ("How old are you? Any pain?", "Age", "22 years old"): "not one question",
        ("Do you smoke?", "Past medical history", "None"): "does not name the key",
        ("", "Age", "22"): "empty",
    }  # fmt: skip
    for (text, key, value), why in fails.items():
        question, reason = written_question(text, key, value)
        assert question is None and why in reason, (text, reason)


def test_an_analysis_cites_what_was_told_and_names_no_other_diagnosis(store) -> None:
    case = load_cases(store, ensure_sample(store))[0]  # acute appendicitis
    assert written_analysis(ANALYSIS, case, [TOLD]) == (ANALYSIS, "")
    fails = {
        "Your fever of 39 points to it.": "names a number the patient did not tell",
        "Your pain in the lower right side could be acute cholecystitis.": "another diagnosis",
        "Does it hurt? The pain moved to the lower right side.": "asks a question",
        "You are unwell.": "cites no fact",
        "Your pain moved to the lower right side. Your pain moved to the lower right side.": "repeats itself",
        "The patient told me the pain moved to the lower right side.": "speaks of the patient",
    }
    for text, why in fails.items():
        analysis, reason = written_analysis(text, case, [TOLD])
        assert analysis is None and why in reason, (text, reason)


def test_a_writer_writes_the_questions_and_the_closing_and_failures_are_the_template(
    store, scripted_pool
) -> None:
    cases = small_cases(store, 2)
    pool = scripted_pool(*models())
    summary = build_golden(store, cases, "g", patient="patient", writer="writer", pool=pool,
                           solver="solver")  # fmt: skip
    assert summary["status"] == "finished"
    run = store.run(summary["run_id"])
    assert run["settings"]["writer"] == "writer" and run["settings"]["golden"] == "g"

    turns = store.turns(summary["run_id"], "case-1")
    asked = [t for t in turns if t["role"] == "doctor" and t["extra"]["kind"] == "question"]
    assert [t["text"] for t in asked] == [
        "Could you tell me about your age?",  # the label and quotes gone
        "Can you tell me about sex?",  # the template's
        "Can you tell me about onset?",
        "Could you tell me about your pain location?",
    ]
    assert [t["extra"]["writer"] for t in asked] == ["written", "template", "template", "written"]
    assert asked[1]["extra"] == asked[1]["extra"] | {
        "fallback": "gives the value away", "raw": "Are you male?"}  # fmt: skip
    assert writer_counts(store, summary["run_id"]) == {
        "writer": "writer", "questions": 8, "written": 4, "template": 4,
        "why": {"gives the value away": 2, "not one question ending with a question mark": 2},
        "closings_written": 2, "closings_template": 0,
    }  # fmt: skip

    dialogue = doctor_dialogues(store, "g")[0]
    assert dialogue[-1] == {"role": "assistant", "content": f"{ANALYSIS} {CLOSING}"}
    assert dialogue[2]["content"] == "Could you tell me about your age?"
    exported = next(dialogue_records(store, summary["run_id"]))  # consult export-dialogues
    assert exported["messages"][-1]["content"] == f"{ANALYSIS} The answer is B. Acute appendicitis"
    # the trainer learns the doctor's turns, the written closing among them
    learned = [text for text, yes in pieces(chatml, dialogue) if yes]
    assert learned[-1] == f"{ANALYSIS} {CLOSING}<|end|>" and len(learned) == 5


def chatml(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    text = "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)
    return text + ("<|assistant|>" if add_generation_prompt else "")


def test_a_closing_that_fails_its_check_is_the_template_s(store, scripted_pool) -> None:
    def careless(request: Request) -> str:
        if "ending a consultation" in request.messages[-1]["content"]:
            return "It could be acute cholecystitis, with your fever of 40."
        return writer(request)

    pool = scripted_pool(ScriptedModel("careless", replies=careless), *models())
    summary = build_golden(store, small_cases(store, 1), "g", patient="patient",
                           writer="careless", pool=pool, solver="solver")  # fmt: skip
    assert doctor_dialogues(store, "g")[0][-1]["content"] == CLOSING
    counts = writer_counts(store, summary["run_id"])
    assert (counts["closings_written"], counts["closings_template"]) == (0, 1)


def test_a_stopped_set_goes_on_with_the_same_call(store, scripted_pool) -> None:
    cases = small_cases(store)
    model = ScriptedModel("writer", replies=writer)
    pool = scripted_pool(model, *models()[1:])
    stop = Cancel()

    def progress(p) -> None:
        if p.done >= 1:
            stop.set()

    stopped = build_golden(store, cases, "g", patient="patient", writer="writer", limit=3,
                           pool=pool, solver="solver", progress=progress, cancel=stop,
                           concurrency=1)  # fmt: skip
    assert stopped["status"] == "cancelled"
    (first,) = store.runs("consult")
    assert first["status"] == "cancelled" and 1 <= first["n_done"] < 3
    asked_before = len(model.requests)

    with pytest.raises(GoldenError, match="started with writer 'writer', not None"):
        build_golden(store, cases, "g", patient="patient", limit=3, pool=pool, solver="solver")
    summary = build_golden(store, cases, "g", patient="patient", writer="writer", limit=3,
                           pool=pool, solver="solver", concurrency=1)  # fmt: skip
    assert summary["status"] == "finished" and summary["run_id"] == first["id"]
    assert [r["id"] for r in store.runs("consult")] == [first["id"]]
    asked_now = len(model.requests) - asked_before  # 4 questions and a closing a case
    assert asked_now == 5 * (3 - first["n_done"])  # none written twice
    assert len(doctor_dialogues(store, "g")) == 3
    with pytest.raises(GoldenError, match="golden set 'g' exists"):
        build_golden(store, cases, "g", patient="patient", writer="writer", limit=3, pool=pool)


def test_a_writer_needs_an_oracle_doctor(store, scripted_pool) -> None:
    from engine.consult.doctor.runner import run_consult

    pool = scripted_pool(*models())
    with pytest.raises(RunError, match="a writer writes an oracle doctor's questions"):
        run_consult(store, ensure_sample(store), "solver", writer="writer", pool=pool)


def invoke(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def test_consult_golden_writer_on_the_command_line(db_path: str, home: Path) -> None:
    script = {"backend": "scripted"}
    (home / "models.json").write_text(json.dumps({
        "writer": {**script, "replies": "What is your age?"},  # fits the key Age only
        "patient": {**script, "replies": TOLD}, "solver": {**script, "replies": "B"},
    }))  # fmt: skip
    assert invoke(db_path, "consult", "solver", "solver").exit_code == 0
    store = Store(db_path)
    small_cases(store, 1)
    store.close()
    both = invoke(db_path, "consult", "golden", "--name", "g", "--writer", "w", "--template")
    assert both.exit_code != 0 and "not both" in both.output
    made = invoke(db_path, "consult", "golden", "--cases", "small", "--name", "g",
                  "--converter", "writer", "--patient", "patient")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert "written by writer: 1 of 4 questions (3 the template's: 3 does not name" in made.output
    assert "0 of 1 closings" in made.output  # "What is your age?" is no analysis
    summary = json.loads(made.output.strip().splitlines()[-1])
    assert summary["writer"]["written"] == 1 and summary["n"] == 1
    again = invoke(db_path, "consult", "golden", "--cases", "small", "--name", "g",
                   "--writer", "writer", "--patient", "patient")  # fmt: skip
    assert again.exit_code != 0 and "golden set 'g' exists" in again.output
    store = Store(db_path)  # a set stopped before its first case …
    stop = Cancel()
    stop.set()
    stopped = build_golden(store, "small", "s", patient="patient", writer="writer", cancel=stop)
    store.close()
    assert stopped["status"] == "cancelled"
    went_on = invoke(db_path, "consult", "golden", "--cases", "small", "--name", "s",
                     "--writer", "writer", "--patient", "patient")  # fmt: skip
    assert went_on.exit_code == 0, went_on.output  # … goes on with the same command
    assert f"going on with golden set 's' (run {stopped['run_id']})" in went_on.output
    assert f"golden set 's': run {stopped['run_id']} (finished), 1 dialogues" in went_on.output
    plain = invoke(db_path, "consult", "golden", "--cases", "small", "--name", "t",
                   "--template", "--patient", "patient", "--json")  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert "writer" not in json.loads(plain.output.strip().splitlines()[-1])
    refused = invoke(db_path, "consult", "run", "--doctor", "solver", "--writer", "writer")
    assert refused.exit_code != 0 and "Error: a writer writes an oracle" in refused.output


@pytest.mark.slow
def test_the_real_smollm2_writes_and_the_check_holds(store, chat_model) -> None:
    case = validate_case({
        "id": "fever", "language": "en", "initial_request": "Doctor, I feel hot and tired.",
        "facts": [{"key": "Age", "value": "34 years old"},
                  {"key": "Temperature", "value": "39.1 °C"},
                  {"key": "Cough", "value": "Dry cough for 3 days"}],
        "task": {"diagnosis": "Influenza"},
    })  # fmt: skip
    add_case(store, "three", case)
    summary = build_golden(store, "three", "g", patient="smollm2", writer="smollm2",
                           patient_mode="grounded", solver="smollm2")  # fmt: skip
    assert summary["status"] == "finished"
    turns = store.turns(summary["run_id"])
    asked = [t for t in turns if t["role"] == "doctor" and t["extra"]["kind"] == "question"]
    assert len(asked) == 3
    for turn, fact in zip(asked, case.facts, strict=True):
        if turn["extra"]["writer"] == "written":  # what the model wrote passed the check
            assert written_question(turn["text"], fact.key, fact.value)[0] == turn["text"]
        else:  # else the template's, with the model's words and the reason kept
            assert turn["text"] == f"Can you tell me about {fact.key.lower()}?"
            assert turn["extra"]["fallback"]
    counts = writer_counts(store, summary["run_id"])
    assert counts["questions"] == 3 and counts["written"] + counts["template"] == 3
    closing = doctor_dialogues(store, "g")[0][-1]["content"]
    assert closing.endswith("The most likely diagnosis is Influenza.")
