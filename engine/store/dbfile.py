"""A database file and how it is opened: the checks made before anything is written, the
read-only case, and a database's problems said in one line.

medexam recognises its own database by its ``application_id`` (:data:`APPLICATION_ID`,
which every database it writes gets), and a database written before it had one by its
tables and columns, as its ``user_version`` says they should be. Anything else (another
program's SQLite database, whatever its ``user_version``) is refused before a byte is
written. A file whose header gives more pages than it holds is truncated; SQLite's own
errors about a file (full disk, damaged pages, read-only…) become one
:class:`StoreError` line (:func:`database_problem`).

A database that cannot be written (a read-only file, folder or mount) is opened read-only:
every reading command works, and the first write says the database is read-only.
"""

from __future__ import annotations

import collections
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.store.migrations import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SchemaTooNew,
    application_id,
    migrate,
    schema_version,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    import sqlite_utils

SQLITE_HEADER = b"SQLite format 3\x00"
HEADER_SIZE = 100
#: The connections this process holds on each database file (by its real path). Such a file
#: is not opened and closed beside them: every POSIX lock a process holds on a file goes
#: with the first close of any of its handles, and another process closing its connection
#: would then find no one else on the database and delete its write-ahead log under ours
#: (the next write: "disk I/O error").
_HELD: collections.Counter[str] = collections.Counter()


def hold(path: str) -> None:
    """Count one more connection of this process on the database at ``path``."""
    _HELD[os.path.realpath(path)] += 1


def release(path: str) -> None:
    """Count one connection fewer on the database at ``path`` (see :func:`hold`)."""
    key = os.path.realpath(path)
    _HELD[key] -= 1
    if _HELD[key] <= 0:
        del _HELD[key]


def now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


class StoreError(UserError):
    """A request the store cannot satisfy (unknown data set or run, duplicate name, a file
    that is not a medexam database…)."""


class AlreadyExists(StoreError):
    """A data set or corpus of that name is there already (perhaps written by another
    process a moment ago: the check and the write are one transaction)."""


#: The store's columns that hold JSON: encoded on the way in, decoded on the way out.
JSON_COLUMNS = {"data", "settings", "summary", "extra", "meta"}


def dump_json(value: Any) -> str | None:
    """``value`` as a JSON column stores it (``None`` stays NULL)."""
    import json  # here: opening the app's window needs none of it

    return None if value is None else json.dumps(value, ensure_ascii=False, allow_nan=False)


def load_json(text: str) -> Any:
    """A JSON column's text read back."""
    import json

    return json.loads(text)


def decode_json(row: dict[str, Any], columns: Iterable[str] = JSON_COLUMNS) -> dict[str, Any]:
    """``row`` with its JSON ``columns`` decoded."""
    out = dict(row)
    for key in set(columns) & out.keys():
        if isinstance(out[key], str):
            out[key] = load_json(out[key])
    return out


def writable(path: Path) -> bool:
    """Whether a database at ``path`` can be written: the file (when there is one) and its
    folder, which holds the journal (a read-only mount answers no for both)."""
    if path.exists() and not os.access(path, os.W_OK):
        return False
    return os.access(path.parent, os.W_OK)


def _wal_beside(path: Path) -> bool:
    """Whether a write-ahead log with content lies beside ``path``."""
    wal = path.with_name(path.name + "-wal")
    return wal.is_file() and wal.stat().st_size > 0


def _check_header(path: Path, header: bytes, size: int) -> None:
    """Refuse a SQLite file cut short: shorter than its header, or than the pages its
    header counts (when that count is valid and no write-ahead log holds the rest)."""
    if len(header) < HEADER_SIZE:
        raise StoreError(f"{path} is truncated or damaged ({size} bytes, no whole header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreError(f"{path} is truncated or damaged (page size {page_size})")
    pages = int.from_bytes(header[28:32], "big")
    count_valid = header[24:28] == header[92:96]
    expected = pages * page_size
    if pages and count_valid and size < expected and not _wal_beside(path):
        raise StoreError(
            f"{path} is truncated or damaged ({size} bytes of the {expected} its header gives)"
        )


def check_file(path: Path, create_folder: bool) -> None:
    """Refuse, before SQLite opens it, a path that cannot hold a medexam database: a
    folder, a missing folder (created only when ``create_folder``), a file that is not
    SQLite, a SQLite file cut short."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a medexam database")
    if not path.parent.is_dir():
        if not create_folder:
            raise StoreError(f"folder {path.parent} does not exist")
        path.parent.mkdir(parents=True, exist_ok=True)
    # a file this process holds open was checked when it was opened, and opening and closing
    # it again would drop the locks SQLite holds on it (see _HELD)
    held = _HELD[os.path.realpath(path)] > 0
    if path.is_file() and (size := path.stat().st_size) > 0 and not held:
        with path.open("rb") as fh:
            header = fh.read(HEADER_SIZE)
        if not header.startswith(SQLITE_HEADER):
            raise StoreError(f"{path} is not a medexam database")
        _check_header(path, header, size)


def database_problem(exc: BaseException, path: str | None = None) -> StoreError | None:
    """The one line that says what SQLite's error ``exc`` means for the database at
    ``path`` — a full disk, damaged pages, a read-only file, one that cannot be opened or is
    held by another program — or None for any other error (a fault of medexam's own)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    where = path or "the database"
    if name.startswith("SQLITE_FULL"):
        return StoreError(f"cannot write to {where}: the disk is full ({exc})")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StoreError(f"{where} is truncated or damaged ({exc})")
    if name.startswith("SQLITE_READONLY"):
        return StoreError(f"{where} is read-only: it cannot be written to ({exc})")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(f"cannot read or write {where} ({exc})")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return StoreError(f"cannot open {where} ({exc})")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(f"{where} is held by another program ({exc})")
    return None


@functools.cache
def _medexam_tables(version: int) -> dict[str, frozenset[str]]:
    """The tables and columns of a medexam database at schema ``version``."""
    import sqlite_utils

    db = sqlite_utils.Database(memory=True)
    migrate(db, MIGRATIONS[:version])
    tables = _tables(db)
    db.close()
    return tables


def _tables(db: sqlite_utils.Database) -> dict[str, frozenset[str]]:
    names = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return {
        name: frozenset(c for (c,) in db.execute("SELECT name FROM pragma_table_info(?)", [name]))
        for (name,) in names
    }


def _looks_like_medexam(db: sqlite_utils.Database, version: int) -> bool:
    """Whether ``db`` holds every table medexam's schema ``version`` has, each with its
    columns (a database written before medexam marked its own)."""
    found = _tables(db)
    wanted = _medexam_tables(version)
    return all(name in found and columns <= found[name] for name, columns in wanted.items())


def check_schema(db: sqlite_utils.Database, path: str) -> int:
    """Refuse (reading only) another program's database or a newer medexam's; return the
    schema version of a medexam database (0: a new, empty one)."""
    import sqlite3

    try:
        version = schema_version(db)
        marked = application_id(db)
        entries = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        ours = marked == APPLICATION_ID or (
            marked == 0
            and (
                (version == 0 and not entries)
                or (0 < version <= SCHEMA_VERSION and _looks_like_medexam(db, version))
            )
        )
    except sqlite3.DatabaseError as exc:
        raise database_problem(exc, path) or StoreError(f"cannot open {path} ({exc})") from None
    if not ours:
        raise StoreError(f"{path} is not a medexam database")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer medexam "
            f"(schema {version}; this one knows {SCHEMA_VERSION})"
        )
    return version


def _enable_wal(db: sqlite_utils.Database, wait_s: float = 10.0) -> None:
    """Switch ``db`` to write-ahead logging. Switching needs the database to itself, which
    SQLite refuses at once (no busy wait) while another process is writing to a new database
    (two app instances starting together), so it is tried again until ``wait_s`` has passed."""
    import sqlite3
    import time

    end = time.monotonic() + wait_s
    while True:
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > end:
                raise
            time.sleep(0.05)


def _read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` for reading only. A database in write-ahead-log mode
    whose log files are gone needs them to be created, which a read-only folder does not
    allow: it is read as it lies (``immutable``), nothing writes beside it."""
    with path.open("rb") as fh:
        header = fh.read(HEADER_SIZE)
    logs = [path.with_name(path.name + end) for end in ("-wal", "-shm")]
    wal_mode = len(header) > 19 and header[18] == 2
    flag = "immutable=1" if wal_mode and not any(p.exists() for p in logs) else "mode=ro"
    return f"{path.resolve().as_uri()}?{flag}"


def _connect(path: str) -> tuple[sqlite_utils.Database, bool]:
    """A connection to ``path`` and whether it is read-only (the file or its folder is)."""
    import sqlite3

    import sqlite_utils

    if path == ":memory:" or writable(Path(path)):
        return sqlite_utils.Database(path, recreate=False), False
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise StoreError(f"cannot create {path}: folder {file.parent} is read-only")
    conn = sqlite3.connect(_read_only_uri(file), uri=True)
    return sqlite_utils.Database(conn), True


@dataclass
class Opened:
    """An open medexam database: its connection, schema version, and whether it is
    read-only."""

    db: sqlite_utils.Database
    version: int
    read_only: bool


def open_database(path: str) -> Opened:
    """Open the medexam database at ``path`` (checked with :func:`check_file` already),
    created or upgraded to the newest schema; a database that cannot be written is opened
    read-only, as it is (one that needs upgrading is refused). Raises :class:`StoreError`,
    touching nothing, for anything that is not a medexam database this one can use."""
    import sqlite3

    try:
        db, read_only = _connect(path)
    except sqlite3.Error as exc:
        raise database_problem(exc, path) or StoreError(f"cannot open {path} ({exc})") from None
    try:
        version = check_schema(db, path)
        if read_only and version < SCHEMA_VERSION:
            raise StoreError(
                f"{path} is read-only: its schema {version} needs upgrading to "
                f"{SCHEMA_VERSION}, which writes to it"
            )
        if not read_only and path != ":memory:":
            _enable_wal(db)
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA busy_timeout = 5000")
        if not read_only:
            version = migrate(db)
        return Opened(db, version, read_only)
    except SchemaTooNew as exc:
        db.close()
        raise StoreError(f"{path} was written by a newer medexam ({exc})") from None
    except sqlite3.Error as exc:
        db.close()
        raise database_problem(exc, path) or StoreError(f"cannot open {path} ({exc})") from None
    except BaseException:
        db.close()
        raise
