"""CPU threads of a model: the physical cores by default, changed on the fly by set_threads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from engine.models.catalog import resolve
from engine.models.hardware import available_cores, physical_cores
from engine.models.local import LocalModel

STORY = [{"role": "user", "content": "Tell me a long story about a pharmacist."}]
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    """A LocalModel of this module's own: the shared ``chat_model`` is a model pool's lease,
    and the pool may change its threads."""
    with LocalModel(resolve().path, n_ctx=1024) as m:
        yield m


def _wait_for_threads(model: LocalModel, n: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while model.threads != n and time.monotonic() < deadline:
        time.sleep(0.02)
    return model.threads


def test_physical_cores_never_exceed_the_logical_ones():
    n = physical_cores()
    assert 1 <= n <= available_cores() <= (os.cpu_count() or 1)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_physical_cores_count_only_the_cpus_this_process_may_use():
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from engine.models.hardware import physical_cores; print(physical_cores())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "1"


def test_set_threads_is_applied_during_a_generation(model):
    before = model.threads
    try:
        model.set_threads(2)
        assert _wait_for_threads(model, 2) == 2  # applied while idle
        seen = []
        stream = model.stream_chat(STORY, max_tokens=48, temperature=0)
        for i, _ in enumerate(stream):
            if i == 2:
                model.set_threads(1)
            seen.append(model.threads)
        assert seen[0] == 2
        assert seen[-1] == 1  # switched at a decode step, before the generation ended
        assert stream.result.completion_tokens > 5
        assert model.info["n_threads"] == model.settings.n_threads  # as configured
    finally:
        model.set_threads(before)
        _wait_for_threads(model, before)


def test_greedy_output_is_the_same_with_one_or_two_threads(model):
    before = model.threads
    results = {}
    try:
        for n in (1, 2):
            model.set_threads(n)
            text = model.chat(STORY, max_tokens=32, temperature=0).text
            lp = model.logprobs("The capital of France is", [" Paris", " Rome"])
            assert model.threads == n
            results[n] = (text, lp)
    finally:
        model.set_threads(before)
    assert results[1] == results[2]
    assert results[1][0]


def test_set_threads_refuses_nonsense(model):
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError):
            model.set_threads(bad)


def test_the_thread_count_survives_a_restart():
    model = LocalModel(resolve().path, n_ctx=512, n_threads=2)
    try:
        model.set_threads(1)
        model.restart()
        assert model.threads == 1  # applied before the model reported ready
        assert model.info["n_threads"] == 2
        assert "Paris" in model.chat(QUESTION, max_tokens=8).text
    finally:
        model.close()
