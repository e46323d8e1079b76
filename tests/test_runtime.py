"""The model runtime: a real GGUF model served from its own process."""

from __future__ import annotations

import math
import os
import signal

import pytest

from engine.catalog import resolve
from engine.runtime import LocalModel, ModelCrashed, ModelError, available_cores

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


def test_chat_is_deterministic_and_reports_its_cost(chat_model):
    first = chat_model.chat(QUESTION, max_tokens=16, temperature=0)
    second = chat_model.chat(QUESTION, max_tokens=16, temperature=0)
    assert first.text == second.text
    assert "Paris" in first.text
    assert first.prompt_tokens > 10
    assert 0 < first.completion_tokens <= 16
    assert first.tokens_per_second > 0
    assert first.finish_reason in ("stop", "length")


def test_seeded_sampling_repeats(chat_model):
    runs = [
        chat_model.chat(QUESTION, max_tokens=12, temperature=0.9, seed=7).text for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_the_chat_template_comes_from_the_gguf(chat_model):
    prompt = chat_model.chat_prompt(QUESTION)
    assert "<|im_start|>user" in prompt and prompt.endswith("<|im_start|>assistant\n")


def test_streaming_yields_pieces_that_make_the_text(chat_model):
    stream = chat_model.stream_chat(QUESTION, max_tokens=16)
    pieces = list(stream)
    assert len(pieces) >= 2
    assert "".join(pieces) == stream.result.text


def test_cancel_stops_a_stream_mid_way(chat_model):
    stream = chat_model.stream_chat(
        [{"role": "user", "content": "Tell me a long story about a pharmacist."}], max_tokens=300
    )
    for i, _ in enumerate(stream):
        if i == 3:
            stream.cancel()
    assert stream.result.finish_reason == "cancelled"
    assert stream.result.completion_tokens < 20
    # The model is still usable afterwards.
    assert "Paris" in chat_model.chat(QUESTION, max_tokens=16).text


def test_abandoned_stream_leaves_the_model_clean(chat_model):
    stream = iter(
        chat_model.stream_chat(
            [{"role": "user", "content": "Count from one to one hundred."}], max_tokens=200
        )
    )
    next(stream)
    del stream
    assert "Paris" in chat_model.chat(QUESTION, max_tokens=16).text


def test_stop_strings_end_generation(chat_model):
    g = chat_model.chat(
        [{"role": "user", "content": "List three colours, one per line."}],
        max_tokens=60,
        stop=["\n"],
    )
    assert "\n" not in g.text
    assert g.finish_reason == "stop"


def _letter_prompt(model: LocalModel, shots: int) -> str:
    example = (
        "Question: Which vitamin deficiency causes scurvy?\nA. Vitamin A\nB. Vitamin B12\n"
        "C. Vitamin C\nD. Vitamin D\nE. Vitamin K\nAnswer: C\n\n"
    )
    question = (
        "Question: Which organ produces insulin?\nA. Liver\nB. Pancreas\nC. Kidney\n"
        "D. Spleen\nE. Heart\nAnswer:"
    )
    return example * shots + question


def test_letter_logprobs_form_a_distribution(chat_model):
    lp = chat_model.logprobs(_letter_prompt(chat_model, 0), [" A", " B", " C", " D", " E"])
    assert set(lp) == {" A", " B", " C", " D", " E"}
    assert all(v <= 0 for v in lp.values())
    assert sum(math.exp(v) for v in lp.values()) <= 1.0 + 1e-9


def test_logprobs_are_identical_across_calls_and_with_or_without_prefix_reuse(chat_model):
    prompt = _letter_prompt(chat_model, 6)  # long enough for whole cached blocks to be reused
    assert chat_model.count_tokens(prompt) > 200
    letters = [" A", " B", " C", " D", " E"]
    first = chat_model.logprobs(prompt, letters)
    again = chat_model.logprobs(prompt, letters)
    fresh = chat_model.logprobs(prompt, letters, reuse_prefix=False)
    assert first == again == fresh
    other = prompt.replace("Which organ produces insulin?", "Which organ filters blood?")
    reused = chat_model.logprobs(other, letters)  # after `prompt`: the prefix is reused
    assert reused == chat_model.logprobs(other, letters, reuse_prefix=False)


def test_multi_token_continuations_are_scored_as_a_whole(chat_model):
    lp = chat_model.logprobs("The capital of France is", [" Paris", " the city of Paris"])
    assert lp[" Paris"] > lp[" the city of Paris"]


def test_a_prompt_longer_than_the_context_is_refused():
    with LocalModel(resolve().path, n_ctx=256) as model, pytest.raises(ModelError, match="context"):
        model.complete("word " * 400, max_tokens=4)


def test_threads_default_to_every_available_core(chat_model):
    assert chat_model.settings.n_threads == available_cores()
    assert chat_model.info["n_threads"] == available_cores()


def test_a_killed_model_process_raises_model_crashed_and_restarts():
    model = LocalModel(resolve().path, n_ctx=512)
    try:
        os.kill(model.pid, signal.SIGKILL)
        with pytest.raises(ModelCrashed, match="signal 9"):
            model.chat(QUESTION, max_tokens=4)
        model.restart()
        assert model.chat(QUESTION, max_tokens=8).text
    finally:
        model.close()


def test_a_native_crash_inside_a_request_raises_model_crashed():
    model = LocalModel(resolve().path, n_ctx=512)
    try:
        with pytest.raises(ModelCrashed):
            model._crash_for_test()
        assert not model.alive
        model.restart()
        assert model.alive
    finally:
        model.close()
