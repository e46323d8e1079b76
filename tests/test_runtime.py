"""The model runtime: a real GGUF model served from its own process."""

from __future__ import annotations

import _thread
import math
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from engine.models.catalog import resolve
from engine.models.hardware import physical_cores
from engine.models.local import LocalModel
from engine.models.protocol import ModelCrashed, ModelError

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    """A LocalModel of this module's own: the shared ``chat_model`` is a model pool's lease,
    and the pool may change its threads. One thread: the suite's other workers keep the other
    cores busy, and llama.cpp's threads spin while they wait."""
    with LocalModel(resolve().path, n_ctx=4096, n_threads=1) as m:
        yield m


def test_chat_is_deterministic_and_reports_its_cost(model):
    first = model.chat(QUESTION, max_tokens=16, temperature=0)
    second = model.chat(QUESTION, max_tokens=16, temperature=0)
    assert first.text == second.text
    assert "Paris" in first.text
    assert first.prompt_tokens > 10
    assert 0 < first.completion_tokens <= 16
    assert first.tokens_per_second > 0
    assert first.finish_reason in ("stop", "length")


def test_seeded_sampling_repeats(model):
    runs = [model.chat(QUESTION, max_tokens=12, temperature=0.9, seed=7).text for _ in range(2)]
    assert runs[0] == runs[1]


def test_the_chat_template_comes_from_the_gguf(model):
    prompt = model.chat_prompt(QUESTION)
    assert "<|im_start|>user" in prompt and prompt.endswith("<|im_start|>assistant\n")


def test_streaming_yields_pieces_that_make_the_text(model):
    stream = model.stream_chat(QUESTION, max_tokens=16)
    pieces = list(stream)
    assert len(pieces) >= 2
    assert "".join(pieces) == stream.result.text


def test_cancel_stops_a_stream_mid_way(model):
    stream = model.stream_chat(
        [{"role": "user", "content": "Tell me a long story about a pharmacist."}], max_tokens=300
    )
    for i, _ in enumerate(stream):
        if i == 3:
            stream.cancel()
    assert stream.result.finish_reason == "cancelled"
    assert stream.result.completion_tokens < 20
    # The model is still usable afterwards.
    assert "Paris" in model.chat(QUESTION, max_tokens=16).text


def test_abandoned_stream_leaves_the_model_clean(model):
    stream = iter(
        model.stream_chat(
            [{"role": "user", "content": "Count from one to one hundred."}], max_tokens=200
        )
    )
    next(stream)
    del stream
    assert "Paris" in model.chat(QUESTION, max_tokens=16).text


def test_stop_strings_end_generation(model):
    g = model.chat(
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


def test_letter_logprobs_form_a_distribution(model):
    lp = model.logprobs(_letter_prompt(model, 0), [" A", " B", " C", " D", " E"])
    assert set(lp) == {" A", " B", " C", " D", " E"}
    assert all(v <= 0 for v in lp.values())
    assert sum(math.exp(v) for v in lp.values()) <= 1.0 + 1e-9


def test_logprobs_are_identical_across_calls_and_with_or_without_prefix_reuse(model):
    prompt = _letter_prompt(model, 6)  # long enough for whole cached blocks to be reused
    assert model.count_tokens(prompt) > 200
    letters = [" A", " B", " C", " D", " E"]
    first = model.logprobs(prompt, letters)
    again = model.logprobs(prompt, letters)
    fresh = model.logprobs(prompt, letters, reuse_prefix=False)
    assert first == again == fresh
    other = prompt.replace("Which organ produces insulin?", "Which organ filters blood?")
    reused = model.logprobs(other, letters)  # after `prompt`: the prefix is reused
    assert reused == model.logprobs(other, letters, reuse_prefix=False)


def test_multi_token_continuations_are_scored_as_a_whole(model):
    lp = model.logprobs("The capital of France is", [" Paris", " the city of Paris"])
    assert lp[" Paris"] > lp[" the city of Paris"]


def test_a_prompt_longer_than_the_context_is_refused():
    with LocalModel(resolve().path, n_ctx=256) as model, pytest.raises(ModelError, match="context"):
        model.complete("word " * 400, max_tokens=4)


def test_threads_default_to_the_physical_cores():
    with LocalModel(resolve().path, n_ctx=256) as model:
        assert model.settings.n_threads == physical_cores()
        assert model.info["n_threads"] == physical_cores()


def test_a_keyboard_interrupt_while_waiting_cancels_the_request(model):
    pid = model.pid
    story = [{"role": "user", "content": "Tell me a long story about a pharmacist."}]
    timer = threading.Timer(0.5, _thread.interrupt_main)  # Ctrl-C, as far as Python sees
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in range(100):
            model.chat(story, max_tokens=300)
    timer.join()
    assert model.pid == pid  # the model process lived through it
    assert "Paris" in model.chat(QUESTION, max_tokens=16).text


def test_a_new_request_settles_a_stream_left_half_read(model):
    # An exception in a loop over a stream (a Ctrl-C, say) may keep the stream referenced
    # by its traceback: the next request of this thread cancels and drains it first.
    stream = model.stream_chat(
        [{"role": "user", "content": "Count from one to one hundred."}], max_tokens=200
    )
    pieces = iter(stream)
    next(pieces)
    assert "Paris" in model.chat(QUESTION, max_tokens=16).text
    assert list(pieces) == []  # the abandoned stream just ends
    with pytest.raises(ModelError, match="abandoned"):
        stream.text()


def test_a_killed_model_process_raises_model_crashed_and_restarts():
    model = LocalModel(resolve().path, n_ctx=512, n_threads=1)
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
