"""CPU cores shared by the working models of every medexam process on this machine.

llama.cpp's threads spin while they wait, so two processes each giving a model every core
slow each other down badly (the app beside a command-line run, or two runs). Each model pool
therefore registers every local model of its own while it works, as one small file in a
folder all of them share, whatever their user or data folder (:func:`registry_dir`; its
name holds the owner's process id; written atomically), and counts the live entries of the
others: its working models share the cores with theirs
(:meth:`ModelPool._share_cores <engine.models.pool.ModelPool>`).

* An entry stays a moment (``linger``, 1 s) after its model's request ends, so that a run of
  short requests reads as one working model to the others rather than a flicker.
* While a pool has entries, a watcher thread of its own refreshes them every ``poll``
  (0.5 s) and tells the pool when the others' count changed: a process notices within
  about a second that another started or stopped working. An idle pool has no thread and
  reads nothing; a pool working alone reads one small folder twice a second.
* An entry whose process is gone, or not refreshed for ``stale`` seconds (a process
  killed, stopped, or a process id used again), is ignored and removed by whoever sees it.
* A folder that cannot be read or written leaves the pool sharing the cores among its own
  models only, as does ``MEDEXAM_SHARE_CORES=process`` (the default is ``machine``).

>>> machine = SharedCores(on_change=lambda: None)                   # doctest: +SKIP
>>> machine.start("smollm2")    # this pool's smollm2 works: entry written   # doctest: +SKIP
>>> machine.others()            # the other pools' working models            # doctest: +SKIP
1
>>> machine.stop("smollm2")     # entry removed a second later               # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine.paths import data_dir

ENV = "MEDEXAM_SHARE_CORES"
DIR_ENV = "MEDEXAM_CORES_DIR"
SHARED_FOLDER = "medexam-cores"
FOLDER = "cores"  # in the user data folder, where the shared one cannot be made
SUFFIX = ".core"


def machine_wide() -> bool:
    """Whether pools share the cores with other processes (``MEDEXAM_SHARE_CORES``:
    ``machine``, the default, or ``process``)."""
    return os.environ.get(ENV, "machine").strip().lower() != "process"


def registry_dir() -> Path:
    """The folder of the entries, one for every medexam process of every user and data
    folder on this machine: ``MEDEXAM_CORES_DIR`` when set; else ``medexam-cores`` in the
    machine's temporary folder (``/tmp``; ProgramData on Windows), made writable by all
    and sticky, as ``/tmp`` is (each user removes only their own entries; the others' dead
    ones are only ignored); where that cannot be made, ``cores`` in the user data folder."""
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given)
    if os.name == "nt":
        base = Path(os.environ.get("PROGRAMDATA") or tempfile.gettempdir())
    else:
        base = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())
    folder = base / SHARED_FOLDER
    try:
        folder.mkdir(mode=0o777, exist_ok=False)
        if os.name != "nt":
            folder.chmod(0o1777)  # mkdir's mode is cut by the umask
    except FileExistsError:
        pass
    except OSError:
        return data_dir() / FOLDER
    return folder if folder.is_dir() and os.access(folder, os.W_OK) else data_dir() / FOLDER


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    if pid == os.getpid():
        return True
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # there, but not ours to inspect
        return True


def _pid(name: str) -> int | None:
    head = name.partition("-")[0]
    return int(head) if head.isdigit() else None


class SharedCores:
    """One pool's side of the machine-wide registry of working models (see the module
    docstring). ``on_change()`` is called from the watcher thread, with no lock held, when
    the count of the others' working models changed. ``enabled`` defaults to
    :func:`machine_wide`; ``folder`` to :func:`registry_dir`."""

    def __init__(
        self,
        on_change: Callable[[], None],
        *,
        enabled: bool | None = None,
        folder: Callable[[], Path] = registry_dir,
        poll: float = 0.5,
        linger: float = 1.0,
        stale: float = 10.0,
    ) -> None:
        self.on_change = on_change
        self.enabled = machine_wide() if enabled is None else enabled
        self.poll, self.linger, self.stale = poll, linger, stale
        self._folder = folder
        self._owner = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._files: dict[str, Path] = {}  # key -> its entry
        self._idle_since: dict[str, float] = {}  # key -> when its model stopped working
        self._count = 0
        self._read_at = -math.inf
        self._serial = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- this pool's entries ---------------------------------------------------------------

    def start(self, key: str) -> None:
        """This pool's model ``key`` works: its entry is written (kept if still there)."""
        if not self.enabled:
            return
        with self._lock:
            self._idle_since.pop(key, None)
            if key not in self._files:
                self._write(key)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="medexam-shared-cores", daemon=True
                )
                self._thread.start()

    def stop(self, key: str) -> None:
        """The model ``key`` stopped working: its entry goes after ``linger`` seconds."""
        with self._lock:
            if key in self._files:
                self._idle_since[key] = time.monotonic()

    def close(self) -> None:
        """Remove every entry of this pool now (its watcher ends within ``poll``)."""
        with self._lock:
            for key in list(self._files):
                self._remove(key)

    @property
    def watching(self) -> bool:
        """Whether the watcher thread runs (only while this pool has entries)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _write(self, key: str, folder: Path | None = None) -> None:
        self._serial += 1
        name = f"{self._owner}-{self._serial}{SUFFIX}"
        with contextlib.suppress(OSError):
            folder = folder or self._folder()
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            temporary = folder / f".{name}.tmp"
            body = {"pid": os.getpid(), "model": key, "since": time.time()}
            temporary.write_text(json.dumps(body), encoding="utf-8")
            os.replace(temporary, path)
            self._files[key] = path

    def _remove(self, key: str) -> None:
        self._idle_since.pop(key, None)
        path = self._files.pop(key, None)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    # -- the others ------------------------------------------------------------------------

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
        """Count the live entries of the others; remove the dead ones."""
        try:
            found = list(os.scandir(self._folder()))
        except OSError:
            return 0
        now, count = time.time(), 0
        for item in found:
            if item.name.startswith(self._owner + "-"):
                continue
            try:
                fresh = now - item.stat().st_mtime < self.stale
            except OSError:
                continue  # removed meanwhile
            entry = item.name.endswith(SUFFIX)
            pid = _pid(item.name) if entry else None
            if entry and fresh and pid is not None and _alive(pid):
                count += 1
            elif entry or not fresh:  # dead, stale or misnamed; or a write left half-done
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
        return count

    def _watch(self) -> None:
        """Refresh this pool's entries, drop those past ``linger``, and tell the pool when
        the others changed; ends when this pool has no entry left."""
        while True:
            time.sleep(self.poll)
            with self._lock:
                if not self._tend():
                    self._thread = None
                    return
            before = self._count
            if self.others(within=0) != before:
                with contextlib.suppress(Exception):  # the pool's fault is not the watcher's
                    self.on_change()

    def _tend(self) -> bool:
        """Drop lingering entries, refresh the rest (written again if removed); whether
        any is left. Called with the lock held."""
        now = time.monotonic()
        for key, since in list(self._idle_since.items()):
            if now - since >= self.linger:
                self._remove(key)
        for key, path in list(self._files.items()):
            try:
                os.utime(path)
            except OSError:  # removed by another process (seen stale, say): again
                del self._files[key]
                self._write(key, path.parent)
        return bool(self._files)
