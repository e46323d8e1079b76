"""People's verdicts on diagnoses in words (`medexam rate RUN --diagnoses`), the answers
drawn at random first, and the report's judge share of right diagnoses corrected by them
(prediction-powered)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import engine.ratings.corrected
import engine.ratings.draw
from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.consult.scoring.judging import judged_tables
from engine.consult.scoring.verdicts import TITLE, corrected_verdicts, to_judge
from engine.core.scoring import Scored
from engine.reports.ppi import ppi_mean
from engine.store.store import Store

JUDGED = [1.0, 0.0, 0.5, 1.0, 1.0, 0.0]


def judged_run(store: Store) -> tuple[int, list[str]]:
    """A consultation run answering in words, a judge's verdict on each answer."""
    dataset = ensure_sample(store)
    keys = [str(i["id"]) for i in store.items(dataset)][: len(JUDGED)]
    run_id = store.start_run("consult", dataset, "doc", {"answer_form": "free"})
    for n, (key, verdict) in enumerate(zip(keys, JUDGED, strict=False)):
        store.add_answer(run_id, key, response=f"diagnosis {n}", chosen=f"diagnosis {n}",
                         position=n)  # fmt: skip
        judge = Scored("consult.diagnosis-judge@big", 3, {"judged": verdict, "parsed": 1})
        store.add_scores(run_id, key, [judge])
    store.finish_run(run_id, {})
    return run_id, keys


def test_people_judge_diagnoses_drawn_first_and_correct_the_judge(store, monkeypatch) -> None:
    monkeypatch.setattr(engine.ratings.draw, "FEWEST", 3)
    run_id, keys = judged_run(store)
    assert len(keys) == len(JUDGED)
    first = to_judge(store, run_id, "dr-li")
    assert [t.drawn for t in first] == [True] * 3 + [False] * (len(keys) - 3)
    assert first[0].reference and first[0].said.startswith("diagnosis")
    args = ["--db", store.path, "rate", str(run_id), "--diagnoses", "--rater", "dr-li"]
    out = CliRunner().invoke(cli, args, input="c\nx\nw\ns\np\nq\n")
    assert out.exit_code == 0, out.output
    assert "3 of them drawn at random to check the judges" in out.output
    assert "drawn, 3 left" in out.output and "drawn, 2 left" in out.output
    assert "c, p or w" in out.output and "3 verdicts given now." in out.output
    left = to_judge(store, run_id, "dr-li")
    assert [t.item_key for t in left] == [first[2].item_key, *(t.item_key for t in first[4:])]
    position = {k: n for n, k in enumerate(keys)}
    rated = {first[0].item_key: 1.0, first[1].item_key: 0.0, first[3].item_key: 0.5}
    table = corrected_verdicts(store, [run_id])
    assert table is not None and table["title"] == TITLE
    row = table["rows"][0]
    judge = {k: 100 * JUDGED[position[k]] for k in keys}
    mine = list(rated)
    expected = ppi_mean([100 * rated[k] for k in mine], [judge[k] for k in mine],
                        [judge[k] for k in keys if k not in rated])  # fmt: skip
    assert row[:4] == ["Judge big", f"#{run_id}", 3, 3]
    assert row[4] == pytest.approx(100 * sum(JUDGED) / len(JUDGED))
    assert row[6] == {"value": pytest.approx(expected.mean), "too_few": True}
    monkeypatch.setattr(engine.ratings.corrected, "MIN_ITEMS", 3)
    row = corrected_verdicts(store, [run_id])["rows"][0]
    assert (row[6]["low"], row[6]["high"]) == pytest.approx((expected.low, expected.high))
    titles = [t["title"] for t in judged_tables(store, [run_id])]
    assert titles == ["Diagnoses in words, judged", TITLE]


def test_no_correction_without_peoples_verdicts(store) -> None:
    run_id, _keys = judged_run(store)
    assert corrected_verdicts(store, [run_id]) is None
    notes = judged_tables(store, [run_id])[0]["notes"]
    assert any("medexam rate RUN --diagnoses" in n for n in notes)


def test_rate_says_in_one_line_which_runs_have_diagnoses_to_judge(store) -> None:
    from engine.exam.dataset import ensure_sample as exam_sample

    consult_run, _ = judged_run(store)
    exam_run = store.start_run("exam", exam_sample(store), "m", {"method": "generate"})
    for args, said in (
        ([str(exam_run), "--diagnoses"], f"run {exam_run} is not a consultation run"),
        ([str(consult_run)], f"medexam rate {consult_run} --diagnoses"),
        ([str(consult_run), str(exam_run), "--diagnoses"], "is not a consultation run"),
    ):
        out = CliRunner().invoke(cli, ["--db", store.path, "rate", *args], input="q\n")
        assert out.exit_code == 1 and said in out.output, out.output
        assert out.output.count("Error:") == 1 and len(out.output.strip().splitlines()) == 1
