"""CPU cores shared across medexam processes: each pool's working models are registered in
one folder for the machine, and every pool shares the cores with the live entries of the others;
an entry whose process died without cleaning up is ignored."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.models.cores import SUFFIX, SharedCores, registry_dir
from engine.models.pool import ModelPool

REPO = Path(__file__).resolve().parents[1]
STORY = [{"role": "user", "content": "Tell me a long story about a pharmacist."}]

# Another medexam process with one model working, until it is killed (no clean-up).
WORKING_ELSEWHERE = """
import time
from engine.models.cores import SharedCores
machine = SharedCores(lambda: None)
machine.start("elsewhere")
print("working", flush=True)
time.sleep(600)
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user data folder and a registry of this test's own, shared with the processes it
    starts."""
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    monkeypatch.setenv("MEDEXAM_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.delenv("MEDEXAM_SHARE_CORES", raising=False)
    return tmp_path


@pytest.fixture
def shared() -> Iterator[Callable[..., SharedCores]]:
    """Make this process's side of the registry; each one's entries go at the end."""
    made: list[SharedCores] = []

    def make(on_change: Callable[[], None] = lambda: None, **options: Any) -> SharedCores:
        made.append(SharedCores(on_change, **options))
        return made[-1]

    yield make
    for machine in made:
        machine.close()


@pytest.fixture
def elsewhere(home: Path) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    """Start a process whose model works; each is killed at the end if still running."""
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        # Another user data folder: the registry is the machine's, not the folder's.
        env = os.environ | {"MEDEXAM_HOME": str(home / f"elsewhere-{len(started)}")}
        child = subprocess.Popen(
            [sys.executable, "-c", WORKING_ELSEWHERE],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        started.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "working"
        return child

    yield start
    for child in started:
        child.kill()
        child.wait(timeout=10)


def die(child: subprocess.Popen[str]) -> None:
    """Kill ``child`` the hard way: its entry stays in the folder."""
    child.kill()
    child.wait(timeout=10)


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return check()


def entries() -> list[Path]:
    return sorted(registry_dir().glob("*" + SUFFIX))


def test_one_registry_for_every_data_folder_and_user(tmp_path, monkeypatch):
    monkeypatch.delenv("MEDEXAM_CORES_DIR")
    found = set()
    for name in ("one", "two"):
        monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path / name))
        found.add(registry_dir())
    (folder,) = found
    assert folder.name == "medexam-cores" and not folder.is_relative_to(tmp_path)
    if sys.platform != "win32":
        assert folder.stat().st_mode & 0o1777 == 0o1777  # writable by all, sticky as /tmp
    monkeypatch.setattr("engine.models.cores.SHARED_FOLDER", "medexam-test/not-there")
    assert registry_dir() == tmp_path / "two" / "cores"  # cannot be made: the data folder's


def test_a_working_model_elsewhere_is_counted_and_a_dead_one_is_ignored(elsewhere, shared):
    here = shared()
    assert here.others() == 0
    child = elsewhere()
    assert here.others(within=0) == 1
    here.start("mine")  # this pool's own entry is not one of the others
    assert here.others(within=0) == 1 and len(entries()) == 2
    die(child)
    assert len(entries()) == 2  # it left its entry behind
    assert here.others(within=0) == 0
    assert [p.name for p in entries()] == [here._files["mine"].name]  # and it was removed
    here.close()
    assert entries() == []


def test_the_watcher_tells_the_pool_within_a_second(elsewhere, shared):
    counts: list[int] = []
    here = shared(lambda: counts.append(here.others()))
    here.start("mine")
    child = elsewhere()
    started = time.monotonic()
    assert wait_for(lambda: counts == [1], timeout=5)
    assert time.monotonic() - started < 1.5
    die(child)
    assert wait_for(lambda: counts == [1, 0], timeout=3)
    here.close()


def test_an_entry_stays_a_moment_after_its_model_stopped_then_the_watcher_ends(shared):
    here = shared(linger=0.3, poll=0.1)
    there = shared()
    here.start("mine")
    here.stop("mine")
    assert there.others(within=0) == 1  # still there: a run of short requests reads as one
    here.start("mine")  # working again: the same entry
    assert len(entries()) == 1
    here.stop("mine")
    assert wait_for(lambda: not here.watching, timeout=3)  # idle: no thread, no reading
    assert there.others(within=0) == 0 and entries() == []


def test_an_entry_not_refreshed_is_stale(shared):
    stuck = shared(poll=60)  # alive, but never refreshes its entry
    there = shared(stale=0.3)
    stuck.start("stuck")
    assert there.others(within=0) == 1
    time.sleep(0.4)
    assert there.others(within=0) == 0 and entries() == []  # ignored and removed


def test_an_entry_removed_by_another_is_written_again(shared):
    here = shared(poll=0.1)
    here.start("mine")
    (first,) = entries()
    first.unlink()  # as another process does with an entry it saw stale
    assert wait_for(lambda: len(entries()) == 1)
    assert entries() != [first]


def test_sharing_across_processes_can_be_turned_off(elsewhere, shared, monkeypatch):
    elsewhere()
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "process")
    here = shared()
    here.start("mine")
    assert here.others(within=0) == 0 and not here.watching
    assert len(entries()) == 1  # only the other process's entry
    assert ModelPool(cores=2, max_bytes=1).machine.enabled is False


def test_an_unwritable_folder_leaves_the_sharing_to_the_process(tmp_path, shared):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    here = shared(folder=lambda: blocked)
    here.start("mine")  # nothing written, nothing raised
    assert here.others(within=0) == 0
    assert wait_for(lambda: not here.watching, timeout=3)


class Working:
    """Keep ``model`` generating in a thread until stopped."""

    def __init__(self, model) -> None:
        self.model = model
        self.done = threading.Event()
        self.flowing = threading.Event()  # set at its first piece
        self.stream = None
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self) -> None:
        while not self.done.is_set():
            self.stream = self.model.stream_chat(STORY, max_tokens=200, temperature=0)
            for _ in self.stream:
                self.flowing.set()
                if self.done.is_set():
                    self.stream.cancel()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=30)


@pytest.mark.slow
def test_a_pooled_model_follows_the_models_working_in_another_process(elsewhere):
    pool = ModelPool(settings_for=lambda name: {"n_ctx": 1024, "n_threads": 2}, cores=2)
    try:
        with pool.lease("smollm2") as model:
            working = Working(model)
            try:

                def asked() -> int:
                    return {m["name"]: m["threads"] for m in pool.status()}["smollm2"]

                assert working.flowing.wait(timeout=60)
                assert model.threads == 2 and asked() == 2  # alone: all its threads
                child = elsewhere()
                assert wait_for(lambda: model.threads == 1, timeout=10)  # applied there
                assert asked() == 1
                die(child)
                assert wait_for(lambda: model.threads == 2, timeout=10)  # the share comes back
                assert asked() == 2
            finally:
                working.stop()
            assert working.stream is not None
    finally:
        pool.close()
    assert entries() == []
