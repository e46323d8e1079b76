"""CPU cores shared by the working models of every medexam process on this machine, and left
to the other programs that keep some of them busy.

llama.cpp's threads spin while they wait, so two processes each giving a model every core
slow each other down badly (the app beside a command-line run, or two runs), and so does a
model given a core that another program keeps busy (two cores, a busy loop on one: 29 tokens/s
at two threads against 80 at one). So each model pool

* registers every local model of its own while it works, as one small file in a folder all
  medexam processes share, whatever their user or data folder (:func:`registry_dir`), and
  counts the valid entries of the others: its working models share the cores with theirs;
* leaves out the cores other programs hold: each CPU's busy time (psutil; niced programs,
  which yield to the models, left out), less that of medexam's own processes (the pool's
  process, which feeds its models, its model processes working or waiting, and the registered
  ones), over the last second or so (:func:`busy_elsewhere`); a
  core counts as held when they keep it busy ``HELD`` of the time (:func:`cores_held`).

:meth:`SharedCores.share` gives the threads of each working model
(:meth:`ModelPool._share_cores <engine.models.pool.ModelPool>`).

* An entry stays a moment (``linger``, 1 s) after its model's request ends, so that a run of
  short requests reads as one working model to the others rather than a flicker.
* While a pool's models work, a watcher thread of its own refreshes their entries every ``poll``
  (0.5 s), reads the others and the cores' load again, and tells the pool when the share
  changed: a process notices within about a second that another started or stopped working,
  or that a program took or freed a core. An idle pool has no thread and reads nothing.
* Others cannot tamper: the folder is never followed through a link (a link there is
  refused), must be owned by this user or root unless it is sticky as ``/tmp`` is, and must
  not be writable by all unless sticky; a folder refused, unreadable or unwritable leaves
  the pool with ``cores`` in the user data folder (its own user's processes only), or, that
  failing too, sharing the cores among its own models.
* An entry (``PID-TOKEN-N.core``) records its process's start time and its model process's
  id and start time. It counts only while fresh (refreshed within ``stale`` seconds), while
  its process runs, started when recorded and belongs to the entry's owner, and while its
  model process is a spawned child of it; each model process counts once. Planted or left
  over entries count nothing. Only entries of this form that this user wrote are ever
  removed (when stale or their process is gone); nothing else in the folder is touched.
* ``MEDEXAM_SHARE_CORES``: ``machine`` (the default: all of the above), ``medexam`` (other
  medexam processes only, not other programs' load), ``process`` (this pool's models only).

>>> machine = SharedCores(on_change=lambda: None)                                   # doctest: +SKIP
>>> machine.start("smollm2", model.pid)  # the pool's smollm2 works: entry written  # doctest: +SKIP
>>> machine.share(cores=2, working=1)    # its threads: a busy loop holds one core  # doctest: +SKIP
1
>>> machine.stop("smollm2")              # entry removed a second later             # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from engine.models.cores_folder import DIR_ENV, SHARED_FOLDER, Folder, registry_dir
from engine.models.cores_load import (
    HELD,
    Reading,
    busy_elsewhere,
    cores_held,
    model_started,
    own_family,
    reading,
    thread_share,
)
from engine.store.owner import START_TOLERANCE_S, own_start, process_alive, process_started

__all__ = [
    "DIR_ENV",
    "ENV",
    "HELD",
    "SHARED_FOLDER",
    "SUFFIX",
    "Reading",
    "SharedCores",
    "busy_elsewhere",
    "cores_held",
    "model_started",
    "own_family",
    "counts_load",
    "machine_wide",
    "reading",
    "registry_dir",
    "thread_share",
]

ENV = "MEDEXAM_SHARE_CORES"
SUFFIX = ".core"
_ENTRY = re.compile(r"(\d+)-[0-9a-f]{8}-\d+" + re.escape(SUFFIX))
_WRITING = re.compile(r"\.(\d+)-[0-9a-f]{8}-\d+" + re.escape(SUFFIX) + r"\.tmp")


def _mode() -> str:
    return os.environ.get(ENV, "machine").strip().lower()


def machine_wide() -> bool:
    """Whether pools share the cores with other processes (``MEDEXAM_SHARE_CORES``:
    ``machine``, the default, or ``medexam``; not ``process``)."""
    return _mode() != "process"


def counts_load() -> bool:
    """Whether pools leave out the cores other programs keep busy (``MEDEXAM_SHARE_CORES``
    ``machine``, the default)."""
    return _mode() not in ("process", "medexam")


# -- the entries ------------------------------------------------------------------------------


def _same_start(process: Any, recorded: Any) -> bool:
    """Whether ``process`` started at ``recorded`` (not a process given its id since)."""
    return (
        isinstance(recorded, (int, float))
        and not isinstance(recorded, bool)
        and (abs(process.create_time() - recorded) <= START_TOLERANCE_S)
    )


def _judge(body: Any, pid: int, owner: int) -> tuple[int | None, bool]:
    """What an entry of process ``pid`` owned by user ``owner`` is worth: the model process
    it counts (None: none), and whether its process is gone (the entry may go)."""
    import psutil

    if not isinstance(body, dict) or body.get("pid") != pid:
        return None, False
    started, worker = body.get("started"), body.get("worker")
    if not isinstance(started, (int, float)) or not isinstance(worker, int):
        return None, False
    if not process_alive(pid, started):
        return None, True  # gone, or its id used again since
    try:
        if hasattr(os, "geteuid") and psutil.Process(pid).uids().effective != owner:
            return None, False  # an entry speaks only for its owner's processes
        model = psutil.Process(worker)
        if model.ppid() != pid or not _same_start(model, body.get("worker_started")):
            return None, False
        return (worker if _spawned(model) else None), False
    except psutil.Error:
        return None, False


def _spawned(process: Any) -> bool:
    """Whether ``process`` is a spawned Python process, as a model process is."""
    import psutil

    try:
        return "--multiprocessing-fork" in process.cmdline()
    except psutil.AccessDenied:  # the system hides it; its parent and start time were checked
        return True
    except psutil.Error:
        return False


# -- one pool's side -----------------------------------------------------------------------------


class SharedCores:
    """One pool's side of the machine-wide registry of working models and of the cores' load
    (see the module docstring). ``on_change()`` is called from the watcher thread, with no
    lock held, when the count of the others' working models or the cores held by other
    programs changed. ``enabled`` defaults to :func:`machine_wide`, ``load`` to
    :func:`counts_load`; ``folder`` to :func:`registry_dir`; ``read`` reads the load
    (:func:`reading`)."""

    def __init__(
        self,
        on_change: Callable[[], None],
        *,
        enabled: bool | None = None,
        load: bool | None = None,
        folder: Callable[[], Path] = registry_dir,
        read: Callable[[Collection[int]], Reading] = reading,
        poll: float = 0.5,
        linger: float = 1.0,
        stale: float = 10.0,
    ) -> None:
        self.on_change = on_change
        self.enabled = machine_wide() if enabled is None else enabled
        self.load = counts_load() if load is None else load
        self.poll, self.linger, self.stale = poll, linger, stale
        self._folder, self._read = folder, read
        self._owner = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._workers: dict[str, int | None] = {}  # key of a working model -> its process
        self._files: dict[str, Path] = {}  # key -> its entry (where it could be written)
        self._idle_since: dict[str, float] = {}  # key -> when its model stopped working
        self._count = 0
        self._theirs: set[int] = set()  # the others' model processes
        self._known: set[int] = set()  # medexam's model processes seen, working or not, alive
        self._read_at = -math.inf
        self._readings: deque[Reading] = deque(maxlen=3)  # the last second or so
        self.busy = 0.0  # CPUs other programs keep busy (last reading)
        self._held = 0
        self._serial = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- this pool's entries ---------------------------------------------------------------

    def start(self, key: str, worker: int | None = None) -> None:
        """This pool's model ``key`` works in model process ``worker``: its entry is written
        (kept if still there)."""
        if not self.enabled:
            return
        with self._lock:
            self._idle_since.pop(key, None)
            if key in self._workers and self._workers[key] != worker:
                self._remove(key)  # its model process changed (restarted)
            if worker is not None:
                self._known.add(worker)
            if key not in self._workers:
                self._workers[key] = worker
                self._write(key)
            if self._thread is None:
                self._readings.clear()
                self._sample()
                self._thread = threading.Thread(
                    target=self._watch, name="medexam-shared-cores", daemon=True
                )
                self._thread.start()

    def stop(self, key: str) -> None:
        """The model ``key`` stopped working: its entry goes after ``linger`` seconds."""
        with self._lock:
            if key in self._workers:
                self._idle_since[key] = time.monotonic()

    def close(self) -> None:
        """Remove every entry of this pool now (its watcher ends within ``poll``)."""
        with self._lock:
            for key in list(self._workers):
                self._remove(key)

    @property
    def watching(self) -> bool:
        """Whether the watcher thread runs (only while a model of this pool works or lingers)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _write(self, key: str, folder: Path | None = None) -> None:
        worker = self._workers.get(key)
        self._serial += 1
        name = f"{self._owner}-{self._serial}{SUFFIX}"
        body = {
            "pid": os.getpid(),
            "started": own_start(),
            "model": key,
            "worker": worker,
            "worker_started": None if worker is None else process_started(worker),
            "since": time.time(),
        }
        with contextlib.suppress(OSError):
            folder = folder or self._folder()
            with Folder(folder) as opened:
                opened.write(name, json.dumps(body).encode())
            self._files[key] = folder / name

    def _remove(self, key: str) -> None:
        self._idle_since.pop(key, None)
        self._workers.pop(key, None)
        path = self._files.pop(key, None)
        if path is not None:
            with contextlib.suppress(OSError), Folder(path.parent) as folder:
                folder.unlink(path.name)

    # -- the others and the load -------------------------------------------------------------

    def share(self, cores: int, working: int) -> int:
        """Threads for each of this pool's ``working`` models: an equal share, with the
        others' working models, of the ``cores`` other programs leave (:func:`thread_share`)."""
        if not self.enabled:
            return thread_share(cores, working, 0, 0)
        return thread_share(cores, working, self.others(), self._held if self.load else 0)

    def others(self, within: float | None = None) -> int:
        """How many models of other pools (other processes, mostly) work now, read afresh
        when the last reading is older than ``within`` seconds (default: ``poll``)."""
        if not self.enabled:
            return 0
        if time.monotonic() - self._read_at > (self.poll if within is None else within):
            self._count = self._scan()
            self._read_at = time.monotonic()
        return self._count

    def _scan(self) -> int:
        """Count the others' model processes working now; remove this user's entries whose
        process is gone or that are stale."""
        try:
            with Folder(self._folder()) as folder:
                theirs = self._sweep(folder)
        except OSError:
            theirs = set()
        self._theirs = theirs
        return len(theirs)

    def _sweep(self, folder: Folder) -> set[int]:
        now, theirs = time.time(), set()
        me = os.geteuid() if hasattr(os, "geteuid") else 0  # st_uid is 0 on Windows
        for name in folder.names():
            entry, writing = _ENTRY.fullmatch(name), _WRITING.fullmatch(name)
            if not (entry or writing):
                continue  # not medexam's: never touched
            if name.lstrip(".").startswith(self._owner + "-"):
                continue  # this pool's own
            try:
                st = folder.lstat(name)
                if not stat.S_ISREG(st.st_mode):
                    continue
                fresh = now - st.st_mtime < self.stale
                worker, gone = None, False
                if entry and fresh:
                    worker, gone = _judge(_parse(folder.read(name)), int(entry[1]), st.st_uid)
                if worker is not None:
                    theirs.add(worker)
                elif (not fresh or gone) and st.st_uid == me:  # this user's, dead or stale
                    folder.unlink(name)
            except OSError:
                continue  # removed meanwhile, or not to be read
        return theirs

    def _sample(self) -> None:
        """Read the cores' load again (``busy``, and the cores held by other programs)."""
        if not self.load:
            return
        with contextlib.suppress(OSError):
            working = {w for w in self._workers.values() if w is not None}
            # medexam's own: this process (it feeds its models) and the models it started, the model
            # processes of this pool and of the others, working or, once seen, waiting while
            # they live (one finishing its last step, its threads spinning, is busy a moment)
            now = self._read(self._known | working | self._theirs | own_family())
            self._known = {p for p in self._known | self._theirs if p in now.ours} | working
            self._readings.append(now)
        if len(self._readings) >= 2:
            self.busy = busy_elsewhere(self._readings[0], self._readings[-1])
            self._held = cores_held(self.busy)

    def _watch(self) -> None:
        """Refresh this pool's entries, drop those past ``linger``, read the others and the
        load again, and tell the pool when they changed; ends when no model of this pool
        works or lingers."""
        while True:
            time.sleep(self.poll)
            with self._lock:
                if not self._tend():
                    self._thread = None
                    return
            before = (self._count, self._held)
            self.others(within=0)
            self._sample()
            if (self._count, self._held) != before:
                with contextlib.suppress(Exception):  # the pool's fault is not the watcher's
                    self.on_change()

    def _tend(self) -> bool:
        """Drop lingering models' entries, refresh the rest (written again if removed or
        not written yet); whether any model is left. Called with the lock held."""
        now = time.monotonic()
        for key, since in list(self._idle_since.items()):
            if now - since >= self.linger:
                self._remove(key)
        for key in list(self._workers):
            path = self._files.get(key)
            if path is None:  # not written yet (no usable folder then): again
                self._write(key)
                continue
            try:
                with Folder(path.parent) as folder:
                    folder.touch(path.name)
            except OSError:  # removed by another process (seen stale, say): again
                del self._files[key]
                self._write(key, path.parent)
        return bool(self._workers)


def _parse(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
