"""A real model answering the sample questions: both methods, stored answers, resume."""

from __future__ import annotations

import os
import signal

import pytest

from engine.exam.dataset import ensure_sample
from engine.exam.runner import ExamSettings, fit_shots, run_exam, uses_chat
from engine.models.pool import ModelPool
from engine.progress import Cancel

pytestmark = pytest.mark.slow


def test_logprob_run_reads_letter_probabilities(store, chat_model):
    dataset = ensure_sample(store)
    seen = []
    summary = run_exam(
        store,
        dataset,
        ExamSettings(model="smollm2", method="logprob", limit=3),
        progress=seen.append,
    )
    assert summary["status"] == "finished"
    assert summary["n"] == summary["answered"] == 3
    assert 0.0 <= summary["accuracy"] <= 100.0
    assert set(summary["calibration"]) == {"ece", "brier", "mean_confidence"}
    assert summary["seconds_per_question"] > 0
    assert [p.done for p in seen][-1] == 3
    answers = store.answers(summary["run_id"])
    assert [a["item_key"] for a in answers] == ["sample-01", "sample-02", "sample-03"]
    for a in answers:
        probs = a["extra"]["probs"]
        assert set(probs) == set("ABCDE")
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-4)
        assert a["chosen"] == max(probs, key=probs.get)
        assert a["correct"] == (a["chosen"] == a["gold"])
        assert a["prompt_tokens"] > 0
    run = store.run(summary["run_id"])
    assert run["status"] == "finished" and run["model"] == "smollm2"
    assert run["settings"]["method"] == "logprob" and run["settings"]["chat_template"] is True
    assert run["summary"]["accuracy"] == summary["accuracy"]


def test_generate_run_extracts_letters_and_scores_explanations(store, chat_model):
    dataset = ensure_sample(store)
    settings = ExamSettings(model="smollm2", method="generate", limit=3, max_tokens=24)
    summary = run_exam(store, dataset, settings)
    assert summary["status"] == "finished" and summary["answered"] == 3
    assert summary["rouge1"] is not None and 0.0 <= summary["rouge1"] <= 1.0
    assert "consistency" in summary and "by_type" in summary
    for a in store.answers(summary["run_id"]):
        assert a["response"]  # the model's text is kept
        assert a["completion_tokens"] > 0
        assert set(a["scores"]) == {"rouge1", "rouge2", "rougeL"}
        assert a["extra"]["rule"]


def test_cancel_then_resume(store, chat_model):
    dataset = ensure_sample(store)
    cancel = Cancel()
    first = run_exam(
        store,
        dataset,
        ExamSettings(model="smollm2", method="logprob", limit=3, shots=1),
        cancel=cancel,
        on_answer=lambda item, answer: cancel.set(),
    )
    assert first["status"] == "cancelled" and first["answered"] == 1
    assert store.run(first["run_id"])["status"] == "cancelled"
    asked = []
    second = run_exam(
        store,
        None,
        resume=first["run_id"],
        on_answer=lambda item, answer: asked.append(item["id"]),
    )
    assert second["run_id"] == first["run_id"]
    assert second["status"] == "finished" and second["answered"] == 3
    assert asked == ["sample-02", "sample-03"]  # the first answer was kept, not redone
    shots = {tuple(a["extra"]["shots"]) for a in store.answers(first["run_id"])}
    assert all(len(s) == 1 for s in shots)


def test_a_crash_fails_the_run_and_keeps_the_answers(store):
    dataset = ensure_sample(store)
    pool = ModelPool(settings_for=lambda name: {"n_ctx": 1024})
    try:
        with pool.lease("smollm2") as held:
            summary = run_exam(
                store,
                dataset,
                ExamSettings(model="smollm2", method="logprob", limit=3),
                pool=pool,
                on_answer=lambda item, answer: os.kill(held.pid, signal.SIGKILL),
            )
            assert pool.state("smollm2") == "crashed"
    finally:
        pool.close()
    assert summary["status"] == "failed" and "stopped" in summary["error"]
    assert summary["answered"] == 1
    run = store.run(summary["run_id"])
    assert run["status"] == "failed" and run["error"]


def test_long_prompts_drop_examples_to_fit(store, chat_model):
    dataset = ensure_sample(store)
    items = store.items(dataset)
    settings = ExamSettings(method="generate", shots=8, max_tokens=2500)
    assert uses_chat(chat_model)
    shots, text, n = fit_shots(chat_model, items[0], items[1:9], settings, True)
    assert 0 < len(shots) < 8 and n + 2500 <= chat_model.info["n_ctx"]
    assert shots == items[9 - len(shots) : 9]  # the first examples were dropped
    assert text.count("答案：") == len(shots)
