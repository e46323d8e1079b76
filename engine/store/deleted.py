"""Deleting runs, with an undo for the last delete.

A delete keeps what it removes — each run's row with its answers, scores and turns, as
stored — in the ``deleted_runs`` table, replacing what the delete before it kept, so the
last delete can be undone (``medexam runs undelete``). A run that another medexam process is
still running is refused; once that process is gone (the run reads ``interrupted``) it can
be deleted.

>>> delete_runs(store, [12])                                  # doctest: +SKIP
>>> restore_deleted(store)                                    # doctest: +SKIP
[12]
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.store.dbfile import StoreError, now
from engine.store.owner import current_owner, host

if TYPE_CHECKING:
    from engine.store.store import Store

#: A run's rows in other tables, restored in this order after the run itself.
RUN_TABLES = ("answers", "scores", "turns")


def _rows(store: Store, sql: str, args: list[Any]) -> list[dict[str, Any]]:
    cursor = store.db.execute(sql, args)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def check_deletable(store: Store, run_id: int) -> None:
    """Refuse (:class:`StoreError`) a run that is not there, one still running in another
    process (a live one on this host, or any on another host), or a read-only database."""
    run = store.run(run_id)
    if store.read_only:
        raise StoreError(f"{store.path} is read-only: run {run_id} cannot be deleted")
    mine = run["owner_pid"] == current_owner()["owner_pid"] and run["owner_host"] == host()
    if run["status"] == "running" and not mine:
        raise StoreError(
            f"run {run_id} is still running in another medexam process (pid "
            f"{run['owner_pid']} on {run['owner_host']}): stop it first"
        )


def delete_runs(store: Store, run_ids: Iterable[int]) -> None:
    """Delete ``run_ids`` with their answers, scores and turns in one transaction, keeping
    them for :func:`restore_deleted` in place of what the previous delete kept. Nothing is
    deleted when one of them is refused (:func:`check_deletable`)."""
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    with store.transaction(immediate=True):
        for run_id in ids:
            check_deletable(store, run_id)
        store.db.execute("DELETE FROM deleted_runs")
        for run_id in ids:
            kept: dict[str, object] = {
                "run": _rows(store, "SELECT * FROM runs WHERE id = ?", [run_id])[0]
            }
            for table in RUN_TABLES:
                sql = f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id"
                kept[table] = _rows(store, sql, [run_id])
            store.db.execute(
                "INSERT INTO deleted_runs (run_id, deleted, data) VALUES (?, ?, ?)",
                [run_id, now(), json.dumps(kept, ensure_ascii=False)],
            )
            for table in RUN_TABLES:
                store.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            store.db.execute("DELETE FROM runs WHERE id = ?", [run_id])


def deleted_runs(store: Store) -> list[dict[str, Any]]:
    """The runs the last delete kept (each run's row as stored), oldest id first."""
    found = _rows(store, "SELECT data FROM deleted_runs ORDER BY run_id", [])
    return [json.loads(r["data"])["run"] for r in found]


def _insert(store: Store, table: str, row: dict[str, Any]) -> None:
    """Insert ``row``'s values of the columns ``table`` has (nothing else is named in SQL)."""
    known = {r["name"] for r in _rows(store, "SELECT name FROM pragma_table_info(?)", [table])}
    row = {k: v for k, v in row.items() if k in known}
    columns = ", ".join(f'"{k}"' for k in row)
    marks = ", ".join("?" for _ in row)
    store.db.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))


def restore_deleted(store: Store) -> list[int]:
    """Bring back the runs of the last delete with their answers, scores and turns (each
    under its own id, in its own order); return their ids. Refused (:class:`StoreError`)
    when there is nothing to restore."""
    with store.transaction(immediate=True):
        found = _rows(store, "SELECT run_id, data FROM deleted_runs ORDER BY run_id", [])
        if not found:
            raise StoreError("there is no deleted run to restore")
        try:
            for entry in found:
                kept = json.loads(entry["data"])
                _insert(store, "runs", kept["run"])
                for table in RUN_TABLES:
                    for row in kept.get(table, []):
                        _insert(store, table, {k: v for k, v in row.items() if k != "id"})
        except (ValueError, TypeError, KeyError, AttributeError, sqlite3.Error) as exc:
            raise StoreError(f"the deleted runs kept cannot be restored ({exc})") from None
        store.db.execute("DELETE FROM deleted_runs")
    return [int(e["run_id"]) for e in found]
