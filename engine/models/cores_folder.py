"""The folder of the cores registry (:mod:`engine.models.cores`): which one, and its entries
read, written and removed without following a link, in a folder others cannot tamper with.

The machine's folder is ``medexam-cores`` in its temporary folder, made writable by all and
sticky as ``/tmp`` is; ``MEDEXAM_CORES_DIR`` names another. A folder is refused when it is
a link, not a folder, another user's (not root's) and not sticky, or writable by all and
not sticky; then each user's own ``cores`` in the user data folder serves instead."""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import tempfile
from pathlib import Path

from engine.paths import data_dir

DIR_ENV = "MEDEXAM_CORES_DIR"
SHARED_FOLDER = "medexam-cores"
FOLDER = "cores"  # in the user data folder, where the shared one cannot be used
MAX_NAMES = 4096  # names read from the folder at most (a folder stuffed full costs no more)
MAX_ENTRY = 4096  # bytes read of an entry at most
_DIR_FD = (
    os.name == "posix"
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and {os.open, os.stat, os.unlink, os.utime, os.rename} <= os.supports_dir_fd  # replace too
    and os.scandir in os.supports_fd
)


def registry_dir() -> Path:
    """The folder of the entries, one for every medexam process of every user and data
    folder on this machine: ``MEDEXAM_CORES_DIR`` when set; else ``medexam-cores`` in the
    machine's temporary folder (``/tmp``; ProgramData on Windows), made writable by all and
    sticky, as ``/tmp`` is. Where that folder is a link, not safe from others (see the
    module docstring) or not writable: ``cores`` in the user data folder."""
    given = os.environ.get(DIR_ENV)
    if given:
        folder = Path(given)
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
        return folder if _usable(folder) else _own_folder()
    if os.name == "nt":
        base = Path(os.environ.get("PROGRAMDATA") or tempfile.gettempdir())
    else:
        base = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())
    folder = base / SHARED_FOLDER
    with contextlib.suppress(OSError):  # there already (checked below), or not to be made
        _make_shared(folder)
    return folder if _usable(folder) else _own_folder()


def _make_shared(folder: Path) -> None:
    os.mkdir(folder, 0o700)
    if os.name == "posix":  # sticky and writable by all, set on what was made (mkdir's mode is cut)
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fchmod(fd, 0o1777)
        finally:
            os.close(fd)


def _usable(folder: Path) -> bool:
    try:
        with Folder(folder):
            pass
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _own_folder() -> Path:
    folder = data_dir() / FOLDER
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _unsafe(st: os.stat_result) -> str:
    """Why a folder with this status (not followed) is not one to use, or ''."""
    if stat.S_ISLNK(st.st_mode):
        return "it is a link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if os.name != "posix":
        return ""
    sticky = st.st_mode & stat.S_ISVTX
    if st.st_uid not in (os.geteuid(), 0) and not sticky:
        return "another user's folder, not sticky"
    if st.st_mode & 0o002 and not sticky:
        return "writable by all, not sticky"
    return ""


class Folder:
    """The registry folder opened without following a link, refused if unsafe; its entries
    are read, written and removed through it (by its descriptor where the system has them),
    never through a link."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> Folder:
        if _DIR_FD:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open(self.path, flags)
            st = os.fstat(self.fd)
        else:
            st = os.lstat(self.path)
        why = _unsafe(st)
        if why:
            self.__exit__()
            raise OSError(f"{self.path}: {why}")
        return self

    def __exit__(self, *_: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def names(self) -> list[str]:
        with os.scandir(self.fd if self.fd is not None else self.path) as found:
            return [item.name for item in itertools.islice(found, MAX_NAMES)]

    def lstat(self, name: str) -> os.stat_result:
        if self.fd is not None:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        return os.lstat(self.path / name)

    def read(self, name: str) -> bytes:
        if self.fd is None:
            if not stat.S_ISREG(self.lstat(name).st_mode):
                raise OSError(f"{name}: not a file")
            with open(self.path / name, "rb") as file:
                return file.read(MAX_ENTRY)
        flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(name, flags, dir_fd=self.fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{name}: not a file")
            return os.read(fd, MAX_ENTRY)
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> None:
        """Write the entry ``name`` at once (a new file, then renamed into place)."""
        temporary = f".{name}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        if self.fd is None:
            fd = os.open(self.path / temporary, flags, 0o644)
        else:
            fd = os.open(temporary, flags, 0o644, dir_fd=self.fd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        if self.fd is None:
            os.replace(self.path / temporary, self.path / name)
        else:
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def touch(self, name: str) -> None:
        if self.fd is None:
            os.utime(self.path / name)
        else:
            os.utime(name, dir_fd=self.fd, follow_symlinks=False)

    def unlink(self, name: str) -> None:
        if self.fd is None:
            os.unlink(self.path / name)
        else:
            os.unlink(name, dir_fd=self.fd)
