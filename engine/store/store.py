"""The SQLite store: data sets and their items, runs, per-item answers, consultation turns,
retrieval corpora and their passages.

Every write commits at once, so an interrupted run keeps every answer it produced and can be
resumed. JSON-valued columns (``data``, ``settings``, ``summary``, ``extra``, ``meta``) are
decoded on the way out. An answer's scores are rows of their own (``scores``: one per scorer
and key, see :mod:`engine.core.scoring`), read back merged into each answer's ``scores`` and
``correct``.

>>> store = Store(":memory:")
>>> store.add_dataset("demo", "exam", [{"id": "q1", "question": "…"}])
1
>>> run_id = store.start_run("exam", "demo", "smollm2", {"shots": 0})
>>> from engine.types import Scored
>>> right = [Scored("exam.letter", 1, {"correct": True})]  # scored before it is stored
>>> store.add_answer(run_id, "q1", response="B", chosen="B", gold="B", scores=right)
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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engine.paths import default_db_path
from engine.store.corpusrows import CorpusRows
from engine.store.dbfile import (
    JSON_COLUMNS,
    AlreadyExists,
    StoreError,
    check_file,
    decode_json,
    dump_json,
    hold,
    load_json,
    now,
    open_database,
    release,
)
from engine.store.fingerprint import items_fingerprint
from engine.store.owner import current_owner, host, owner_alive
from engine.store.scorerows import ScoreRows

if TYPE_CHECKING:
    import sqlite_utils

    from engine.types import AnswerRow, DatasetRow, JSONDict, RunRow, Scored, ScoreValue, TurnRow

#: Every status a run can read as; ``interrupted`` is derived, never stored.
RUN_STATUSES = ("running", "finished", "cancelled", "failed", "interrupted")
#: The statuses :meth:`Store.finish_run` closes a run with.
FINAL_STATUSES = ("finished", "cancelled", "failed")


def owned_view(row: dict[str, Any], columns: Iterable[str] = JSON_COLUMNS) -> dict[str, Any]:
    """A row of a table whose rows record the process at work on them (runs, trainings),
    its JSON ``columns`` decoded, its ``running`` status read ``interrupted`` once that
    process is gone (rows stored before owners were recorded have none: gone too)."""
    out = decode_json(row, columns)
    if out.get("status") == "running" and owner_alive(out) is False:
        out["status"] = "interrupted"
    return out


def check_path(path: str | Path | None = None) -> None:
    """The checks :class:`Store` makes before opening ``path`` (``None``: the default
    database), without opening it: a folder, a missing folder, a file that is not SQLite or
    one cut short is refused with :class:`StoreError`. Cheap enough to run before anything
    else."""
    env = os.environ.get("MEDEXAM_DB") if path is None else None
    chosen = path is not None or bool(env)
    target = str(path) if path is not None else str(default_db_path())
    if target != ":memory:":
        try:
            check_file(Path(target), create_folder=not chosen)
        except StoreError as exc:
            if not env:
                raise
            raise StoreError(f"MEDEXAM_DB={env} is not usable: {exc}") from None


class Store(ScoreRows, CorpusRows):
    """A medexam database. ``path`` defaults to the user data folder's ``medexam.db``.

    Opening refuses with one clear :class:`StoreError`, leaving the file untouched, a file
    that is not a medexam database (another program's SQLite database included), one that is
    truncated or damaged, one written by a newer medexam, and a path whose folder does not
    exist (only the default database's folder is created). A database that cannot be written
    is opened ``read_only`` (see :mod:`engine.store.dbfile`).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else str(default_db_path())
        check_path(path)
        opened = open_database(self.path)
        self.db: sqlite_utils.Database = opened.db
        self.version = opened.version
        self.read_only = opened.read_only
        self._held = self.path != ":memory:"
        if self._held:
            hold(self.path)

    def close(self) -> None:
        self.db.close()
        if self._held:
            self._held = False
            release(self.path)

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
        items: Iterable[Mapping[str, Any]],
        source: str = "",
        meta: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> int:
        """Store a whole data set in one transaction; return its id.

        Each item needs an ``id`` (kept as its key); ``type1`` or ``category``, if present,
        becomes its category. A name already used raises :class:`StoreError` unless
        ``replace`` is true. The data set's ``fingerprint`` is its items'
        (:func:`items_fingerprint`).
        """
        rows = list(items)
        keys = [str(item["id"]) for item in rows]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise StoreError(f"duplicate item id {dup!r} in data set {name!r}")
        texts = [str(dump_json(item)) for item in rows]
        with self._transaction():
            existing = self._dataset_row(name)
            if existing is not None:
                if not replace:
                    raise AlreadyExists(f"a data set named {name!r} already exists")
                self.db.execute("DELETE FROM items WHERE dataset_id = ?", [existing["id"]])
                self.db.execute("DELETE FROM datasets WHERE id = ?", [existing["id"]])
            dataset_id = (
                self.db.table("datasets")
                .insert(
                    {
                        "name": name,
                        "activity": activity,
                        "source": source,
                        "created": now(),
                        "n_items": len(rows),
                        "meta": dump_json(meta or {}),
                        "fingerprint": items_fingerprint(zip(keys, texts, strict=True)),
                    }
                )
                .last_pk
            )
            self.db.table("items").insert_all(
                (
                    {
                        "dataset_id": dataset_id,
                        "key": key,
                        "position": i,
                        "category": item.get("type1") or item.get("category"),
                        "data": text,
                    }
                    for i, (key, item, text) in enumerate(zip(keys, rows, texts, strict=True))
                ),
                batch_size=500,
            )
        return int(dataset_id)  # type: ignore[arg-type]  # last_pk is set after an insert

    def _dataset_row(self, name: str) -> dict[str, Any] | None:
        rows = list(self.db["datasets"].rows_where("name = ?", [name]))
        return rows[0] if rows else None

    def dataset(self, name: str) -> DatasetRow:
        """The data set ``name``; a sample medexam ships is imported the first time it is
        asked for."""
        row = self._dataset_row(name)
        if row is None and self._import_sample(name):
            row = self._dataset_row(name)
        if row is None:
            raise StoreError(f"no data set named {name!r}{self._known_datasets(name)}")
        return cast("DatasetRow", decode_json(row))

    def _import_sample(self, name: str) -> bool:
        """Import the sample data set ``name`` when an activity ships one by that name (the
        samples need no import step); whether it did."""
        from engine.registry import entries

        for found in entries("activity").values():
            if found.sample is not None and found.sample_dataset == name:
                found.sample.load()(self)
                return True
        return False

    def _known_datasets(self, name: str) -> str:
        """`` (did you mean 'cpe-test'? known: …)``: the nearest names and the others."""
        from difflib import get_close_matches

        names = [str(r[0]) for r in self.db.execute("SELECT name FROM datasets ORDER BY name")]
        if not names:
            return " (none imported yet)"
        near = get_close_matches(name, names, n=1, cutoff=0.6)
        shown = ", ".join(names[:12]) + (f", … ({len(names)} in all)" if len(names) > 12 else "")
        said = f"did you mean {near[0]!r}? " if near else ""
        return f" ({said}known: {shown})"

    def has_dataset(self, name: str) -> bool:
        return self._dataset_row(name) is not None

    def datasets(self, activity: str | None = None) -> list[DatasetRow]:
        where, args = ("activity = ?", [activity]) if activity else (None, None)
        return [
            cast("DatasetRow", decode_json(r))
            for r in self.db["datasets"].rows_where(where, args, order_by="name")
        ]

    def items(self, dataset: str, limit: int | None = None) -> list[JSONDict]:
        """The items of a data set, in import order, as the dicts that were stored."""
        ds = self.dataset(dataset)
        rows = self.db["items"].rows_where(
            "dataset_id = ?", [ds["id"]], order_by="position", limit=limit
        )
        return [load_json(r["data"]) for r in rows]

    def items_by_key(self, dataset: str) -> dict[str, JSONDict] | None:
        """The items of a data set by key (``str(item["id"])``), in import order; None when
        no data set has that name (that of a stored run may have been deleted since)."""
        row = self._dataset_row(dataset)
        if row is None:
            return None
        rows = self.db["items"].rows_where("dataset_id = ?", [row["id"]], order_by="position")
        return {r["key"]: load_json(r["data"]) for r in rows}

    def items_changed(self, run: Mapping[str, Any]) -> bool:
        """Whether the data set of ``run`` no longer holds the items the run was played on:
        replaced by other items since (its fingerprint is not the run's), or deleted."""
        row = self._dataset_row(str(run["dataset"]))
        if row is None:
            return True
        return row.get("fingerprint") != run.get("dataset_fingerprint")

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
        ``person`` or a baseline name; with its data set's fingerprint (the items it answers).
        Return its id (never one a deleted run had)."""
        with self._transaction():
            found = self._dataset_row(dataset)
            return int(
                self.db.table("runs")  # type: ignore[arg-type]  # last_pk is set after an insert
                .insert(
                    {
                        "activity": activity,
                        "dataset": dataset,
                        "model": model,
                        "runner": runner,
                        "settings": dump_json(settings or {}),
                        "status": "running",
                        "started": now(),
                        "finished": None,
                        "n_total": n_total,
                        "n_done": 0,
                        "summary": dump_json({}),
                        "error": None,
                        **current_owner(),
                        "dataset_fingerprint": found.get("fingerprint") if found else None,
                    }
                )
                .last_pk
            )

    def run(self, run_id: int) -> RunRow:
        """One run; its ``status`` reads ``interrupted`` when its owner is gone."""
        from sqlite_utils.db import NotFoundError

        try:
            return cast("RunRow", owned_view(self.db.table("runs").get(run_id)))
        except NotFoundError:
            raise StoreError(f"no run with id {run_id}") from None

    def runs(self, activity: str | None = None, limit: int | None = None) -> list[RunRow]:
        """Runs, newest first (statuses as in :meth:`run`)."""
        where, args = ("activity = ?", [activity]) if activity else (None, None)
        rows = self.db["runs"].rows_where(where, args, order_by="id desc", limit=limit)
        return [cast("RunRow", owned_view(r)) for r in rows]

    def live(self, run: int | RunRow) -> bool:
        """Whether a run (id or dict) may still be at work: its status reads ``running``.

        True for this process's runs and live processes' on this host, and for runs of
        another host (whose processes cannot be checked); false once the owner is gone.
        """
        row = self.run(run) if isinstance(run, int) else run
        return row.get("status") == "running" and owner_alive(row) is not False

    def claim_run(self, run_id: int, force: bool = False) -> RunRow:
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
        values = {k: (dump_json(v) if k in JSON_COLUMNS else v) for k, v in fields.items()}
        with self._transaction():
            self.db.table("runs").update(run_id, values)

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

    # -- answers -------------------------------------------------------------------------

    def add_answer(
        self,
        run_id: int,
        item_key: str,
        *,
        response: str = "",
        chosen: str | None = None,
        gold: str | None = None,
        scores: Sequence[Scored] = (),
        extra: JSONDict | None = None,
        latency_s: float | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        position: int | None = None,
    ) -> None:
        """Store (or replace) the answer to one item with its scores, and commit at once.

        ``scores`` are the scorers' results (:class:`engine.core.scoring.Scored`): an answer is
        scored before it is stored (:func:`engine.core.scoring.score_answer`), never here.
        """
        scored = self._scored_only(scores)
        with self._transaction():
            self.db.table("answers").upsert(
                {
                    "run_id": run_id,
                    "item_key": str(item_key),
                    "position": position,
                    "response": response,
                    "chosen": chosen,
                    "gold": gold,
                    "extra": dump_json(extra or {}),
                    "latency_s": latency_s,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "created": now(),
                },
                pk=("run_id", "item_key"),
            )
            self.db.execute(
                "DELETE FROM scores WHERE run_id = ? AND item_key = ?", [run_id, str(item_key)]
            )
            self._insert_scores(run_id, str(item_key), scored)
            done = self.db.execute(
                "SELECT count(*) FROM answers WHERE run_id = ?", [run_id]
            ).fetchone()[0]
            self.db.table("runs").update(run_id, {"n_done": done})

    def answers(self, run_id: int) -> list[AnswerRow]:
        """A run's answers in order, each with ``scores`` (every computed scorer's values by
        key, the latest stored last; what people and judges rate, stored as ``scorer@who``,
        is read with :meth:`ratings`) and ``correct`` (1, 0, or None when nothing scored it)."""
        rows = self.db["answers"].rows_where("run_id = ?", [run_id], order_by="position, id")
        scores: dict[str, dict[str, ScoreValue]] = {}
        for key, name, value in self.db.execute(
            "SELECT item_key, key, value FROM scores WHERE run_id = ? "
            "AND instr(scorer, '@') = 0 ORDER BY id",
            [run_id],
        ):
            scores.setdefault(key, {})[name] = value
        out: list[AnswerRow] = []
        for row in rows:
            answer = cast("AnswerRow", decode_json(row))
            found = scores.get(str(answer["item_key"]), {})
            right = found.get("correct")
            answer["scores"] = {k: v for k, v in found.items() if k != "correct"}
            answer["correct"] = None if right is None else int(bool(right))
            out.append(answer)
        return out

    def answered_keys(self, run_id: int) -> set[str]:
        """Item keys a run already answered (what ``--resume`` skips): an item whose answer
        failed (``extra["error"]``: the model could not take it) is tried again."""
        rows = self.db.execute(
            "SELECT item_key FROM answers WHERE run_id = ? "
            "AND json_extract(extra, '$.error') IS NULL",
            [run_id],
        )
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
            self.db.table("turns").insert(
                {
                    "run_id": run_id,
                    "item_key": str(item_key),
                    "turn": turn,
                    "role": role,
                    "text": text,
                    "extra": dump_json(extra or {}),
                    "latency_s": latency_s,
                    "tokens": tokens,
                    "created": now(),
                }
            )

    def turns(self, run_id: int, item_key: str | None = None) -> list[TurnRow]:
        where, args = "run_id = ?", list[object]([run_id])
        if item_key is not None:
            where, args = where + " AND item_key = ?", [run_id, str(item_key)]
        rows = self.db["turns"].rows_where(where, args, order_by="id")
        return [cast("TurnRow", decode_json(r)) for r in rows]

    def delete_turns(self, run_id: int, item_key: str) -> None:
        """Drop the turns of one unfinished consultation (before it is resumed afresh)."""
        with self._transaction():
            self.db.execute(
                "DELETE FROM turns WHERE run_id = ? AND item_key = ?", [run_id, str(item_key)]
            )
