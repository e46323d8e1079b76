"""Examples are never cut to fit a model's context: a question whose k-shot prompt does not fit
is skipped with its reason, and a setting that fits no question is refused in one line (the
paper skipped 8-shot where a model's context could not hold it)."""

from __future__ import annotations

import pytest

from engine.core.runs import RunError
from engine.exam.dataset import ensure_sample
from engine.exam.runner import ExamSettings, prompt_text, run_exam, shots_used
from engine.models.load import LoadSettings
from engine.models.pool import ModelPool
from engine.models.scripted import ScriptedModel


def _lengths(store, model: ScriptedModel, settings: ExamSettings) -> dict[str, int]:
    """Each sample question's prompt length in the model's tokens (a character a token)."""
    from engine.exam.prompts import ShotPlan

    items = store.items(ensure_sample(store))
    plan = ShotPlan(items, settings.shots, settings.seed, same_pool=True)
    return {
        str(i["id"]): model.count_tokens(prompt_text(model, i, plan.for_item(i), settings, True))
        for i in items
    }


def test_a_question_too_long_is_skipped_with_its_reason(store, scripted_pool) -> None:
    settings = ExamSettings(model="scripted", shots=8, max_tokens=100)
    lengths = _lengths(store, ScriptedModel(tokens=len), settings)
    n_ctx = sorted(lengths.values())[len(lengths) // 2] + 100  # half of them fit
    model = ScriptedModel(tokens=len, n_ctx=n_ctx)
    summary = run_exam(store, ensure_sample(store), settings, pool=scripted_pool(model))
    too_long = {k for k, n in lengths.items() if n + 100 > n_ctx}
    assert 0 < len(too_long) < len(lengths)
    assert summary["status"] == "finished" and summary["too_long"] == len(too_long)
    assert summary["answered"] == len(lengths) - len(too_long) and summary["shots_cut"] == 0
    for answer in store.answers(summary["run_id"]):
        extra = answer["extra"]
        if answer["item_key"] in too_long:
            assert extra["skipped"] == "context" and answer["chosen"] is None
            assert extra["error"] == (
                f"skipped: the 8-shot prompt takes {lengths[answer['item_key']]} tokens and "
                f"the answer 100, more than scripted's context of {n_ctx}"
            )
        else:
            assert len(extra["shots"]) == 8  # never fewer
    assert len(model.requests) == summary["answered"]  # nothing sent for a skipped one


def test_a_setting_that_fits_no_question_is_refused_in_one_line(store, scripted_pool) -> None:
    pool = scripted_pool(ScriptedModel(tokens=len, n_ctx=600))
    with pytest.raises(RunError, match=r"^8-shot skipped for scripted: even the shortest ") as e:
        run_exam(store, ensure_sample(store), ExamSettings(shots=8), pool=pool)
    assert "\n" not in str(e.value) and "context of 600" in str(e.value)
    assert store.runs() == []  # no run of fewer examples than its label says


def test_the_summary_counts_skipped_and_old_cut_questions() -> None:
    rows = [
        {"extra": {"shots": ["a", "b", "c", "d"]}},
        {"extra": {"error": "skipped: …", "skipped": "context"}},
        {"extra": {"shots": ["a", "b"], "shots_planned": 4}},  # cut by prompt version 1
    ]
    assert shots_used(rows, None) == {"shots_used_mean": 3.0, "shots_cut": 1, "too_long": 1}
    # version 1 answers stored before shots_planned fall back on the run's setting
    assert shots_used([{"extra": {"shots": ["a"]}}], 4)["shots_cut"] == 1
    assert shots_used([{"extra": {"shots": ["a"]}}], None)["shots_cut"] == 0


@pytest.mark.slow
def test_the_real_model_skips_what_its_context_cannot_hold(store) -> None:
    # smollm2's prompts of the sample's first three questions take 635, 659 and 762 tokens
    # with one example and the logprob cue (a few less without it), 1773-1928 with four.
    dataset = ensure_sample(store)
    small = ModelPool(load=LoadSettings(n_ctx=1024))
    try:
        with pytest.raises(RunError, match="4-shot skipped for smollm2"):
            run_exam(store, dataset, ExamSettings(model="smollm2", method="logprob", shots=4),
                     pool=small)  # fmt: skip
    finally:
        small.close()
    pool = ModelPool(load=LoadSettings(n_ctx=768))
    try:
        settings = ExamSettings(model="smollm2", shots=1, limit=3, max_tokens=20)
        summary = run_exam(store, dataset, settings, pool=pool)
    finally:
        pool.close()
    answers = store.answers(summary["run_id"])
    assert summary["status"] == "finished" and summary["too_long"] == 1
    assert [a["extra"].get("skipped") for a in answers] == [None, None, "context"]
    extra = answers[2]["extra"]
    assert 748 < extra["prompt_tokens"] < 762 and extra["error"] == (
        f"skipped: the 1-shot prompt takes {extra['prompt_tokens']} tokens and the answer 20, "
        "more than smollm2's context of 768"
    )
    assert [len(a["extra"]["shots"]) for a in answers[:2]] == [1, 1]
