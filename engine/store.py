"""The SQLite store: data sets and their items, runs, per-item answers, consultation turns,
retrieval corpora and their passages.

Every write commits at once, so an interrupted run keeps every answer it produced and can be
resumed. JSON-valued columns (``data``, ``settings``, ``summary``, ``scores``, ``extra``,
``meta``) are decoded on the way out.

>>> store = Store(":memory:")
>>> store.add_dataset("demo", "exam", [{"id": "q1", "question": "…"}])
1
>>> run_id = store.start_run("exam", "demo", "smollm2", {"shots": 0})
>>> store.add_answer(run_id, "q1", response="B", chosen="B", gold="B", correct=True)
>>> store.finish_run(run_id, {"accuracy": 100.0})
>>> store.run(run_id)["status"]
'finished'

A run records the process that runs it (``owner_pid``, ``owner_host``, ``owner_started``).
Its status reads ``running`` while that process may still be at work and ``interrupted`` once
it is gone without finishing (derived when read, nothing is written); :meth:`Store.claim_run`
makes the calling process the owner before a run is resumed. Run ids are never reused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.migrations import SCHEMA_VERSION, SchemaTooNew, migrate, schema_version
from engine.owner import current_owner, host, owner_alive
from engine.paths import default_db_path

if TYPE_CHECKING:
    import sqlite_utils

JSON_COLUMNS = {"data", "settings", "summary", "scores", "extra", "meta"}
#: Every status a run can read as; ``interrupted`` is derived, never stored.
RUN_STATUSES = ("running", "finished", "cancelled", "failed", "interrupted")
#: The statuses :meth:`Store.finish_run` closes a run with.
FINAL_STATUSES = ("finished", "cancelled", "failed")
SQLITE_HEADER = b"SQLite format 3\x00"


class StoreError(Exception):
    """A request the store cannot satisfy (unknown data set or run, duplicate name…)."""


class AlreadyExists(StoreError):
    """A data set or corpus of that name is there already (perhaps written by another
    process a moment ago: the check and the write are one transaction)."""


def now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _dump(value: Any) -> str | None:
    import json  # here: opening the app's window needs none of it

    return None if value is None else json.dumps(value, ensure_ascii=False)


def _loads(text: str) -> Any:
    import json

    return json.loads(text)


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in JSON_COLUMNS & out.keys():
        if isinstance(out[key], str):
            out[key] = _loads(out[key])
    return out


def _check_file(path: Path, create_folder: bool) -> None:
    """Refuse, before SQLite opens it, a path that cannot hold a medexam database."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a medexam database")
    if not path.parent.is_dir():
        if not create_folder:
            raise StoreError(f"folder {path.parent} does not exist")
        path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.stat().st_size > 0:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
        if header != SQLITE_HEADER:
            raise StoreError(f"{path} is not a medexam database")


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


def _check_schema(db: sqlite_utils.Database, path: str) -> None:
    """Refuse (reading only) another program's database or a newer medexam's."""
    import sqlite3

    try:
        version = schema_version(db)
        tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a medexam database ({exc})") from None
    if version == 0 and tables[0]:
        raise StoreError(f"{path} is not a medexam database")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer medexam "
            f"(schema {version}; this one knows {SCHEMA_VERSION})"
        )


def _run_view(row: dict[str, Any]) -> dict[str, Any]:
    """A decoded run row whose ``running`` status reads ``interrupted`` once its owner is
    gone (runs stored before owners were recorded have none: they are gone too)."""
    run = _decode(row)
    if run.get("status") == "running" and owner_alive(run) is False:
        run["status"] = "interrupted"
    return run


def check_path(path: str | Path | None = None) -> None:
    """The checks :class:`Store` makes before opening ``path`` (``None``: the default
    database), without opening it: a folder, a missing folder or a file that is not SQLite
    is refused with :class:`StoreError`. Cheap enough to run before anything else."""
    chosen = path is not None or bool(os.environ.get("MEDEXAM_DB"))
    target = str(path) if path is not None else str(default_db_path())
    if target != ":memory:":
        _check_file(Path(target), create_folder=not chosen)


class Store:
    """A medexam database. ``path`` defaults to the user data folder's ``medexam.db``.

    Opening refuses with one clear :class:`StoreError`, leaving the file untouched, a file
    that is not a medexam database, one written by a newer medexam, and a path whose folder
    does not exist (only the default database's folder is created).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        import sqlite3

        import sqlite_utils  # here, not at import: modules naming Store stay light

        self.path = str(path) if path is not None else str(default_db_path())
        memory = self.path == ":memory:"
        check_path(path)
        try:
            self.db = sqlite_utils.Database(self.path, recreate=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path} ({exc})") from None
        try:
            _check_schema(self.db, self.path)
            if not memory:
                _enable_wal(self.db)
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA busy_timeout = 5000")
            self.version = migrate(self.db)
        except SchemaTooNew as exc:
            self.db.close()
            raise StoreError(f"{self.path} was written by a newer medexam ({exc})") from None
        except sqlite3.Error as exc:
            self.db.close()
            raise StoreError(f"cannot open {self.path} ({exc})") from None
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def _transaction(self, immediate: bool = True) -> Iterator[None]:
        """One transaction around the block (the enclosing one when already inside one);
        ``immediate`` takes the write lock at once, before the block reads."""
        conn = self.db.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    def transaction(self, immediate: bool = False) -> contextlib.AbstractContextManager[None]:
        """One transaction around a block of writes (for modules that keep their own tables,
        such as :mod:`engine.review`); joins the enclosing one when already inside one."""
        return self._transaction(immediate)

    # -- data sets ---------------------------------------------------------------------

    def add_dataset(
        self,
        name: str,
        activity: str,
        items: Iterable[dict[str, Any]],
        source: str = "",
        meta: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> int:
        """Store a whole data set in one transaction; return its id.

        Each item needs an ``id`` (kept as its key); ``type1`` or ``category``, if present,
        becomes its category. A name already used raises :class:`StoreError` unless
        ``replace`` is true.
        """
        rows = list(items)
        keys = [str(item["id"]) for item in rows]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise StoreError(f"duplicate item id {dup!r} in data set {name!r}")
        with self._transaction():
            existing = self._dataset_row(name)
            if existing is not None:
                if not replace:
                    raise AlreadyExists(f"a data set named {name!r} already exists")
                self.db.execute("DELETE FROM items WHERE dataset_id = ?", [existing["id"]])
                self.db.execute("DELETE FROM datasets WHERE id = ?", [existing["id"]])
            dataset_id = (
                self.db["datasets"]
                .insert(
                    {
                        "name": name,
                        "activity": activity,
                        "source": source,
                        "created": now(),
                        "n_items": len(rows),
                        "meta": _dump(meta or {}),
                    }
                )
                .last_pk
            )
            self.db["items"].insert_all(
                (
                    {
                        "dataset_id": dataset_id,
                        "key": key,
                        "position": i,
                        "category": item.get("type1") or item.get("category"),
                        "data": _dump(item),
                    }
                    for i, (key, item) in enumerate(zip(keys, rows, strict=True))
                ),
                batch_size=500,
            )
        return int(dataset_id)

    def _dataset_row(self, name: str) -> dict[str, Any] | None:
        rows = list(self.db["datasets"].rows_where("name = ?", [name]))
        return rows[0] if rows else None

    def dataset(self, name: str) -> dict[str, Any]:
        row = self._dataset_row(name)
        if row is None:
            raise StoreError(f"no data set named {name!r}")
        return _decode(row)

    def has_dataset(self, name: str) -> bool:
        return self._dataset_row(name) is not None

    def datasets(self, activity: str | None = None) -> list[dict[str, Any]]:
        where, args = ("activity = ?", [activity]) if activity else (None, None)
        return [_decode(r) for r in self.db["datasets"].rows_where(where, args, order_by="name")]

    def items(self, dataset: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The items of a data set, in import order, as the dicts that were stored."""
        ds = self.dataset(dataset)
        rows = self.db["items"].rows_where(
            "dataset_id = ?", [ds["id"]], order_by="position", limit=limit
        )
        return [_loads(r["data"]) for r in rows]

    def delete_dataset(self, name: str) -> None:
        ds = self.dataset(name)
        with self._transaction():
            self.db.execute("DELETE FROM items WHERE dataset_id = ?", [ds["id"]])
            self.db.execute("DELETE FROM datasets WHERE id = ?", [ds["id"]])

    # -- runs ----------------------------------------------------------------------------

    def start_run(
        self,
        activity: str,
        dataset: str,
        model: str,
        settings: dict[str, Any] | None = None,
        runner: str = "model",
        n_total: int = 0,
    ) -> int:
        """Record the start of a run, owned by this process; ``runner`` is ``model``,
        ``person`` or a baseline name. Return its id (never one a deleted run had)."""
        with self._transaction():
            return int(
                self.db["runs"]
                .insert(
                    {
                        "activity": activity,
                        "dataset": dataset,
                        "model": model,
                        "runner": runner,
                        "settings": _dump(settings or {}),
                        "status": "running",
                        "started": now(),
                        "finished": None,
                        "n_total": n_total,
                        "n_done": 0,
                        "summary": _dump({}),
                        "error": None,
                        **current_owner(),
                    }
                )
                .last_pk
            )

    def run(self, run_id: int) -> dict[str, Any]:
        """One run; its ``status`` reads ``interrupted`` when its owner is gone."""
        from sqlite_utils.db import NotFoundError

        try:
            return _run_view(self.db["runs"].get(run_id))
        except NotFoundError:
            raise StoreError(f"no run with id {run_id}") from None

    def runs(self, activity: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first (statuses as in :meth:`run`)."""
        where, args = ("activity = ?", [activity]) if activity else (None, None)
        rows = self.db["runs"].rows_where(where, args, order_by="id desc", limit=limit)
        return [_run_view(r) for r in rows]

    def live(self, run: int | dict[str, Any]) -> bool:
        """Whether a run (id or dict) may still be at work: its status reads ``running``.

        True for this process's runs and live processes' on this host, and for runs of
        another host (whose processes cannot be checked); false once the owner is gone.
        """
        row = self.run(run) if isinstance(run, int) else run
        return row.get("status") == "running" and owner_alive(row) is not False

    def claim_run(self, run_id: int, force: bool = False) -> dict[str, Any]:
        """Make this process the run's owner and mark it running again (before resuming it).

        Sets status ``running``, clears ``finished`` and ``error``, and returns the run.
        Refused with :class:`StoreError` while another process may still be running it (a
        live process on this host, or any process on another host) unless ``force``.
        """
        with self._transaction(immediate=True):  # no other process claims it meanwhile
            run = self.run(run_id)
            me = current_owner()
            mine = run["owner_pid"] == me["owner_pid"] and run["owner_host"] == host()
            if not force and run["status"] == "running" and not mine:
                raise StoreError(
                    f"run {run_id} is still running in another medexam process "
                    f"(pid {run['owner_pid']} on {run['owner_host']})"
                )
            self.db.execute(
                "UPDATE runs SET status = 'running', finished = NULL, error = NULL, "
                "owner_pid = ?, owner_host = ?, owner_started = ? WHERE id = ?",
                [me["owner_pid"], me["owner_host"], me["owner_started"], run_id],
            )
        return self.run(run_id)

    def update_run(self, run_id: int, **fields: Any) -> None:
        """Change a run's columns. Setting ``status="running"`` claims the run first
        (:meth:`claim_run`); ``interrupted`` is derived and cannot be stored."""
        status = fields.get("status")
        if status == "interrupted":
            raise StoreError("'interrupted' is read from a run whose process is gone, not set")
        if status is not None and status not in RUN_STATUSES:
            raise StoreError(f"unknown run status {status!r}")
        if status == "running":
            self.claim_run(run_id)
        else:
            self.run(run_id)
        values = {k: (_dump(v) if k in JSON_COLUMNS else v) for k, v in fields.items()}
        with self._transaction():
            self.db["runs"].update(run_id, values)

    def finish_run(
        self,
        run_id: int,
        summary: dict[str, Any],
        status: str = "finished",
        error: str | None = None,
    ) -> None:
        """Close a run with its summary; ``status`` is finished, cancelled or failed."""
        if status not in FINAL_STATUSES:
            raise StoreError(
                f"unknown run status {status!r}"
                if status not in RUN_STATUSES
                else f"a run cannot be finished as {status!r}"
            )
        self.update_run(run_id, summary=summary, status=status, finished=now(), error=error)

    def delete_run(self, run_id: int) -> None:
        self.run(run_id)
        with self._transaction():
            self.db.execute("DELETE FROM answers WHERE run_id = ?", [run_id])
            self.db.execute("DELETE FROM turns WHERE run_id = ?", [run_id])
            self.db.execute("DELETE FROM runs WHERE id = ?", [run_id])

    # -- answers -------------------------------------------------------------------------

    def add_answer(
        self,
        run_id: int,
        item_key: str,
        *,
        response: str = "",
        chosen: str | None = None,
        gold: str | None = None,
        correct: bool | None = None,
        scores: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        latency_s: float | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        position: int | None = None,
    ) -> None:
        """Store (or replace) the answer to one item and commit at once."""
        with self._transaction():
            self.db["answers"].upsert(
                {
                    "run_id": run_id,
                    "item_key": str(item_key),
                    "position": position,
                    "response": response,
                    "chosen": chosen,
                    "gold": gold,
                    "correct": None if correct is None else int(bool(correct)),
                    "scores": _dump(scores or {}),
                    "extra": _dump(extra or {}),
                    "latency_s": latency_s,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "created": now(),
                },
                pk=("run_id", "item_key"),
            )
            done = self.db.execute(
                "SELECT count(*) FROM answers WHERE run_id = ?", [run_id]
            ).fetchone()[0]
            self.db["runs"].update(run_id, {"n_done": done})

    def answers(self, run_id: int) -> list[dict[str, Any]]:
        rows = self.db["answers"].rows_where("run_id = ?", [run_id], order_by="position, id")
        return [_decode(r) for r in rows]

    def answered_keys(self, run_id: int) -> set[str]:
        """Item keys a run already answered (what ``--resume`` skips)."""
        rows = self.db.execute("SELECT item_key FROM answers WHERE run_id = ?", [run_id])
        return {r[0] for r in rows}

    # -- consultation turns ----------------------------------------------------------------

    def add_turn(
        self,
        run_id: int,
        item_key: str,
        turn: int,
        role: str,
        text: str,
        *,
        extra: dict[str, Any] | None = None,
        latency_s: float | None = None,
        tokens: int | None = None,
    ) -> None:
        """Store one utterance of a consultation and commit at once."""
        with self._transaction():
            self.db["turns"].insert(
                {
                    "run_id": run_id,
                    "item_key": str(item_key),
                    "turn": turn,
                    "role": role,
                    "text": text,
                    "extra": _dump(extra or {}),
                    "latency_s": latency_s,
                    "tokens": tokens,
                    "created": now(),
                }
            )

    def turns(self, run_id: int, item_key: str | None = None) -> list[dict[str, Any]]:
        where, args = "run_id = ?", [run_id]
        if item_key is not None:
            where, args = where + " AND item_key = ?", [run_id, str(item_key)]
        return [_decode(r) for r in self.db["turns"].rows_where(where, args, order_by="id")]

    def delete_turns(self, run_id: int, item_key: str) -> None:
        """Drop the turns of one unfinished consultation (before it is resumed afresh)."""
        with self._transaction():
            self.db.execute(
                "DELETE FROM turns WHERE run_id = ? AND item_key = ?", [run_id, str(item_key)]
            )

    # -- corpora -------------------------------------------------------------------------

    def add_corpus(
        self,
        name: str,
        passages: Iterable[dict[str, Any]],
        source: str = "",
        fingerprint: str = "",
        meta: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> int:
        """Store a corpus of passages (``{text, source, offset}``) in one transaction."""
        rows = list(passages)
        with self._transaction():
            existing = list(self.db["corpora"].rows_where("name = ?", [name]))
            if existing:
                if not replace:
                    raise AlreadyExists(f"a corpus named {name!r} already exists")
                self.db.execute("DELETE FROM passages WHERE corpus_id = ?", [existing[0]["id"]])
                self.db.execute("DELETE FROM corpora WHERE id = ?", [existing[0]["id"]])
            corpus_id = (
                self.db["corpora"]
                .insert(
                    {
                        "name": name,
                        "source": source,
                        "created": now(),
                        "n_passages": len(rows),
                        "fingerprint": fingerprint,
                        "meta": _dump(meta or {}),
                    }
                )
                .last_pk
            )
            self.db["passages"].insert_all(
                (
                    {
                        "corpus_id": corpus_id,
                        "position": i,
                        "source": p.get("source", ""),
                        "offset": p.get("offset", 0),
                        "text": p["text"],
                    }
                    for i, p in enumerate(rows)
                ),
                batch_size=1000,
            )
        return int(corpus_id)

    def corpus(self, name: str) -> dict[str, Any]:
        rows = list(self.db["corpora"].rows_where("name = ?", [name]))
        if not rows:
            raise StoreError(f"no corpus named {name!r}")
        return _decode(rows[0])

    def corpora(self) -> list[dict[str, Any]]:
        return [_decode(r) for r in self.db["corpora"].rows_where(order_by="name")]

    def passages(self, corpus: str) -> Iterator[dict[str, Any]]:
        """The passages of a corpus in order: ``{position, source, offset, text}``."""
        c = self.corpus(corpus)
        yield from self.db.query(
            "SELECT position, source, offset, text FROM passages WHERE corpus_id = ? "
            "ORDER BY position",
            [c["id"]],
        )
