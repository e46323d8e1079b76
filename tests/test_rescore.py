"""A stored run scored again: the same summary as the run gave, no model started; a new
scorer version replaces the old scores; an interrupted rescore goes on where it stopped."""

from __future__ import annotations

import contextlib
import json

import pytest
from click.testing import CliRunner
from PySide6.QtCore import Qt

from engine.cli import cli
from engine.core.progress import Cancel, Cancelled
from engine.core.runs import run
from engine.core.scoring import Scorer, get_scorer, rescore
from engine.exam.dataset import ensure_sample as exam_sample
from engine.french.dataset import ensure_sample as french_sample
from engine.models.pool import ModelPool
from engine.models.scripted import ScriptedModel
from engine.registry import UnknownScorer, registered
from engine.store.store import Store

METRICS = ("n", "answered", "accuracy", "rouge1", "rouge2", "rougeL", "by_type", "consistency")


def explaining(request) -> str:
    """A model that picks B or C in turn and says why (its explanations share words with
    the gold ones, so ROUGE is not zero)."""
    letter = "BC"[request.number % 2]
    return f"答案：{letter}\n解析：本题考查药物的作用，{letter}正确。"


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "m.db")
    yield s
    s.close()


@pytest.fixture
def no_model(monkeypatch):
    """Call it once the run is stored: any model leased after that fails the test."""

    def refuse(self, name=None):
        raise AssertionError(f"a model was started ({name})")

    return lambda: monkeypatch.setattr(ModelPool, "acquire", refuse)


@pytest.fixture
def replace_scorer():
    """Call it with a scorer: registered in place of medexam's of its name for the test."""
    with contextlib.ExitStack() as stack:
        yield lambda found: stack.enter_context(registered("scorer", found))


def exam_run(store, scripted_pool, **settings) -> dict:
    dataset = exam_sample(store)
    pool = scripted_pool(ScriptedModel("teacher", replies=explaining))
    return run(store, "exam", dataset, {"model": "teacher", "limit": 6, **settings}, pool=pool)


def test_an_exam_run_scored_again_gives_its_own_summary_without_a_model(
    store, scripted_pool, no_model
):
    first = exam_run(store, scripted_pool)
    assert first["status"] == "finished" and first["rouge1"] > 0
    no_model()
    again = rescore(store, first["run_id"], force=True).summary
    assert {k: again[k] for k in METRICS} == {k: first[k] for k in METRICS}
    by_scorer = {r["scorer"]: r for r in store.run_scorers(first["run_id"])}
    assert set(by_scorer) == {"exam.letter", "exam.rouge"}
    assert all(r["answers"] == 6 for r in by_scorer.values())


def test_the_command_scores_a_french_run_again_and_says_which_scorers(
    store, scripted_pool, no_model
):
    names = french_sample(store)
    pool = scripted_pool(ScriptedModel("reader", replies=["A", "A + B", "C", "B + D"]))
    first = run(store, "french", names["dataset"], {"model": "reader", "limit": 4}, pool=pool)
    no_model()
    result = CliRunner().invoke(
        cli, ["--db", store.path, "rescore", str(first["run_id"]), "--force", "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for key in ("hamming", "emr", "accuracy", "by_n_answers", "answered", "n"):
        assert out["summary"][key] == first[key], key
    assert {s["scorer"] for s in out["scorers"]} == {"french.options", "french.retrieval"}
    shown = CliRunner().invoke(cli, ["--db", store.path, "runs", "show", str(first["run_id"])])
    assert "scored by: french.options v1 (4), french.retrieval v1 (4)" in shown.output


def test_a_new_scorer_version_replaces_the_old_scores_and_only_those(
    store, scripted_pool, no_model, replace_scorer
):
    first = exam_run(store, scripted_pool)
    run_id = first["run_id"]
    no_model()
    old = get_scorer("exam.letter")

    def lenient(answer, item, context):
        return {"correct": answer.get("chosen") in ("B", "C")}  # every reply is B or C

    replace_scorer(
        Scorer("exam.letter", 2, old.activities, old.keys, lenient, metrics=old.metrics)
    )  # the same metrics (accuracy) over the new version's scores
    summary = rescore(store, run_id).summary  # version 2 is new: every answer is scored again
    assert summary["accuracy"] == 100.0
    assert store.run(run_id)["summary"]["accuracy"] == 100.0
    assert {r["scorer"]: r["version"] for r in store.run_scorers(run_id)}["exam.letter"] == 2
    rouge = [r for r in store.score_rows(run_id) if r["scorer"] == "exam.rouge"]
    assert len(rouge) == 18 and all(r["version"] == 1 for r in rouge)


def test_a_cancelled_rescore_keeps_what_it_scored_and_goes_on_from_there(
    store, scripted_pool, no_model, replace_scorer
):
    run_id = exam_run(store, scripted_pool)["run_id"]
    no_model()
    old, calls = get_scorer("exam.letter"), []

    def counting(answer, item, context):
        calls.append(answer["item_key"])
        return old.function(answer, item, context)

    replace_scorer(Scorer("exam.letter", 2, old.activities, old.keys, counting))
    cancel = Cancel()

    def progress(p):
        if p.done == 3:
            cancel.set()

    with pytest.raises(Cancelled):
        rescore(store, run_id, ["exam.letter"], progress=progress, cancel=cancel)
    versions = [
        v for (_k, name), v in store.scored_versions(run_id).items() if name == "exam.letter"
    ]
    assert sorted(versions) == [1, 1, 1, 2, 2, 2]
    assert store.run(run_id)["status"] == "finished"  # the run itself is untouched
    done = rescore(store, run_id, ["exam.letter"])
    assert (done.scored, done.skipped) == ({"exam.letter": 3}, {"exam.letter": 3})
    assert len(calls) == 6 and len(set(calls)) == 6  # the three left, each once
    assert {v for (_k, n), v in store.scored_versions(run_id).items() if n == "exam.letter"} == {2}


def test_what_cannot_be_scored_again_is_refused_in_one_line(store, scripted_pool):
    first = exam_run(store, scripted_pool)
    with pytest.raises(UnknownScorer, match="no scorer 'french.options' for Exam runs"):
        get_scorer("french.options", "exam")
    store.delete_dataset(exam_sample(store))
    result = CliRunner().invoke(cli, ["--db", store.path, "rescore", str(first["run_id"])])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: run {first['run_id']}'s data set 'explaincpe-sample' was deleted: "
        "its items cannot be scored"
    ]
    unknown = CliRunner().invoke(
        cli, ["--db", store.path, "rescore", str(first["run_id"]), "--scorer", "nope"]
    )
    assert unknown.exit_code == 1 and "no scorer 'nope'" in unknown.output


@pytest.mark.gui
def test_the_results_screen_scores_a_selected_run_again(window, qtbot, scripted_pool):
    store = window.ctx.store
    run_id = exam_run(store, scripted_pool)["run_id"]
    with store.transaction():
        store.db.execute("DELETE FROM scores WHERE run_id = ? AND scorer = 'exam.rouge'", [run_id])
    results = window.go("results")
    results.reload()
    results.select_runs([run_id])
    assert results.rescore_button.isEnabled()
    assert "exam.rouge" not in results.summary.toPlainText()
    qtbot.mouseClick(results.rescore_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: results.rescore_job is None, timeout=30000)
    assert "Scored by: exam.letter v1 (6), exam.rouge v1 (6)" in results.summary.toPlainText()
    assert results.rescore_button.text() == "Score again"
