"""The few-shot examples each exam answer actually used, and what the summary says of them."""

from __future__ import annotations

import pytest

from engine.exam.dataset import ensure_sample
from engine.exam.runner import ExamSettings, run_exam, shots_used
from engine.models.pool import ModelPool


def test_mean_used_and_questions_cut() -> None:
    rows = [
        {"extra": {"shots": ["a", "b", "c", "d"], "shots_planned": 4}},
        {"extra": {"shots": ["a", "b"], "shots_planned": 4}},
        {"extra": {"shots": [], "shots_planned": 4}},
        {"extra": {"error": "too long"}},  # no prompt was built: not counted
    ]
    assert shots_used(rows, 4) == {"shots_used_mean": 2.0, "shots_cut": 2}
    # answers stored before shots_planned was recorded fall back on the run's setting
    assert shots_used([{"extra": {"shots": ["a"]}}], 4) == {"shots_used_mean": 1.0, "shots_cut": 1}
    assert shots_used([], 0) == {"shots_used_mean": None, "shots_cut": 0}


@pytest.mark.slow
def test_a_small_context_cuts_examples_and_says_so(store) -> None:
    dataset = ensure_sample(store)
    pool = ModelPool(settings_for=lambda name: {"n_ctx": 1024})
    try:
        summary = run_exam(
            store,
            dataset,
            ExamSettings(model="smollm2", method="logprob", shots=8, limit=1),
            pool=pool,
        )
    finally:
        pool.close()
    assert summary["status"] == "finished" and summary["shots"] == 8
    (answer,) = store.answers(summary["run_id"])
    used = answer["extra"]["shots"]
    assert answer["extra"]["shots_planned"] == 8 and len(used) < 8
    assert summary["shots_used_mean"] == len(used) and summary["shots_cut"] == 1
