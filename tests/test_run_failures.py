"""Items a model could not take: stored as failed (not answered), tried again on resume, and a
run where most items failed ends failed with the first error, not finished."""

from __future__ import annotations

from click.testing import CliRunner

from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel
from engine.store.store import Store


def test_a_run_whose_items_mostly_fail_ends_failed_and_resume_retries_them(tmp_path, scripted_pool):
    store = Store(tmp_path / "m.db")
    dataset = ensure_sample(store)
    broken = ScriptedModel("m", replies="答案：B", errors={n: "HTTP 400" for n in (1, 2, 3)})
    first = run(store, "exam", dataset, {"model": "m", "limit": 4}, pool=scripted_pool(broken))
    assert first["status"] == "failed"
    assert (
        first["error"].startswith("3 of 4 items failed; the first: ")
        and "HTTP 400" in first["error"]
    )
    assert (first["answered"], first["failed"], first["n"]) == (1, 3, 4)
    assert store.run(first["run_id"])["status"] == "failed"
    assert len(store.answered_keys(first["run_id"])) == 1

    fixed = ScriptedModel("m", replies="答案：B")
    again = run(store, "exam", None, {}, resume=first["run_id"], pool=scripted_pool(fixed))
    assert again["status"] == "finished" and again["answered"] == 4 and "failed" not in again
    assert len(fixed.requests) == 3  # only the failed ones were asked again
    store.close()


def test_a_run_with_one_failed_item_finishes_and_counts_it_wrong(tmp_path, scripted_pool):
    store = Store(tmp_path / "m.db")
    dataset = ensure_sample(store)
    model = ScriptedModel("m", replies="答案：B", errors={2: "too long for the context"})
    summary = run(store, "exam", dataset, {"model": "m", "limit": 4}, pool=scripted_pool(model))
    assert summary["status"] == "finished"
    assert (summary["answered"], summary["failed"]) == (3, 1)
    result = CliRunner().invoke(
        __import__("engine.cli", fromlist=["cli"]).cli,
        ["--db", store.path, "runs", "show", str(summary["run_id"])],
    )
    assert result.exit_code == 0 and "Failed" in result.output
    store.close()


def test_a_run_with_nothing_answered_prints_no_empty_type_headings(capsys):
    from engine.exam.cli import _by_type_lines

    _by_type_lines({"type1": {}, "type2": {}, "type3": {"常识题": {"n": 1, "accuracy": 100.0}}})
    assert capsys.readouterr().out.splitlines() == ["type3:", "  常识题     n=1    accuracy 100.0%"]
