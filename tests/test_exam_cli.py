"""The ``medexam`` exam commands, as a user types them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import sample_path

TABLE_8_FOUR_WITH = {"accuracy": 50.8, "rouge1": 0.356, "rouge2": 0.123, "rougeL": 0.228}


def medexam(db_path: str, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", db_path, *args], input=input)


def test_import_explaincpe_and_mcq(db_path, tmp_path):
    result = medexam(db_path, "import", "explaincpe", str(sample_path()), "--name", "bank")
    assert result.exit_code == 0, result.output
    assert "imported 14 questions as 'bank'" in result.output
    again = medexam(db_path, "import", "explaincpe", str(sample_path()), "--name", "bank")
    assert again.exit_code == 1 and "already exists" in again.output
    csv = tmp_path / "quiz.csv"
    csv.write_text("id,question,A,B,C,answer\n1,Q?,x,y,z,C\n2,R?,x,y,z,Z\n", encoding="utf-8")
    bad = medexam(db_path, "import", "mcq", str(csv))
    assert bad.exit_code == 1
    assert "record 2: 'answer' must be one letter of A, B, C" in bad.output
    csv.write_text("id,question,A,B,C,answer\n1,Q?,x,y,z,C\n", encoding="utf-8")
    ok = medexam(db_path, "import", "mcq", str(csv), "--json")
    assert ok.exit_code == 0, ok.output
    ds = json.loads(ok.output)
    assert ds["name"] == "quiz" and ds["activity"] == "exam" and ds["n_items"] == 1


def test_score_reproduces_the_paper(db_path, shared_data):
    folder = shared_data / "explaincpe"
    result = medexam(
        db_path,
        "exam",
        "score",
        "--gold",
        str(folder / "test.json"),
        "--responses",
        str(folder / "chatgpt_test_responses.json"),
        "--field",
        "four_with_response",
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {k: out[k] for k in TABLE_8_FOUR_WITH} == TABLE_8_FOUR_WITH
    assert out["n"] == len(out["items"]) == 189
    assert set(out["by_type"]) == {"type1", "type2", "type3"}
    text = medexam(
        db_path,
        "exam",
        "score",
        "--gold",
        str(folder / "test.json"),
        "--responses",
        str(folder / "chatgpt_test_responses.json"),
        "--field",
        "four_with_response",
    )
    assert "ROUGE-L    0.228" in text.output
    missing = medexam(
        db_path,
        "exam",
        "score",
        "--gold",
        str(folder / "test.json"),
        "--responses",
        str(folder / "chatgpt_test_responses.json"),
        "--field",
        "nine_with_response",
    )
    assert missing.exit_code == 1 and "has a field 'nine_with_response'" in missing.output
    assert "(fields: eight_with_response, " in missing.output


def test_take_an_exam_in_the_terminal(db_path):
    items = json.loads(sample_path().read_text(encoding="utf-8"))
    first, second = items[0]["answer"], items[1]["answer"]
    wrong = "A" if second != "A" else "B"
    # A lower-case right answer, an empty line and a typo, a wrong answer, then quit.
    result = medexam(
        db_path,
        "exam",
        "take",
        "--limit",
        "4",
        "--in-order",
        input=f"{first.lower()}\n\nx\n{wrong}\nq\n",
    )
    assert result.exit_code == 0, result.output
    assert "right" in result.output and f"wrong, the answer is {second}" in result.output
    assert "please type one of" in result.output
    said = "score 50.0% of the questions answered (1/2; 2 of 4 answered): quit before the end"
    assert said in result.output  # quit: what was answered is scored
    review = medexam(db_path, "exam", "missed", "--json")
    assert json.loads(review.output) == [items[1]["id"]]
    again = medexam(db_path, "exam", "take", "--review", "--json", input=f"{second}\n")
    out = json.loads(again.stdout)  # the questions went to stderr
    assert out["n"] == 1 and out["correct"] == 1 and out["passed"]
    assert json.loads(medexam(db_path, "exam", "missed", "--json").output) == []
    done = medexam(db_path, "exam", "take", "--limit", "1", "--in-order", input=f"{first}\n")
    assert "score 100.0% (1/1; pass mark 60.0%): passed" in done.output  # one decimal each


def test_timed_exam_shows_results_at_the_end(db_path):
    result = medexam(
        db_path, "exam", "take", "--timed", "30", "--limit", "2", "--in-order", input="A\nB\n"
    )
    assert result.exit_code == 0, result.output
    assert "left]" in result.output  # the clock is shown
    assert "sample-01:" in result.output and "sample-02:" in result.output


@pytest.mark.slow
def test_run_a_model_and_resume(db_path):
    result = medexam(db_path, "exam", "run", "--method", "logprob", "--limit", "2", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["dataset"] == "explaincpe-sample" and summary["model"] == "smollm2"
    assert summary["answered"] == 2 and summary["status"] == "finished"
    resumed = medexam(db_path, "exam", "run", "--resume", str(summary["run_id"]), "--json")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.output)["answered"] == 2  # nothing left to do
    text = medexam(
        db_path,
        "exam",
        "run",
        "--method",
        "generate",
        "--limit",
        "1",
        "--max-tokens",
        "16",
        "--lang",
        "en",
        "--no-instruction",
    )
    assert text.exit_code == 0, text.output
    assert "accuracy" in text.output and "ROUGE" in text.output
    bad = medexam(db_path, "exam", "run", "--dataset", "nope")
    assert bad.exit_code == 1 and "no data set named 'nope'" in bad.output
