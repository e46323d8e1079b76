"""CPU cores shared across medexam processes: each pool's working models are registered in
one folder for the machine, and every pool shares the cores with the live entries of the others;
an entry whose process died without cleaning up is ignored. Others cannot use the folder against
a user: nothing but this user's own entries is removed, a link is never followed, and planted
entries count nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.models.cores import SUFFIX, SharedCores, registry_dir
from engine.models.load import LoadSettings
from engine.models.pool import ModelPool

REPO = Path(__file__).resolve().parents[1]
STORY = [{"role": "user", "content": "Tell me a long story about a pharmacist."}]

# Another medexam process with one model working in its model process (spawned, as a local
# model's is), until it is killed (no clean-up).
WORKING_ELSEWHERE = """
import multiprocessing, time
from engine.models.cores import SharedCores
if __name__ == "__main__":
    model = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,))
    model.daemon = True
    model.start()
    machine = SharedCores(lambda: None)
    machine.start("elsewhere", model.pid)
    print("working", flush=True)
    time.sleep(600)
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user data folder and a registry of this test's own, shared with the processes it
    starts."""
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    monkeypatch.setenv("MEDEXAM_CORES_DIR", str(tmp_path / "cores"))
    monkeypatch.setenv("MEDEXAM_SHARE_CORES", "medexam")  # other programs' load: test_cores_load
    return tmp_path


@pytest.fixture(scope="module")
def worker() -> Iterator[int]:
    """A model process of this process's (spawned, as a local model's is): its pid."""
    model = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,))
    model.daemon = True
    model.start()
    yield model.pid
    model.kill()
    model.join(timeout=10)


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
    monkeypatch.setattr("engine.models.cores_folder.SHARED_FOLDER", "medexam-test/not-there")
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


def test_an_entry_stays_a_moment_after_its_model_stopped_then_the_watcher_ends(shared, worker):
    here = shared(linger=0.3, poll=0.1)
    there = shared()
    here.start("mine", worker)
    here.stop("mine")
    assert there.others(within=0) == 1  # still there: a run of short requests reads as one
    here.start("mine", worker)  # working again: the same entry
    assert len(entries()) == 1
    here.stop("mine")
    assert wait_for(lambda: not here.watching, timeout=3)  # idle: no thread, no reading
    assert there.others(within=0) == 0 and entries() == []


def test_an_entry_not_refreshed_is_stale(shared, worker):
    stuck = shared(poll=60)  # alive, but never refreshes its entry
    there = shared(stale=0.3)
    stuck.start("stuck", worker)
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
    here = shared(folder=lambda: blocked, linger=0.1, poll=0.1)
    here.start("mine")  # nothing written, nothing raised
    assert here.others(within=0) == 0 and here.watching  # the load is still read
    here.stop("mine")
    assert wait_for(lambda: not here.watching, timeout=3)


OLD = 60.0  # seconds: an entry this old is stale


def plant(folder: Path, name: str, body: object = "", *, age: float = 0.0) -> Path:
    """Put the file ``name`` in ``folder``, ``age`` seconds old."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def test_nothing_but_its_own_entries_is_removed(shared):
    folder = registry_dir()
    foreign = [
        plant(folder, "thesis.txt", "three years of work", age=OLD),
        plant(folder, "notes.core", age=OLD),  # not a name medexam writes
        plant(folder, "1-evil-1.core", {"pid": 1}, age=OLD),
        plant(folder, ".draft.tmp", age=OLD),
    ]
    (folder / "sub").mkdir()
    gone = plant(folder, f"{dead_pid()}-{secrets.token_hex(4)}-1{SUFFIX}", {"pid": 0}, age=OLD)
    assert shared().others(within=0) == 0
    assert all(p.exists() for p in foreign) and (folder / "sub").is_dir()
    assert not gone.exists()  # this user's own entry of a process that ended: removed


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_another_users_entries_are_left_alone(shared):
    theirs = plant(registry_dir(), f"{dead_pid()}-{secrets.token_hex(4)}-1{SUFFIX}", age=OLD)
    os.chown(theirs, 54321, 54321)  # another user's, of a process gone: only ignored
    assert shared().others(within=0) == 0
    assert theirs.exists()


def _victim(tmp_path: Path) -> list[Path]:
    """A folder of the user's that a link may point to, with a file and a stale entry."""
    target = tmp_path / "victim"
    name = f"{dead_pid()}-{secrets.token_hex(4)}-1{SUFFIX}"
    return [plant(target, "thesis.txt", "work", age=OLD), plant(target, name, age=OLD)]


def test_a_linked_folder_is_refused(tmp_path, monkeypatch, shared, worker):
    kept = _victim(tmp_path)
    link = tmp_path / "cores-link"
    link.symlink_to(tmp_path / "victim", target_is_directory=True)
    monkeypatch.setenv("MEDEXAM_CORES_DIR", str(link))
    assert registry_dir() == tmp_path / "cores"  # the user data folder's, not the link
    here = shared()
    here.start("mine", worker)
    here.others(within=0)
    here.close()
    assert sorted((tmp_path / "victim").iterdir()) == sorted(kept)  # nothing removed or added


@pytest.mark.skipif(sys.platform == "win32", reason="a folder in /tmp")
def test_a_link_in_place_of_the_machines_folder_is_refused(tmp_path, monkeypatch, shared):
    kept = _victim(tmp_path)
    name = f"medexam-test-{secrets.token_hex(4)}"
    planted = Path("/tmp") / name  # as another user plants it before the victim's first run
    planted.symlink_to(tmp_path / "victim", target_is_directory=True)
    try:
        monkeypatch.delenv("MEDEXAM_CORES_DIR")
        monkeypatch.setattr("engine.models.cores_folder.SHARED_FOLDER", name)
        assert registry_dir() == tmp_path / "cores"
        assert shared().others(within=0) == 0
    finally:
        planted.unlink()
    assert sorted((tmp_path / "victim").iterdir()) == sorted(kept)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_folder_writable_by_all_and_not_sticky_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)  # anyone could swap the entries
    monkeypatch.setenv("MEDEXAM_CORES_DIR", str(folder))
    assert registry_dir() == tmp_path / "cores"
    folder.chmod(0o1777)  # sticky, as /tmp: each user's entries are their own
    assert registry_dir() == folder


def plant_fifty_two(folder: Path, worker: int) -> None:
    """52 fresh entries naming process 1 as the issue's did, 52 well-formed ones naming it
    with its true start time, and 52 copies of a valid entry of this process."""
    import psutil

    init = psutil.Process(1).create_time()
    me = psutil.Process()
    token = secrets.token_hex(4)
    for n in range(52):
        plant(folder, f"1-evil-{n}{SUFFIX}", {"pid": 1, "model": "evil", "since": time.time()})
        body = {"pid": 1, "started": init, "worker": 1, "worker_started": init}
        plant(folder, f"1-{token}-{n}{SUFFIX}", body)
        body = {
            "pid": me.pid,
            "started": me.create_time(),
            "worker": worker,
            "worker_started": psutil.Process(worker).create_time(),
        }
        plant(folder, f"{me.pid}-{token}-{100 + n}{SUFFIX}", body)


def test_planted_entries_count_nothing(shared, worker):
    plant_fifty_two(registry_dir(), worker)
    here = shared()
    assert here.others(within=0) == 1  # the copies name one model process: it counts once
    assert len(entries()) == 3 * 52  # and nothing was removed


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
    pool = ModelPool(load=LoadSettings(n_ctx=1024, threads=2), cores=2)
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


@pytest.mark.slow
def test_planted_entries_do_not_take_a_pooled_models_threads():
    plant_fifty_two(registry_dir(), worker=os.getpid())  # copies naming no model process
    pool = ModelPool(load=LoadSettings(n_ctx=1024, threads=2), cores=2)
    try:
        with pool.lease("smollm2") as model:
            working = Working(model)
            try:
                assert working.flowing.wait(timeout=60)
                time.sleep(1.5)  # the watcher read the folder again meanwhile
                assert model.threads == 2 and pool.machine.others() == 0
            finally:
                working.stop()
    finally:
        pool.close()
