"""The answers drawn at random for people to rate come first in `medexam rate` (which says
how many are left), the same for every rater; the report corrects a judge's means by
people's ratings (prediction-powered) beside its raw mean and the people-only one."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import engine.ratings.corrected
import engine.ratings.draw
from engine.cli import cli
from engine.ratings.corrected import TITLE, corrected_rows
from engine.ratings.draw import draw_size, drawn
from engine.ratings.people import RatingSession
from engine.ratings.table import rating_tables, read_ratings
from engine.reports import build_report, render
from engine.reports.ppi import ppi_mean
from tests.test_ratings import JUDGE, PEOPLE, five, judge_all, model_run


@pytest.fixture
def two_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draw two answers of a run (five, in these tests) rather than thirty."""
    monkeypatch.setattr(engine.ratings.draw, "FEWEST", 2)


def test_the_draw_is_fixed_by_the_run_and_its_answers() -> None:
    keys = [f"item-{n}" for n in range(200)]
    assert drawn(3, keys) == drawn(3, list(reversed(keys))) and len(drawn(3, keys)) == 30
    assert drawn(3, keys) != drawn(4, keys)  # another run, another draw
    assert drawn(3, keys, size=10) < drawn(3, keys)  # more drawn: the first ones kept
    assert (draw_size(0), draw_size(12), draw_size(2000)) == (0, 12, 100)


def test_rate_offers_the_drawn_answers_first_and_says_how_many_are_left(
    store, scripted_pool, two_drawn
):
    run_id = model_run(store, scripted_pool, "model-a")
    session = RatingSession(store, [run_id], "dr-li", seed=3)
    assert session.total == 5 and len(session.drawn) == 2 and session.drawn_left == 2
    assert {e.key for e in session.entries[:2]} == session.drawn
    for rater, seed in (("dr-wang", 3), ("dr-li", 9)):
        other = RatingSession(store, [run_id], rater, seed=seed)
        assert other.drawn == session.drawn and {e.key for e in other.entries[:2]} == other.drawn
    args = ["--db", store.path, "rate", str(run_id), "--rater", "dr-li"]
    out = CliRunner().invoke(cli, args, input="45342\n\nq\n")
    assert out.exit_code == 0, out.output
    assert "2 answers drawn at random to check the judges come first: 2 left" in out.output
    assert "Explanation 1 of 5 · drawn to check the judges, 2 left" in out.output
    assert "Explanation 2 of 5 · drawn to check the judges, 1 left" in out.output
    assert out.output.rstrip().endswith(
        "come first: 1 left (the report corrects a judge's means by them)."
    )
    out = CliRunner().invoke(cli, args, input="s\n\nq\n")  # a skip counts as seen
    assert "All 2 answers drawn at random to check the judges are rated." in out.output
    assert "Explanation 3 of 5 ──" in out.output  # no longer a drawn one


def test_the_report_gives_a_prediction_powered_judge_mean(
    store, scripted_pool, two_drawn, monkeypatch
):
    run_id = model_run(store, scripted_pool, "model-a")
    judge_all(store, run_id, "big-judge", JUDGE)
    session = RatingSession(store, [run_id], "dr-li")
    keys = {a["item_key"]: n for n, a in enumerate(store.answers(run_id))}
    rated = session.entries[:3]  # the two drawn, one more
    for entry in rated:
        session.rate(entry, five(*PEOPLE[keys[entry.item_key]]))
    tables = {t["title"]: t for t in rating_tables(store, [run_id])}
    rows = {r[2]: r for r in tables[TITLE]["rows"]}
    assert set(rows) == {"Well-formed", "Support", "Correctness", "Validity", "Novelty"}
    row = rows["Correctness"]
    ours = [keys[e.item_key] for e in rated]
    theirs = [n for n in range(5) if n not in ours]
    expected = ppi_mean(
        [PEOPLE[n][2] for n in ours], [JUDGE[n][2] for n in ours], [JUDGE[n][2] for n in theirs]
    )
    assert row[:5] == ["Judge big-judge", f"#{run_id}", "Correctness", 3, 2]
    assert row[5] == pytest.approx(sum(j[2] for j in JUDGE) / 5)  # the judge's raw mean
    assert row[6] == {"value": pytest.approx(sum(PEOPLE[n][2] for n in ours) / 3), "too_few": True}
    assert row[7] == {"value": pytest.approx(expected.mean), "too_few": True}  # 3 < 10 ratings
    assert row[8] == pytest.approx(expected.lam)
    text = render(build_report(store, [run_id]), "text")
    assert TITLE in text and "More ratings for ±0.25" in text and "PPI++" in text
    assert "given from 10 people's ratings on" in text
    assert "prediction-powered inference for a judge's mean corrected" in " ".join(text.split())
    monkeypatch.setattr(engine.ratings.corrected, "MIN_ITEMS", 3)
    row = next(r for r in corrected_rows([store.run(run_id)], read_ratings(store, [run_id]))
               if r[2] == "Correctness")  # fmt: skip
    assert (row[7]["low"], row[7]["high"]) == pytest.approx((expected.low, expected.high))
    assert (row[6]["low"], row[6]["high"]) == pytest.approx(
        (expected.people_low, expected.people_high)
    )


def test_no_prediction_powered_table_without_people_or_judge(store, scripted_pool):
    run_id = model_run(store, scripted_pool, "model-a")
    judge_all(store, run_id, "lonely", JUDGE)
    assert TITLE not in {t["title"] for t in rating_tables(store, [run_id])}
