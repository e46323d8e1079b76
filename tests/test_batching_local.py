"""A local model decodes several sequences together (engine.models.batch): requests from
several threads in flight at once, each with its own settings, stop strings, budget, seed and
grammar; a cancel or a crash reaches the requests it should; with one slot the answers are
llama-cpp-python's own."""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.models.batch import BLOCK
from engine.models.catalog import resolve
from engine.models.local import LocalModel
from engine.models.protocol import Generation, ModelCrashed

SLOTS = 4
PROMPTS = [
    "Tell me a long story about a pharmacist.",
    "Count from one to twenty, one number per line.",
    "Explain what insulin does in the body.",
    "Write a short poem about the sea.",
]
SHOT = (
    "Question: Which vitamin deficiency causes scurvy?\nA. Vitamin A\nB. Vitamin B12\n"
    "C. Vitamin C\nD. Vitamin D\nE. Vitamin K\nAnswer: C\n\n"
)
ORGANS = ["produces insulin", "filters blood", "pumps blood", "stores bile", "makes bile"]
LETTERS = [" A", " B", " C", " D", " E"]
# One thread per model: the suite's other workers keep the other cores busy, and llama.cpp's
# threads spin while they wait (two threads beside a busy core decode several times slower).
# A model's numbers do not depend on its threads (tests/test_flash_attn.py).
THREADS = 1


def local(**options: Any) -> LocalModel:
    """The embedded chat model in a process of its own, on :data:`THREADS` threads."""
    return LocalModel(resolve().path, n_threads=THREADS, **options)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    with local(n_ctx=1024, slots=SLOTS) as m:
        yield m


def together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Each call in a thread of its own, all at once; their results (or exceptions)."""
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return out


def chat(m: LocalModel, text: str, **options: Any) -> Generation:
    return m.chat([{"role": "user", "content": text}], **options)


def test_the_model_says_how_many_sequences_it_decodes_at_once(model: LocalModel) -> None:
    assert model.info["slots"] == SLOTS
    assert model.capabilities.concurrency == SLOTS
    assert model.info["n_ctx"] == 1024  # each sequence's own context


def test_concurrent_requests_are_decoded_together_with_their_stops_and_budgets(
    model: LocalModel,
) -> None:
    budgets = [24, 12, 20, 16]
    stops = [[], ["\n"], [], [","]]
    marks: dict[int, list[float]] = {i: [] for i in range(SLOTS)}  # first piece, end

    def ask(i: int) -> Generation:
        stream = model.stream_chat(
            [{"role": "user", "content": PROMPTS[i]}], max_tokens=budgets[i], stop=stops[i]
        )
        for _ in stream:
            if not marks[i]:
                marks[i].append(time.monotonic())
        marks[i].append(time.monotonic())
        assert stream.result is not None
        return stream.result

    results = together([lambda i=i: ask(i) for i in range(SLOTS)])
    for i, g in enumerate(results):
        assert isinstance(g, Generation), g
        assert g.finish_reason in ("stop", "length")
        assert g.completion_tokens <= budgets[i]
        if g.finish_reason == "length":
            assert g.completion_tokens == budgets[i]
        for s in stops[i]:
            assert s not in g.text
    # Every sequence had begun before the first one ended: they were decoded together.
    assert max(m[0] for m in marks.values()) < min(m[-1] for m in marks.values())


def test_each_answer_says_its_wait_for_a_slot_and_what_it_cost_alone(model: LocalModel) -> None:
    from engine.models.usage import Meter

    budgets = [3, 3, 3, 3, 3, 10]  # six requests for four slots: two wait, the last ends alone
    prompts = [*PROMPTS, PROMPTS[0], PROMPTS[1]]
    calls = [lambda i=i: chat(model, prompts[i], max_tokens=budgets[i]) for i in range(6)]
    results = together(calls)
    meter = Meter()
    for g in results:
        assert isinstance(g, Generation), g
        assert g.wait_seconds is not None and 0 <= g.wait_seconds <= g.prompt_seconds
        assert g.read_seconds is not None and 0 < g.read_seconds <= g.prompt_seconds
        assert g.alone_tokens is not None and g.alone_tokens <= g.completion_tokens
        meter.add(g)
    waited = sorted(g.wait_seconds or 0 for g in results)
    assert waited[-1] > 0.01 and waited[-1] > 5 * waited[0]  # the last two waited for a slot
    totals = meter.totals()
    assert sum(g.alone_tokens or 0 for g in results) > 0  # the longest ended decoding alone
    assert totals["decode_alone_per_s"] > 0 and totals["first_token_alone_s"] > 0
    assert totals["slot_wait_s"] == pytest.approx(sum(waited) / 6, abs=1e-3)
    # A request alone: every token after the first (which reading the prompt gives) comes
    # from a pass that decoded it and nothing else (and the end of text, if it came).
    alone = chat(model, PROMPTS[1], max_tokens=4)
    ended = alone.finish_reason == "stop"
    assert alone.alone_tokens == alone.completion_tokens - (0 if ended else 1)
    assert (alone.alone_seconds or 0) > 0 and alone.wait_seconds == pytest.approx(0, abs=0.05)


def test_a_chat_comes_whole_and_each_step_sends_its_pieces_in_one_message(
    model: LocalModel,
) -> None:
    link = model._link
    assert link is not None
    seen: list[Any] = []
    deliver = link._deliver
    link._deliver = lambda message: (seen.append(message), deliver(message))[1]  # type: ignore[method-assign]
    try:
        whole = chat(model, PROMPTS[1], max_tokens=12)
        kinds = [m[1] for m in seen if not isinstance(m, list)]
        # the chat template (started, then rendered), then the generation: no piece
        assert kinds == ["started", "done", "done"]
        streamed = model.stream_chat([{"role": "user", "content": PROMPTS[1]}], max_tokens=12)
        assert "".join(streamed) == whole.text
        assert streamed.result is not None and streamed.result.text == whole.text
        seen.clear()
        pieces = together(
            [
                lambda p=p: list(model.stream_chat([{"role": "user", "content": p}], max_tokens=16))
                for p in PROMPTS
            ]
        )
    finally:
        link._deliver = deliver  # type: ignore[method-assign]
    n_pieces = sum(len(p) for p in pieces)
    lists = [m for m in seen if isinstance(m, list)]
    assert any(len({rid for rid, kind, _ in m if kind == "piece"}) > 1 for m in lists)
    assert len(seen) < n_pieces  # a step's pieces of several sequences came as one message


def test_a_sequence_ending_between_busy_ones_leaves_no_gap() -> None:
    """llama.cpp decodes sequences of consecutive ids in one pass: the last busy sequence
    moves into a slot freed between busy ones, and goes on as it would have."""
    options = {"max_tokens": 40, "temperature": 0.7, "seed": 3}
    with local(n_ctx=512, slots=3) as m:
        alone = chat(m, PROMPTS[2], **options).text
        m.restart()  # empty slots: the requests below take slots 0, 1, 2 in turn
        started = [threading.Event() for _ in range(3)]

        def ask(i: int) -> Generation:
            if i:
                assert started[i - 1].wait(120)
            budget = 80 if i == 0 else options["max_tokens"]
            stream = m.stream_chat(
                [{"role": "user", "content": PROMPTS[i]}], **{**options, "max_tokens": budget}
            )
            for k, _ in enumerate(stream):
                if k == 0:
                    started[i].set()
                    if i == 1:  # the middle one ends while the others decode
                        assert started[2].wait(120)
                        stream.cancel()
            assert stream.result is not None
            return stream.result

        first, middle, last = together([lambda i=i: ask(i) for i in range(3)])
        counts = m._call("counts")
    assert first.finish_reason in ("stop", "length") and middle.finish_reason == "cancelled"
    assert last.finish_reason == "length"
    assert counts["moved"] == 1  # the last into the middle's slot, once
    assert last.text == alone  # its cache moved with it


def test_a_turn_ended_between_busy_ones_keeps_its_cache_for_the_next_turn() -> None:
    """A consultation's patient answers, and its next question comes a moment later: the
    slot it ended in, between two busy ones, still holds its dialogue, so the next turn
    reads only what is new (the gap is closed only once the extra passes have cost as much
    as reading that cache again)."""
    case = "Here are your facts: " + ", ".join(f"fact {i} is {ORGANS[i % 5]}" for i in range(30))
    with local(n_ctx=1024, slots=3) as m:
        m.restart()  # empty slots: the requests below take slots 0, 1, 2 in turn
        started = [threading.Event() for _ in range(3)]
        answered = threading.Event()  # the patient's second turn is over
        turns: list[int] = []

        def long(i: int) -> Generation:
            if i:
                assert started[1].wait(120)
            stream = m.stream_chat([{"role": "user", "content": PROMPTS[i]}], max_tokens=120)
            going = True
            for k, _ in enumerate(stream):
                if k == 0:
                    started[i].set()
                if going and answered.is_set():  # busy for as long as the patient's turns
                    stream.cancel()
                    going = False
            assert stream.result is not None
            return stream.result

        def patient() -> Generation:
            assert started[0].wait(120)
            dialogue = [{"role": "user", "content": case + "\nHow old are you?"}]
            first = m.chat(dialogue, max_tokens=20)
            started[1].set()  # the third request takes slot 2
            assert started[2].wait(120)  # the patient's slot is now between busy ones
            before = m._call("counts")["reused"]
            dialogue += [
                {"role": "assistant", "content": first.text},
                {"role": "user", "content": "Where does it hurt?"},
            ]
            second = m.chat(dialogue, max_tokens=8)
            turns.extend([first.prompt_tokens, m._call("counts")["reused"] - before])
            answered.set()
            return second

        results = together([lambda: long(0), patient, lambda: long(2)])
    assert all(isinstance(g, Generation) for g in results), results
    first_prompt, reused = turns
    assert first_prompt > 4 * BLOCK
    assert reused >= first_prompt // BLOCK * BLOCK - BLOCK  # all but the last blocks


# llama.cpp is not bitwise batch-invariant: a sequence's logits decoded beside others differ
# in their last bits from its logits alone, which may flip a greedy choice between two
# near-tied tokens. A seeded sample is not moved by such differences: the texts compared
# across batches below are sampled.
SAMPLED = {"max_tokens": 24, "temperature": 0.7, "seed": 3}


def test_cancelling_one_sequence_leaves_the_others_running(model: LocalModel) -> None:
    expected = [chat(model, p, **SAMPLED).text for p in PROMPTS[:3]]
    started = threading.Event()

    def cancelled() -> Generation:
        stream = model.stream_chat([{"role": "user", "content": PROMPTS[0]}], max_tokens=200)
        for i, _ in enumerate(stream):
            if i == 2:
                started.set()
                stream.cancel()
        assert stream.result is not None
        return stream.result

    def other(p: str) -> Generation:
        started.wait(60)
        return chat(model, p, **SAMPLED)

    stopped, *others = together([cancelled, lambda: other(PROMPTS[1]), lambda: other(PROMPTS[2])])
    assert stopped.finish_reason == "cancelled" and stopped.completion_tokens < 50
    assert [g.finish_reason for g in others] == ["length", "length"]
    assert [g.text for g in others] == expected[1:]


def test_each_sequence_samples_with_its_own_seed(model: LocalModel) -> None:
    def sample(seed: int) -> str:
        return chat(model, PROMPTS[3], max_tokens=16, temperature=0.9, seed=seed).text

    first = together([lambda: sample(7), lambda: sample(8), lambda: sample(7)])
    assert first[0] == first[2] == sample(7)  # the same seed, at once or alone
    assert first[1] == sample(8)
    assert first[0] != first[1]


def test_a_grammar_holds_only_its_own_sequence(model: LocalModel) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["A", "B", "C"]}},
        "required": ["answer"],
    }
    free_alone = chat(model, PROMPTS[2], **SAMPLED).text
    held, free = together(
        [
            lambda: chat(
                model, "Pick A, B or C. Reply in JSON.", max_tokens=20, json_schema=schema
            ),
            lambda: chat(model, PROMPTS[2], **SAMPLED),
        ]
    )
    assert json.loads(held.text)["answer"] in ("A", "B", "C")
    assert free.text == free_alone and not free.text.lstrip().startswith("{")


def test_log_probabilities_of_many_questions_at_once_equal_one_at_a_time(
    model: LocalModel,
) -> None:
    prompts = [
        SHOT * 4 + f"Question: Which organ {o}?\nA. Liver\nB. Pancreas\nC. Kidney\n"
        "D. Heart\nE. Gallbladder\nAnswer:"
        for o in ORGANS
    ]
    assert model.count_tokens(SHOT * 4) > 2 * BLOCK  # a shared prefix of whole blocks
    at_once = together([lambda p=p: model.logprobs(p, LETTERS) for p in prompts])
    alone = [model.logprobs(p, LETTERS, reuse_prefix=False) for p in prompts]
    for got, want in zip(at_once, alone, strict=True):
        assert isinstance(got, dict), got
        assert got.keys() == want.keys()
        for letter in LETTERS:
            assert math.isclose(got[letter], want[letter], abs_tol=1e-3)
    multi = together(
        [lambda: model.logprobs("The capital of France is", [" Paris", " the city of Paris"])] * 2
    )
    assert (
        multi[0]
        == multi[1]
        == model.logprobs("The capital of France is", [" Paris", " the city of Paris"])
    )


def test_with_flash_attention_an_answer_does_not_depend_on_what_else_is_decoded() -> None:
    """llama.cpp splits a batch that mixes a prompt block with other sequences' next tokens
    into other micro-batches, which with flash attention changes the block's numbers: each
    prompt block is read in a pass of its own, so log-probabilities read while another
    sequence generates equal those read alone, to the bit."""
    prompt = SHOT * 2 + "Question: Which organ produces insulin?\nA. Liver\nB. Pancreas\nAnswer:"
    with local(n_ctx=1024, slots=2, flash_attn=True) as m:
        assert m.info["flash_attn"] is True
        alone = m.logprobs(prompt, LETTERS, reuse_prefix=False)

        def meanwhile() -> dict[str, float]:
            time.sleep(0.5)  # the other sequence is generating by then
            return m.logprobs(prompt, LETTERS, reuse_prefix=False)

        story = "Once upon a time, in a small town by the sea, there lived a pharmacist who"
        long = lambda: m.complete(story, max_tokens=120, temperature=0)  # noqa: E731
        generated, during = together([long, meanwhile])
    assert isinstance(generated, Generation) and generated.completion_tokens > 30
    assert during == alone


def test_a_few_shot_prefix_is_read_once_and_copied_to_the_other_slots() -> None:
    prompts = [
        SHOT * 4 + f"Question: Which organ {o}?\nA. Liver\nB. Pancreas\nAnswer:"
        for o in ORGANS[:SLOTS]
    ]
    with local(n_ctx=1024, slots=SLOTS) as m:
        sizes = [len(m.tokenize(p, add_bos=True)) for p in prompts]
        shared = len(m.tokenize(SHOT * 4, add_bos=True)) // BLOCK * BLOCK
        before = m._call("counts")
        answers = together([lambda p=p: m.logprobs(p, LETTERS) for p in prompts])
        assert all(isinstance(a, dict) for a in answers), answers
        counts = m._call("counts")
    assert counts["copied"] - before["copied"] == SLOTS - 1
    read = counts["decoded"] - before["decoded"]
    assert read == sum(sizes) - (SLOTS - 1) * shared  # the prefix's blocks once


def test_one_slot_answers_as_llama_cpp_python_reading_the_prompt_in_blocks() -> None:
    """The answers a model gave before it decoded several sequences: llama-cpp-python's own
    generation after the prompt read in blocks of BLOCK tokens."""
    import llama_cpp

    path = resolve().path
    prompt = "The three most common causes of chest pain are"
    llm = llama_cpp.Llama(
        model_path=str(path), n_ctx=1024, n_threads=THREADS, seed=0, verbose=False
    )
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    for i in range(0, len(tokens), BLOCK):
        llm.eval(tokens[i : i + BLOCK])
    out = []
    for token in llm.generate([], reset=False, temp=0.0, min_p=0.0, repeat_penalty=1.0):
        if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token) or len(out) == 24:
            break
        out.append(token)
    expected = llm.detokenize(out).decode("utf-8", "replace")
    llm.close()
    with LocalModel(path, n_ctx=1024, n_threads=THREADS, slots=1, n_gpu_layers=0) as m:
        assert m.info["slots"] == 1 and m.capabilities.concurrency == 1
        assert m.info["flash_attn"] is False  # the default
        assert m.complete(prompt, max_tokens=24, temperature=0).text == expected


def test_a_crash_reaches_every_waiting_request_and_restart_works() -> None:
    with local(n_ctx=512, slots=3) as m:
        pid = m.pid
        assert pid is not None
        running = threading.Barrier(4, timeout=120)

        def long_story() -> Generation:
            stream = m.stream_chat([{"role": "user", "content": PROMPTS[0]}], max_tokens=400)
            for i, _ in enumerate(stream):
                if i == 1:
                    running.wait()
            return stream.text()

        def kill() -> None:
            running.wait()
            os.kill(pid, signal.SIGKILL)

        *waiters, _ = together([long_story, long_story, long_story, kill])
        for exc in waiters:
            assert isinstance(exc, ModelCrashed) and "signal 9" in str(exc), exc
        with pytest.raises(ModelCrashed):
            chat(m, PROMPTS[1], max_tokens=4)
        m.restart()
        assert chat(m, "What is the capital of France?", max_tokens=8).text
