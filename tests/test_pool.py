"""The model pool with the real embedded models: several models at once, shared leases,
eviction under a memory bound, restart after a crash, and CPU threads shared among the
models working at the same time."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from engine.models.load import LoadSettings
from engine.models.pool import ModelPool
from engine.models.protocol import ChatModel

pytestmark = pytest.mark.slow
HI = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def pool() -> Iterator[ModelPool]:
    """A pool of 2 cores sharing them among its own models only: the suite's other workers'
    models (tests/conftest.py) do not take its threads."""
    p = ModelPool(load=LoadSettings(n_ctx=1024), cores=2, machine_wide=False)
    yield p
    p.close()


def test_two_models_at_once_and_shared_leases(pool):
    with pool.lease("smollm2") as a, pool.lease("gemma3-270m") as b, pool.lease(None) as c:
        assert isinstance(a, ChatModel) and isinstance(b, ChatModel)
        assert a.pid != b.pid and a.pid == c.pid  # the default model is smollm2, once
        assert a.chat(HI, max_tokens=4).text and b.complete("Hello", max_tokens=4).text
        leases = {m["name"]: m["leases"] for m in pool.status()}
        assert leases == {"smollm2": 2, "gemma3-270m": 1}
    assert {m["name"]: m["leases"] for m in pool.status()} == {"smollm2": 0, "gemma3-270m": 0}
    assert pool.state("smollm2") == "ready"  # idle models stay loaded for the next lease


def test_idle_models_are_evicted_past_the_memory_bound(pool):
    pool.max_bytes = 1  # nothing idle may stay beside a model that loads
    events: list[tuple[str, str]] = []
    pool.subscribe(lambda e: events.append((e.kind, e.name)))
    with pool.lease("smollm2") as held:
        with pool.lease("gemma3-270m"):
            pass
        assert pool.state("gemma3-270m") == "unloaded"  # idle, over the bound: closed
        assert pool.state("smollm2") == "ready" and held.alive  # held: never closed
    assert ("unloaded", "gemma3-270m") in events
    assert pool.state("smollm2") == "unloaded"


def test_a_crashed_model_restarts_on_the_next_lease(pool):
    with pool.lease("smollm2") as model:
        first = model.pid
        os.kill(first, signal.SIGKILL)
        with pytest.raises(Exception, match="stopped"):
            model.chat(HI, max_tokens=4)
        assert pool.state("smollm2") == "crashed"
    with pool.lease("smollm2") as again:
        assert again.pid != first and again.chat(HI, max_tokens=4).text
        assert pool.state("smollm2") == "ready"


def test_models_working_at_once_share_the_cores(pool):
    with pool.lease("smollm2") as a, pool.lease("gemma3-270m") as b:
        seen: list[dict[str, int]] = []

        def watch(event) -> None:
            if event.kind == "busy":
                seen.append({m["name"]: m["threads"] for m in pool.status() if m["working"]})

        pool.subscribe(watch)
        start = threading.Barrier(2)

        def work(model, call) -> None:
            start.wait()
            call(model)

        jobs = [
            threading.Thread(target=work, args=(a, lambda m: m.chat(HI, max_tokens=48))),
            threading.Thread(target=work, args=(b, lambda m: m.complete("Once", max_tokens=48))),
        ]
        for t in jobs:
            t.start()
        for t in jobs:
            t.join()
        both = [s for s in seen if len(s) == 2]
        assert both and all(s == {"smollm2": 1, "gemma3-270m": 1} for s in both)
        a.chat(HI, max_tokens=2)  # alone again: its whole setting back
        assert {m["name"]: m["threads"] for m in pool.status()}["smollm2"] == 2
