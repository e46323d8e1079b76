"""Real candidates: how people did on each question is imported where a data set says it
(ExplainCPE's "本题共被作答68次 正确率75%"), rates a question's difficulty first, and places a
person after a block, and each model in the exam report, among the candidates (a Rasch
model of the questions' rates)."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm

from engine.bank.difficulty import difficulty
from engine.cli import cli
from engine.errors import DatasetError
from engine.exam.candidates import (
    Rate,
    calibrate,
    candidates_of,
    ordinal,
    parse_analyse,
    standing,
)
from engine.exam.dataset import import_file, validate_record
from engine.exam.person import ExamSitting
from engine.reports import build_report, render


def record(i: int, analyse: str = "", **extra) -> dict:
    return {
        "id": i,
        "question": f"Q{i}?",
        "options": ["a", "b", "c", "d", "e"],
        "answer": "B",
        "explanation": "because",
        "analyse": analyse,
        **extra,
    }


def test_the_analyse_text_gives_the_candidates_rate():
    assert parse_analyse("本题共被作答68次 正确率75%") == Rate(68, 0.75)
    assert parse_analyse("本题共被作答 16 次，正确率 31%") == Rate(16, 0.31)
    assert parse_analyse("") is None and parse_analyse("正确率75%") is None
    item = validate_record(record(1, "本题共被作答68次 正确率75%"))
    assert item["candidates"] == {"n": 68, "right": 0.75}
    assert "candidates" not in validate_record(record(2))
    own = validate_record(record(3, candidates={"n": 10, "right": 0.4}), fmt="mcq")
    assert own["candidates"] == {"n": 10, "right": 0.4} and candidates_of(own) == Rate(10, 0.4)
    with pytest.raises(DatasetError, match="'candidates.right' must be the share right"):
        validate_record(record(4, candidates={"n": 10, "right": 75}))
    # A data set imported before the rates were kept: read from its analyse.
    assert candidates_of({"id": 5, "analyse": "本题共被作答20次 正确率50%"}) == Rate(20, 0.5)


def test_calibration_by_hand():
    b, se = calibrate(0.5, 100)
    assert b == pytest.approx(0.0, abs=1e-9)  # half right: as hard as the average candidate
    b8, se8 = calibrate(0.8, 50)
    assert calibrate(0.2, 50)[0] == pytest.approx(-b8)  # symmetric
    # The rate over candidates N(0, 1) at that difficulty is the candidates' rate.
    rate, _ = quad(lambda t: expit(t - b8) * norm.pdf(t), -12, 12)
    assert rate == pytest.approx(0.8, abs=1e-6)
    # Its standard error: the binomial one of the rate through the slope of the rate.
    slope, _ = quad(lambda t: expit(t - b8) * (1 - expit(t - b8)) * norm.pdf(t), -12, 12)
    assert se8 == pytest.approx(math.sqrt(0.8 * 0.2 / 50) / slope, rel=1e-6)
    assert calibrate(1.0, 20)[0] < calibrate(0.95, 20)[0]  # 100% right: moved inwards, finite


def test_standing_of_hand_checkable_cases():
    items = [Rate(40, 0.7)] * 30
    top = standing([(r, True) for r in items])
    assert top.percentile > 95 and top.high > 99.5 and top.score == 100.0
    bottom = standing([(r, False) for r in items])
    assert bottom.percentile < 5 and bottom.low < 0.5
    # 21 of 30 right: the candidates' mean (70%) — near the middle.
    middle = standing([(r, i < 21) for i, r in enumerate(items)])
    assert middle.score == middle.candidates == 70.0
    assert 35 < middle.percentile < 65 and middle.low < 50 < middle.high
    # Each more right answer places higher; fewer questions, a wider interval.
    ranks = [standing([(r, i < k) for i, r in enumerate(items)]).percentile for k in range(31)]
    assert ranks == sorted(ranks) and ranks[0] < ranks[10] < ranks[20] < ranks[30]
    few = standing([(r, i < 3) for i, r in enumerate(items[:5])])
    assert few.high - few.low > middle.high - middle.low
    assert standing([]) is None
    assert [ordinal(x) for x in (1, 2, 3, 11, 22, 64.4, 99.9, 0.2)] == [
        "1st",
        "2nd",
        "3rd",
        "11th",
        "22nd",
        "64th",
        "99th",
        "1st",
    ]


def test_difficulty_comes_from_the_candidates_first(store, tmp_path):
    path = tmp_path / "rated.json"
    rows = [
        record(1, "本题共被作答68次 正确率75%"),
        record(2, "本题共被作答30次 正确率20%"),
        record(3),
    ]
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    import_file(store, path, name="rated")
    for _ in range(3):  # people got question 1 wrong each time: the candidates decide
        session = ExamSitting(store, "rated", keys=["1"])
        session.answer("A")
        session.finish()
    levels = difficulty(store, "rated")
    assert levels["1"].level == "easy" and levels["1"].people == 3
    assert levels["1"].words() == "easy: 75% of 68 candidates right (here: people 0/3, models 0/0)"
    assert levels["2"].level == "hard" and levels["2"].words().startswith("hard: 20% of 30")
    assert "3" not in levels  # no rate and no answer yet


def test_a_blocks_summary_shows_the_candidates_and_the_standing(db_path, tmp_path):
    path = tmp_path / "rated.json"
    rows = [record(i, f"本题共被作答{20 + i}次 正确率{40 + 5 * i}%") for i in range(1, 9)]
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    runner = CliRunner()
    imported = runner.invoke(cli, ["--db", db_path, "import", "explaincpe", str(path)])
    assert "imported 8 questions as 'rated' (8 with how real candidates did)" in imported.output
    took = runner.invoke(
        cli, ["--db", db_path, "exam", "take", "--dataset", "rated", "--json"], input="B\n" * 8
    )
    assert took.exit_code == 0, took.output
    found = json.loads(took.stdout)["candidates"]
    assert found["n"] == 8 and found["score"] == 100.0 and found["candidates"] == 62.5
    assert found["low"] < found["percentile"] < found["high"]
    text = runner.invoke(
        cli, ["--db", db_path, "exam", "take", "--dataset", "rated"], input="B\n" * 4 + "A\n" * 4
    )
    assert "candidates 62.5% on these 8 questions (24 answers each on average); you 50.0%" in (
        text.output
    )
    assert "percentile among candidates (95% interval " in text.output
    plain = runner.invoke(cli, ["--db", db_path, "exam", "take", "--limit", "2"], input="s\ns\n")
    assert plain.exit_code == 0 and "candidates" not in plain.output  # the sample: no rates
    # `stats`: by the latest answer to each rated question, and each rated session's percentile
    stats = runner.invoke(cli, ["--db", db_path, "stats"])
    assert "among real candidates: you 50% · candidates 62% on these 8 questions" in stats.output
    assert re.search(r"percentile by session: \d+(st|nd|rd|th) → \d+(st|nd|rd|th)\n", stats.output)


def test_the_exam_report_places_each_run_among_the_candidates(store, tmp_path):
    path = tmp_path / "rated.json"
    rows = [record(i, f"本题共被作答{30 + i}次 正确率{50 + 3 * i}%") for i in range(1, 11)]
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    import_file(store, path, name="rated")
    session = ExamSitting(store, "rated")
    for i in range(10):
        session.answer("B" if i < 9 else "C")
    run_id = session.finish().run_id
    report = build_report(store, [run_id])
    table = next(t for t in report["sections"][0]["tables"] if "candidates" in t["title"])
    assert "where this model would place among the people who answered" in table["title"]
    row = table["rows"][0]
    assert row[3:6] == [10, 90.0, 66.5]  # 53%, 56% … 80%: 66.5% on average
    cell = row[6]
    assert cell["low"] < cell["value"] < cell["high"] and cell["value"] > 50
    assert "Standing among candidates" in render(report, "text")


def test_real_explaincpe_candidates_and_a_published_run(db_path, shared_data):
    folder = shared_data / "explaincpe"
    runner = CliRunner()
    base = ["--db", db_path]
    imported = runner.invoke(cli, [*base, "import", "explaincpe", str(folder / "test.json")])
    assert "imported 190 questions as 'test' (188 with how real candidates did)" in (
        imported.output
    )
    stored = runner.invoke(
        cli,
        [*base, "import", "responses", str(folder / "chatgpt_test_responses.json")]
        + ["--dataset", "test", "--model", "gpt-3.5-turbo", "--field", "one_with", "--json"],
    )
    assert stored.exit_code == 0, stored.output
    run_id = json.loads(stored.output)["id"]
    report = json.loads(
        runner.invoke(cli, [*base, "report", str(run_id), "--format", "json"]).output
    )
    table = next(t for t in report["sections"][0]["tables"] if "candidates" in t["title"])
    n, score, theirs, cell = table["rows"][0][3:7]
    # GPT-3.5 answered 53% of the questions right, the candidates 72% on average: it
    # places low among them, its whole interval below the middle.
    assert n == 187 and 50 < score < 56 and 71 < theirs < 73
    assert 5 < cell["value"] < 30 and cell["high"] < 50
