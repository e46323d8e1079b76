"""Hamming score and exact match ratio, checked against hand-computed values."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from french_fixtures import write_questions

from engine.cli import cli
from engine.french.scoring import (
    ScoreError,
    answer_letters,
    exact,
    hamming,
    score_files,
    summarise,
)


def question(qid: str, correct: str) -> dict:
    return {
        "id": qid,
        "question": f"Question {qid} ?",
        "answers": {c: f"Proposition {c}" for c in "abcde"},
        "correct_answers": list(correct),
        "nbr_correct_answers": len(correct),
    }


GOLD = [question("q1", "abc"), question("q2", "b"), question("q3", "ad"), question("q4", "c")]
PREDICTIONS = [
    {"id": "q1", "answer": "A + B"},  # 2 shared of 3 in the union: 2/3, not exact
    {"id": "q2", "answer": "b"},  # 1/1, exact
    {"id": "q3", "answer": ["a", "e"]},  # {a} of {a, d, e}: 1/3
    {"id": "q4", "answer": ""},  # nothing of {c}: 0
]


def test_per_question_scores():
    assert hamming({"a", "b"}, {"a", "b", "c"}) == pytest.approx(2 / 3)
    assert hamming({"a", "e"}, {"a", "d"}) == pytest.approx(1 / 3)
    assert hamming(set(), {"c"}) == 0
    assert hamming(set(), set()) == 1  # empty ∪ empty counts as a perfect match
    assert exact({"b"}, {"b"}) and not exact({"a", "b"}, {"a", "b", "c"})


def test_hand_computed_summary(tmp_path):
    gold = write_questions(tmp_path / "gold.json", GOLD)
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(json.dumps(p) for p in PREDICTIONS) + "\n")
    result = score_files(gold, pred)
    # Hamming: (2/3 + 1 + 1/3 + 0) / 4 = 50 %; EMR: 1 of 4 = 25 %.
    assert result["n"] == 4 and result["hamming"] == 50.0 and result["emr"] == 25.0
    assert result["by_n_answers"] == {
        "1": {"n": 2, "hamming": 50.0, "emr": 50.0},  # q2 (1) and q4 (0)
        "2": {"n": 1, "hamming": 33.33, "emr": 0.0},  # q3
        "3": {"n": 1, "hamming": 66.67, "emr": 0.0},  # q1
    }
    assert result["missing"] == 0 and result["unknown"] == 0


def test_missing_and_unknown_predictions(tmp_path):
    gold = write_questions(tmp_path / "gold.json", GOLD)
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"id": "q2", "answer": "B"}\n{"id": "zz", "answer": "A"}\n')
    result = score_files(gold, pred)
    assert (result["n"], result["hamming"], result["emr"]) == (1, 100.0, 100.0)
    assert result["missing"] == 3 and result["unknown"] == 1


def test_answer_formats():
    for answer in ("A + D", "ad", "A,D", ["a", "d"], ["D", "a"], "Réponses : A et D", "a ; d"):
        assert answer_letters(answer) == ["a", "d"], answer
    assert answer_letters("") == [] and answer_letters(None) == [] and answer_letters([]) == []
    with pytest.raises(ValueError):
        answer_letters(["a", "z"])
    with pytest.raises(ValueError):
        answer_letters(3)


def test_empty_summary():
    assert summarise([]) == {"n": 0, "hamming": None, "emr": None, "by_n_answers": {}}


def test_bad_prediction_file(tmp_path):
    gold = write_questions(tmp_path / "gold.json", GOLD)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "answer": "A"}\nnot json\n')
    with pytest.raises(ScoreError, match="line 2"):
        score_files(gold, bad)
    with pytest.raises(ScoreError, match="no such file"):
        score_files(gold, tmp_path / "none.jsonl")


def test_cli_score(tmp_path):
    gold = write_questions(tmp_path / "gold.json", GOLD)
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(json.dumps(p) for p in PREDICTIONS))
    runner = CliRunner()
    as_json = runner.invoke(
        cli, ["french", "score", "--gold", str(gold), "--predictions", str(pred), "--json"]
    )
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert (data["n"], data["hamming"], data["emr"]) == (4, 50.0, 25.0)
    assert data["by_n_answers"]["3"] == {"n": 1, "hamming": 66.67, "emr": 0.0}
    text = runner.invoke(cli, ["french", "score", "--gold", str(gold), "--predictions", str(pred)])
    assert (
        "Hamming score (%)      50.0\n" in text.output
        and "Exact match ratio (%)  25.0\n" in text.output
    )
    missing = runner.invoke(
        cli, ["french", "score", "--gold", str(tmp_path / "x.json"), "--predictions", str(pred)]
    )
    assert missing.exit_code == 1 and "no such file" in missing.output
