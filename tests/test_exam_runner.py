"""Exam runs: a real model reading letter probabilities; scripted models
(:mod:`engine.models.scripted`) for generated answers, resume, a crash and the examples
dropped to fit the context."""

from __future__ import annotations

import pytest

from engine.core.progress import Cancel
from engine.exam.dataset import ensure_sample
from engine.exam.runner import ExamSettings, run_exam
from engine.models.scripted import ScriptedModel

GENERATED = "答案：B\n解析：华法林是抗凝药，通过抑制维生素K依赖的凝血因子起效。"


@pytest.mark.slow
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


def test_generate_run_extracts_letters_and_scores_explanations(store, scripted_pool):
    model = ScriptedModel("writer", replies=GENERATED)
    pool = scripted_pool(model)
    dataset = ensure_sample(store)
    settings = ExamSettings(model="writer", method="generate", limit=3, max_tokens=24)
    summary = run_exam(store, dataset, settings, pool=pool)
    assert summary["status"] == "finished" and summary["answered"] == 3
    assert summary["rouge1"] is not None and 0.0 < summary["rouge1"] <= 1.0
    assert "consistency" in summary and "by_type" in summary
    for a in store.answers(summary["run_id"]):
        assert a["response"] == GENERATED and a["chosen"] == "B"  # the model's text is kept
        assert a["completion_tokens"] > 0 and a["extra"]["finish_reason"] == "stop"
        assert set(a["scores"]) == {"rouge1", "rouge2", "rougeL"}
        assert a["extra"]["rule"]
    assert [r.kind for r in model.requests] == ["chat"] * 3  # through the chat template
    assert model.requests[0].options["max_tokens"] == 24


def test_cancel_then_resume(store, scripted_pool):
    pool = scripted_pool()
    dataset = ensure_sample(store)
    cancel = Cancel()
    first = run_exam(
        store,
        dataset,
        ExamSettings(method="logprob", limit=3, shots=1),
        pool=pool,
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
        pool=pool,
        on_answer=lambda item, answer: asked.append(item["id"]),
    )
    assert second["run_id"] == first["run_id"]
    assert second["status"] == "finished" and second["answered"] == 3
    assert asked == ["sample-02", "sample-03"]  # the first answer was kept, not redone
    shots = {tuple(a["extra"]["shots"]) for a in store.answers(first["run_id"])}
    assert all(len(s) == 1 for s in shots)


def test_a_crash_fails_the_run_and_keeps_the_answers(store, scripted_pool):
    pool = scripted_pool(ScriptedModel(crash_on={2}))
    dataset = ensure_sample(store)
    summary = run_exam(store, dataset, ExamSettings(method="logprob", limit=3), pool=pool)
    assert pool.state("scripted") == "crashed"
    assert summary["status"] == "failed" and "stopped" in summary["error"]
    assert summary["answered"] == 1
    run = store.run(summary["run_id"])
    assert run["status"] == "failed" and run["error"]


def test_a_question_the_model_refuses_is_wrong_with_its_reason(store, scripted_pool):
    pool = scripted_pool(ScriptedModel(errors={2: "the prompt has 9000 tokens"}))
    summary = run_exam(store, ensure_sample(store), ExamSettings(method="logprob", limit=3),
                       pool=pool)  # fmt: skip
    assert summary["status"] == "finished" and summary["n"] == 3
    stored = store.answers(summary["run_id"])
    assert len(stored) == 3  # the run went on past the refused question
    refused = stored[1]
    assert refused["chosen"] is None and refused["correct"] in (False, 0)
    assert refused["extra"]["error"] == "the prompt has 9000 tokens"


def test_a_run_summary_gives_no_answers_by_reason_the_cut_off_share_and_chance(
    store, scripted_pool
):
    """The reproduction: SmolLM2 copies the option list back; such a reply is no answer,
    and the summary says how many replies were echoes or cut off, and where chance lies."""
    replies = [
        "选项A：口服液\n选项B：吸入制剂\n选项C：贴剂\n选项D：喷雾剂",  # echo
        "答案：B 解析： 吸入制剂 为 肺部 给药 起效 快 适用 于",  # an answer, then cut
        "吸入制剂 为 肺部 给药 起效 快 适用 于 哮喘 急性 发作",  # cut before any answer
        "答案：F",  # a letter past the five options
    ]
    pool = scripted_pool(ScriptedModel("writer", replies=replies))
    settings = ExamSettings(model="writer", method="generate", limit=4, max_tokens=8)
    summary = run_exam(store, ensure_sample(store), settings, pool=pool)
    answers = store.answers(summary["run_id"])
    assert [a["extra"].get("no_answer") for a in answers] == [
        "echo", None, "cut_off", "out_of_range"
    ]  # fmt: skip
    assert answers[1]["chosen"] == "B" and answers[1]["extra"]["finish_reason"] == "length"
    assert summary["no_answer"] == {"echo": 25.0, "out_of_range": 25.0, "cut_off": 25.0}
    assert summary["cut_off"] == 50.0 and summary["chance"] == {"accuracy": 20.0}
    from engine.reports import build_report, render

    text = render(build_report(store, [summary["run_id"]]), "text")
    assert "No answer (%)" in text and "Chance (%)" in text
    assert "lists the options without choosing one 25.0%" in text
