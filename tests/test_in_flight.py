"""The one scheduler (engine.core.progress.in_flight) the run loop answers items with and a
rescore scores answers with: in order one at a time, several at once in the order they
finish, a failure raised once those in flight are given, Cancel ending those in flight."""

from __future__ import annotations

import threading
import time

import pytest

from engine.core.progress import Cancel, Cancelled, in_flight


def test_one_at_a_time_keeps_the_order_and_several_give_every_result() -> None:
    assert [d for _, d in in_flight(lambda n: n * 2, [3, 1, 2])] == [6, 2, 4]
    at_once = in_flight(lambda n: time.sleep(0.01 * n) or n, [3, 1, 2], concurrency=3)
    assert sorted(d for _, d in at_once) == [1, 2, 3]


def test_a_failure_stops_new_work_and_is_raised_after_those_in_flight() -> None:
    started: list[int] = []

    def work(n: int) -> int:
        started.append(n)
        if n == 1:
            raise ValueError("item 1 failed")
        time.sleep(0.1)
        return n

    given = []
    with pytest.raises(ValueError, match="item 1 failed"):
        for _, done in in_flight(work, range(1, 20), concurrency=2):
            given.append(done)
    assert given == [2] and sorted(started) == [1, 2]


def test_cancel_stops_those_in_flight_and_gives_nothing_cut_short() -> None:
    cancel, released = Cancel(), threading.Event()

    def work(n: int) -> int:
        if n == 0:
            cancel.set()
            return n
        released.wait(5)  # a model's request, ended by stop
        return n

    given = []
    with pytest.raises(Cancelled):
        for _, done in in_flight(work, range(10), 3, cancel, stop=released.set):
            given.append(done)
    assert given == [] and released.is_set()
