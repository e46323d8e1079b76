"""Stop reaches a model's request in flight at once, and the answer it cuts short is not kept
as the item's answer."""

from __future__ import annotations

import threading
import time

from engine.core.progress import Cancel
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel
from engine.store.store import Store


def test_stop_cuts_a_slow_request_short_and_keeps_no_cut_answer(tmp_path, scripted_pool):
    store = Store(tmp_path / "m.db")
    slow = ScriptedModel("slow", replies="答案：B", delay=30.0)
    cancel = Cancel()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    summary = run(
        store,
        "exam",
        ensure_sample(store),
        {"model": "slow", "limit": 3},
        pool=scripted_pool(slow),
        cancel=cancel,
    )
    assert time.monotonic() - started < 5
    assert summary["status"] == "cancelled"
    assert store.answers(summary["run_id"]) == []  # the cut-off reply is not an answer
    store.close()
