"""Diagnoses answered in words (``--answer free``) and judged (``--judge``): the solver names
the diagnosis of a multiple-choice case without its options and, separately, picks a letter;
a judge model says correct / partly / wrong with its reason (stored, never made up when the
reply has no verdict); the run's summary and report give the verdicts beside the string
match and their agreement with the letter. The model paths run the real embedded model."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample, load_cases
from engine.consult.doctor.final_task import Solver
from engine.consult.scoring.judging import (
    NAME,
    _kappa,
    diagnosis_judge,
    judged_summary,
    judged_tables,
    parse_verdict,
)
from engine.core.scoring import Context, Scored, Value
from engine.models.scripted import ScriptedModel
from engine.store.store import Store


def test_verdicts_read_from_a_reply():
    assert parse_verdict('x {"verdict": "correct", "reason": "Same disease."} y') == (
        "correct",
        "Same disease.",
    )
    assert parse_verdict("INCORRECT: that is renal colic.")[0] == "wrong"
    assert parse_verdict("Verdict: partially.\nIt names the cause only.")[0] == "partly"
    assert parse_verdict('```json\n{"verdict": " Wrong", "reason": 3}\n```') == ("wrong", "")
    assert parse_verdict('{"verdict": "maybe"}') is None
    assert parse_verdict("") is None


@pytest.mark.parametrize(
    "reply",
    [
        '{"verdict": "not correct", "reason": "Another disease."}',
        '{"verdict": "maybe", "reason": "It could be correct."}',
        '{"verdict": null, "reason": "The diagnosis is correct."}',
        '{"verdict": ["correct"], "reason": "Same disease."}',
        '{"verdict": {"value": "correct"}}',
        '{"verdict": true, "reason": "correct"}',
        '{"reason": "correct"}',
        '{"verdict": "correct", "verdict": "wrong"}',  # given twice
        '{"result": {"verdict": "correct"}}',  # nested: not the schema's field
        "The answer is not correct.",
        "Not correct: that is renal colic.",
        "The answer is partially right.",  # prose, not a verdict
        "Correct? No, it is renal colic.",
        "Verdict: correct\nVerdict: wrong",
        "Verdict: correctly named organ, wrong disease",
        "correct: no",  # the rest of the line takes the verdict back
        "Correct - not really",
        "Correct: not really, it is renal colic.",
        "Verdict: correct — never mind, it is asthma.",
        "Correct, isn't it",
        "Correct: hardly.",
        "Correct: ?",
        "Correct: 不",
        "Correct: 没有",
        "Wrong: no\nVerdict: correct",
    ],
)
def test_a_verdict_off_the_schema_is_not_parsed(reply):
    assert parse_verdict(reply) is None, reply


def _judged_run(store: Store, verdicts: list[float | None], letters: list[bool]) -> int:
    cases = ensure_sample(store)
    run_id = store.start_run("consult", cases, "m", {"judge": "j"}, runner="model", n_total=3)
    for i, (v, right) in enumerate(zip(verdicts, letters, strict=True)):
        key = f"c{i}"
        extra = {"answer_form": "free", "letter": "A", "letter_correct": right}
        store.add_answer(run_id, key, response="x", chosen="x", gold="y",
                         scores=[Scored("consult.task", 1, {"correct": v == 1.0})], extra=extra)  # fmt: skip
        store.add_scores(
            run_id, key, [Scored(f"{NAME}@j", 1, {"judged": v, "parsed": v is not None})]
        )
    store.finish_run(run_id, {})
    return run_id


def test_the_verdicts_summed_up_with_their_agreement_with_the_letter(store):
    run_id = _judged_run(store, [1.0, 0.5, 0.0, 1.0, None], [True, False, False, False, True])
    s = judged_summary(store, run_id)["j"]
    assert (s["judged"], s["unparsed"]) == (4, 1)
    assert (s["correct"], s["partly"], s["wrong"]) == (50.0, 25.0, 25.0)
    assert s["string_match"] == 50.0 and s["letter_accuracy"] == 25.0
    # correct vs letter right over the 4 judged: (T,T) (F,F) (F,F) (T,F) -> 3 of 4 agree
    assert s["agreement"] == 75.0
    from sklearn.metrics import cohen_kappa_score

    expected = cohen_kappa_score([True, False, False, True], [True, False, False, False])
    assert s["kappa"] == pytest.approx(round(expected, 3))
    assert _kappa([(True, True), (True, True)]) is None
    [table] = judged_tables(store, [run_id])
    assert table["title"] == "Diagnoses in words, judged" and table["rows"][0][2] == "j"


@pytest.mark.slow
def test_a_case_answered_in_words_and_by_letter(store, chat_model):
    case = load_cases(store, ensure_sample(store))[0]
    result = Solver(chat_model, form="free").answer(case, context="vignette")
    assert result.gold == case.task.options[case.task.answer]  # the right option's text
    assert result.extra["answer_form"] == "free" and result.extra["letter"] in case.task.options
    assert result.extra["letter_correct"] == (result.extra["letter"] == case.task.answer)
    assert result.chosen and result.chosen not in case.task.options  # words, not a letter


@pytest.mark.slow
def test_free_answers_judged_end_to_end(db_path, chat_model):
    out = CliRunner().invoke(cli, [
        "--db", db_path, "consult", "run", "--doctor", "smollm2", "--max-turns", "1",
        "--doctor-max-tokens", "24", "--limit", "2", "--answer", "free", "--judge", "smollm2",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    judged = json.loads(out.output.strip().splitlines()[-1])["judged"]
    [(run_id, s)] = judged.items()
    assert s["judged"] + s["unparsed"] == 2 and s["letter_accuracy"] is not None
    assert "judged by smollm2: " in out.output
    store = Store(db_path)
    rows = [r for r in store.rated_rows([int(run_id)], NAME) if r["key"] == "judged"]
    assert len(rows) == 2 and {r["scorer"] for r in rows} == {f"{NAME}@smollm2"}
    assert all(r["explanation"] for r in rows if r["value"] is not None)  # the reason kept
    run = store.run(int(run_id))
    assert run["summary"]["judged"]["judge"] == "smollm2"
    assert "answered in words" in CliRunner().invoke(cli, ["--db", db_path, "runs", "list"]).output
    again = CliRunner().invoke(cli, ["--db", db_path, "rescore", run_id, "--scorer", NAME,
                                     "--judge", "smollm2", "--json"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["skipped"][f"{NAME}@smollm2"] == 2  # nothing judged twice


def test_a_judge_off_the_schema_stores_its_reply_and_no_verdict(store):
    case = load_cases(store, ensure_sample(store))[0]
    reply = '{"verdict": "not correct", "reason": "Another disease."}'
    judge = ScriptedModel("j", replies=reply)
    context = Context(store, {"settings": {}}, options={"judge": "j"}, models={"j": judge})
    answer = {"chosen": "asthma", "extra": {"answer_form": "free"}}
    found = diagnosis_judge(answer, case, context)
    assert found == {"judged": None, "parsed": Value(False, reply)}
