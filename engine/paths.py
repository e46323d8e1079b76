"""Where medexam keeps its files.

A source checkout keeps model files in ``models/`` and built retrieval indexes in ``indexes/``
at the repository root; an installed or frozen app uses the user data folder. A frozen app
(PyInstaller) also carries read-only files of its own: :func:`bundled_models_dir`. The database
always lives in the user data folder unless ``--db`` (or ``MEDEXAM_DB``) says otherwise.
``MEDEXAM_HOME`` moves the user data folder and, with it, the models and indexes folders
(the tests use it to leave a checkout untouched); ``MEDEXAM_CACHE`` moves the cache of files
medexam can make again (:func:`cache_dir`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from pathlib import Path

from engine.errors import UserError

APP_NAME = "medexam"


class FolderError(UserError):
    """A folder medexam must write in that it cannot use; the message names the folder, and
    the environment variable that chose it: ``MEDEXAM_HOME=/x is not usable: it is a file``."""


def usable_folder(path: Path, named: str) -> Path:
    """``path``, created if missing, once it is a folder medexam can write in; else
    :class:`FolderError` saying so of ``named`` (``MEDEXAM_HOME=…``, "the user data folder
    …") and why."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        dangling = path.is_symlink() and not path.exists()
        why = "it is a link to nothing" if dangling else "it is a file, not a folder"
    except OSError as exc:
        why = f"it cannot be made ({exc.strerror or exc})"
    else:
        if os.access(path, os.W_OK | os.X_OK):
            return path
        why = "it cannot be written to"
    raise FolderError(f"{named} is not usable: {why}")


def _home() -> tuple[Path, str]:
    """The user data folder and how to name it in an error."""
    home = os.environ.get("MEDEXAM_HOME")
    if home:
        return Path(home), f"MEDEXAM_HOME={home}"
    import platformdirs  # only where the folder is not given

    path = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return path, f"the user data folder {path}"


def data_dir() -> Path:
    """The user data folder (created on first use); :class:`FolderError` when it cannot be
    used."""
    return usable_folder(*_home())


def source_root() -> Path | None:
    """The repository root when running from a source checkout, else None."""
    if getattr(sys, "frozen", False):
        return None
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "engine").is_dir():
        return root
    return None


def bundle_dir() -> Path | None:
    """The folder of a frozen app's own files (PyInstaller's ``sys._MEIPASS``), else None.

    It is read-only: nothing is ever written there.
    """
    base = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    return Path(base) if base else None


def bundled_models_dir() -> Path | None:
    """Model files assembled into a frozen app when it was built (``models/`` in
    :func:`bundle_dir`), else None."""
    base = bundle_dir()
    return base / "models" if base is not None else None


def _folder(name: str) -> Path:
    root = None if os.environ.get("MEDEXAM_HOME") else source_root()
    if root is not None:
        return usable_folder(root / name, f"the checkout's {name} folder {root / name}")
    path = data_dir() / name
    return usable_folder(path, f"the {name} folder {path} (in {_home()[1]})")


def models_dir() -> Path:
    """Folder scanned for ``.gguf`` files (``models/`` in a checkout)."""
    return _folder("models")


def indexes_dir() -> Path:
    """Folder holding built retrieval indexes (``indexes/`` in a checkout)."""
    return _folder("indexes")


def cache_dir() -> Path:
    """Files medexam can make again (a training base's dequantized weights): ``cache/`` in
    the user data folder, or the folder ``MEDEXAM_CACHE`` names; deleting it loses nothing."""
    env = os.environ.get("MEDEXAM_CACHE")
    if env:
        return usable_folder(Path(env), f"MEDEXAM_CACHE={env}")
    path = data_dir() / "cache"
    return usable_folder(path, f"the cache folder {path} (in {_home()[1]})")


def default_db_path() -> Path:
    """The default SQLite database, ``MEDEXAM_DB`` if set.

    The user data folder is created for the default database; a database named by
    ``MEDEXAM_DB`` (or ``--db``) must be in a folder that exists (:class:`~engine.store.store.Store`
    refuses it otherwise).
    """
    env = os.environ.get("MEDEXAM_DB")
    return Path(env) if env else data_dir() / "medexam.db"


def write_own(path: str | Path, data: bytes) -> Path:
    """Write ``data`` as the file ``path``, a file of medexam's own: written beside it under
    a name of its own (made new, never through a link), then put in its place. Whatever was
    at ``path`` (an older file, a link planted there to a file elsewhere) is replaced, never
    written through, and no one sees the file half-written. Returns ``path``."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path


def samples_dir() -> Path:
    """The sample data sets shipped with medexam (written for it, marked as samples)."""
    return Path(__file__).resolve().parent / "samples"
