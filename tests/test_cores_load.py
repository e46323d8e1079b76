"""The cores other programs keep busy are left out of a working model's threads: llama.cpp's
threads spin while they wait, so a thread on a core another program uses slows every other
thread of the model. The busy time of medexam's own model processes is not another program's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
from test_cores_shared import Working, wait_for

from engine.models.cores import SharedCores
from engine.models.cores_load import Reading, busy_elsewhere, cores_held, reading, thread_share
from engine.models.load import LoadSettings
from engine.models.pool import ModelPool

BUSY_LOOP = "while True: pass"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    monkeypatch.setenv("MEDEXAM_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "machine")  # other programs' load counts
    return tmp_path


@pytest.fixture
def hog() -> Iterator[subprocess.Popen[bytes]]:
    """Another program keeping one core busy (pinned to one CPU where the system allows)."""
    child = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(child.pid, {max(os.sched_getaffinity(0))})
    yield child
    child.kill()
    child.wait(timeout=10)


def test_cores_other_programs_keep_busy_are_left_out():
    quiet = busy_elsewhere(Reading(0.0, 100.0), Reading(2.0, 100.2))  # 0.1 CPU busy
    assert quiet == pytest.approx(0.1) and cores_held(quiet) == 0
    assert thread_share(cores=2, working=1, others=0, held=cores_held(quiet)) == 2
    hogged = busy_elsewhere(Reading(0.0, 100.0), Reading(1.0, 101.0))  # a busy loop
    assert hogged == pytest.approx(1.0) and cores_held(hogged) == 1
    assert thread_share(cores=2, working=1, others=0, held=1) == 1
    assert cores_held(0.5) == 1  # half a core taken is too much for spinning threads
    assert thread_share(cores=8, working=2, others=1, held=2) == 2  # (8 - 2) // 3
    assert thread_share(cores=2, working=1, others=0, held=5) == 1  # never less than one


def test_medexams_own_model_processes_are_not_other_programs():
    # Both CPUs busy: 1.8 of them by model process 42 (its two spinning threads), 0.2 else.
    before = Reading(0.0, 100.0, {42: 10.0})
    after = Reading(1.0, 102.0, {42: 11.8})
    assert busy_elsewhere(before, after) == pytest.approx(0.2)
    assert thread_share(2, 1, 0, cores_held(busy_elsewhere(before, after))) == 2
    # A model process read only once (it just started) is not subtracted: unknown time.
    assert busy_elsewhere(Reading(0.0, 100.0), after) == pytest.approx(2.0)
    assert busy_elsewhere(after, after) == 0.0 and busy_elsewhere(after, before) == 0.0


class Machine:
    """A machine seen through ``read``: each reading half a second after the last, the model
    process ``worker`` keeping ``mine`` CPUs busy and other programs ``other``."""

    def __init__(self, worker: int) -> None:
        self.worker, self.mine, self.other = worker, 1.0, 0.0
        self.at, self.busy, self.spent = 0.0, 0.0, 0.0
        self.asked: list[set[int]] = []
        self.lock = threading.Lock()

    def read(self, ours: Collection[int]) -> Reading:
        with self.lock:
            self.asked.append(set(ours))
            self.at += 0.5
            self.busy += 0.5 * (self.mine + self.other)
            self.spent += 0.5 * self.mine
            return Reading(self.at, self.busy, {self.worker: self.spent} if ours else {})


def test_the_load_is_read_again_while_a_model_works():
    machine = Machine(worker=4242)
    changes: list[int] = []
    here = SharedCores(lambda: changes.append(here.share(2, 1)), read=machine.read, poll=0.05)
    try:
        here.start("mine", worker=4242)
        assert wait_for(lambda: len(machine.asked) >= 3)
        assert here.share(2, 1) == 2 and changes == []  # only its own model works
        # its model process and itself left out (with any model this process started)
        assert any({4242, os.getpid()} <= asked for asked in machine.asked)
        machine.other = 1.0  # a program takes a core
        assert wait_for(lambda: changes == [1]) and here.share(2, 1) == 1
        machine.other = 0.1
        assert wait_for(lambda: changes == [1, 2])
    finally:
        here.close()
    assert wait_for(lambda: not here.watching)


def test_a_waiting_model_process_and_the_pools_own_are_not_other_programs():
    # Two models of one pool take turns (a run at 1 slot, then at 8): the one that waits may
    # still be busy a moment (its last step, its threads' spin); were it read as another
    # program, the working one would lose a thread (a batch of 8 ran at 1 thread this way).
    machine = Machine(worker=4242)
    here = SharedCores(lambda: None, read=machine.read, poll=0.05, linger=0.05)
    try:
        here.start("one", worker=4242)
        here.stop("one")
        assert wait_for(lambda: not here.watching)  # its entry gone
        machine.asked.clear()
        here.start("eight", worker=4343)
        assert wait_for(lambda: len(machine.asked) >= 2)
        assert all({4242, 4343, os.getpid()} <= asked for asked in machine.asked)
    finally:
        here.close()


def test_medexam_processes_only_when_so_set(monkeypatch):
    machine = Machine(worker=4242)
    machine.other = 2.0
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "medexam")
    here = SharedCores(lambda: None, read=machine.read, poll=0.05)
    try:
        here.start("mine", worker=4242)
        time.sleep(0.3)
        assert here.share(2, 1) == 2 and machine.asked == []
    finally:
        here.close()


def test_a_busy_loop_is_read_as_another_programs_load(hog):
    time.sleep(0.3)  # running
    first = reading([hog.pid])
    time.sleep(1.0)
    last = reading([hog.pid])
    counted = busy_elsewhere(Reading(first.at, first.busy), Reading(last.at, last.busy))
    left_out = busy_elsewhere(first, last)  # as if the loop were a model process of medexam's
    assert counted >= 0.5
    # Its own time is left out, whatever else the machine does (a loaded machine gives the
    # loop a share of a core only).
    assert counted - left_out >= 0.1


@pytest.mark.slow
def test_a_pooled_model_leaves_the_core_a_busy_loop_holds(hog):
    pool = ModelPool(load=LoadSettings(n_ctx=1024, threads=2), cores=2)
    try:
        with pool.lease("smollm2") as model:
            working = Working(model)
            try:
                assert working.flowing.wait(timeout=60)
                assert wait_for(lambda: model.threads == 1, timeout=10)
                assert pool.machine.busy >= 0.5
            finally:
                working.stop()
    finally:
        pool.close()
