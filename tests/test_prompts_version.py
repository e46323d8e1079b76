"""Each exam run states its prompt version: runs of the earlier prompts stay apart (labelled,
never resumed with today's prompts, never the same settings as a new run); and the report
gives accuracy by every level of types, however many values a level has."""

from __future__ import annotations

import pytest

from engine.core.runs import RunError, run, spec_for
from engine.exam.dataset import ensure_sample, load_file, sample_path
from engine.exam.prompts import PROMPT_VERSION
from engine.exam.runner import ExamSettings, run_exam
from engine.exam.section import exam_section
from engine.reports.label import run_label
from engine.reports.layouts import RunData


def _v1_run(store, scripted_pool) -> int:
    """A run stored as the earlier prompts stored it: no prompt_version, stopped halfway."""
    summary = run_exam(store, ensure_sample(store), ExamSettings(limit=2), pool=scripted_pool())
    run_id = summary["run_id"]
    settings = {k: v for k, v in store.run(run_id)["settings"].items() if k != "prompt_version"}
    store.update_run(run_id, settings=settings, status="cancelled")
    return run_id


def test_a_run_states_its_prompt_version(store, scripted_pool) -> None:
    summary = run_exam(store, ensure_sample(store), ExamSettings(limit=1), pool=scripted_pool())
    settings = store.run(summary["run_id"])["settings"]
    assert settings["prompt_version"] == PROMPT_VERSION == 2
    assert "prompts v" not in run_label(store.run(summary["run_id"]))


def test_an_earlier_run_is_labelled_and_not_resumed(store, scripted_pool) -> None:
    run_id = _v1_run(store, scripted_pool)
    assert run_label(store.run(run_id)).endswith(" · prompts v1")
    with pytest.raises(RunError, match="made with prompt version 1; today's prompts are"):
        run(store, "exam", None, {}, resume=run_id, pool=scripted_pool())
    assert len(store.answers(run_id)) == 2  # its answers are kept as they were


def test_an_earlier_run_never_has_the_same_settings(store, scripted_pool) -> None:
    run_id = _v1_run(store, scripted_pool)
    stored = store.run(run_id)["settings"]
    full = spec_for("exam").settings({"model": "scripted", "limit": 2})
    assert full["prompt_version"] == 2 and stored.get("prompt_version") is None
    assert {k: v for k, v in full.items() if k != "prompt_version"}.items() <= stored.items()


def test_the_report_has_every_level_of_types(store, scripted_pool) -> None:
    subjects = [f"学科{n:02d}" for n in range(14)]  # more than a table's 10 columns
    items = [{**item, "type3": subjects[n % 14]} for n, item in enumerate(load_file(sample_path()))]
    store.add_dataset("typed", "exam", items)
    summary = run_exam(store, "typed", ExamSettings(), pool=scripted_pool())
    tables = exam_section(store, [RunData(store, store.run(summary["run_id"]))])["tables"]
    titles = [t["title"] for t in tables]
    parts = [t for t in tables if t["title"].startswith("Accuracy by subject")]
    assert [t["title"] for t in parts] == [
        "Accuracy by subject (ExplainCPE Table 5 layout), part 1 of 2",
        "Accuracy by subject (ExplainCPE Table 5 layout), part 2 of 2",
    ]
    assert [c for t in parts for c in t["columns"][3:]] == subjects  # all 14, 7 a table
    assert any(t.startswith("Accuracy by kind of question") for t in titles)
    assert any(t.startswith("Accuracy by wording") for t in titles)
