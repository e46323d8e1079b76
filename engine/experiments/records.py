"""Experiments in the store: one ``experiments`` row per experiment (its name, the key of its
runs' settings, what was asked) and one ``experiment_cells`` row per run it needs, in order,
holding that run's id once it is started or reused. The runs themselves stay ordinary runs;
a cell whose run was deleted is played again.

An experiment's status is read from its runs: ``finished`` when every cell's run finished
(or its model cannot play it: :data:`NO_ROOM`), ``running`` while one runs, ``planned`` before any
started, ``failed`` when a cell's run could not start (its ``error`` says why), else the first
unfinished run's (``cancelled``, ``interrupted``, ``failed``) — what ``experiment run`` goes on
from. A cell whose run answered items its data set no longer holds (replaced since) reads
:data:`CHANGED` and is played again.

A process takes a cell before it plays it (:func:`claim`, in one transaction holding the
write lock): two ``experiment run`` on one database never play the same cell; the second
takes the cells the first has not, or waits for them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engine.store.dbfile import StoreError, now

if TYPE_CHECKING:
    from engine.experiments.cells import Plan
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: A cell's status before its run exists (or after its run was deleted).
NOT_STARTED = "not started"
#: A cell's status when its run could not start (its ``error`` says why).
NOT_STARTING = "could not start"
#: A cell's status when its run answered items its data set no longer holds.
CHANGED = "data set changed"
#: The statuses of a cell with no run of its own to go on with (one is started).
TO_START = (NOT_STARTED, CHANGED)
#: A cell's status when its model cannot play it (its prompts do not fit the model's context,
#: :class:`engine.core.runs.NoRoom`): no run, its ``error`` says why, and the tables show it.
NO_ROOM = "does not fit"
_NO_ROOM_MARK = NO_ROOM + ": "  # how the error column tells such a cell


def _load(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text


def create(store: Store, plan: Plan) -> int:
    """Store a new experiment of ``plan`` (its reused runs in their cells); its id."""
    with store.transaction(immediate=True):
        # last_pk is set after an insert
        experiment_id = int(
            store.db.table("experiments")  # type: ignore[arg-type]
            .insert(
                {
                    "name": plan.name,
                    "key": plan.key,
                    "spec": json.dumps({"title": plan.title, **plan.spec}),
                    "created": now(),
                }
            )
            .last_pk
        )
        store.db.table("experiment_cells").insert_all(
            (
                {
                    "experiment_id": experiment_id,
                    "position": position,
                    "label": planned.cell.label,
                    "activity": planned.cell.activity,
                    "dataset": planned.cell.dataset,
                    "settings": json.dumps(planned.cell.settings),
                    "coords": json.dumps(planned.cell.coords),
                    "run_id": planned.reuse,
                    "reused": int(planned.reuse is not None),
                }
                for position, planned in enumerate(plan.cells)
            ),
            batch_size=500,
        )
    return experiment_id


def find_or_create(store: Store, plan: Plan) -> tuple[int, bool]:
    """The newest experiment of ``plan``'s runs, else a new one (one transaction: two
    processes opening the same plan get the same experiment); its id and whether it is new."""
    with store.transaction(immediate=True):
        found = find(store, plan.key)
        return (found, False) if found is not None else (create(store, plan), True)


def find(store: Store, key: str) -> int | None:
    """The newest experiment whose runs have the settings ``key`` (:attr:`Plan.key`)."""
    row = store.db.execute(
        "SELECT id FROM experiments WHERE key = ? ORDER BY id DESC LIMIT 1", [key]
    ).fetchone()
    return None if row is None else int(row[0])


def set_run(store: Store, cell_id: int, run_id: int, reused: bool = False) -> None:
    """Record the run that plays cell ``cell_id`` (as soon as it exists)."""
    values = {"run_id": run_id, "reused": int(reused), "error": None}
    with store.transaction(immediate=True):
        store.db.table("experiment_cells").update(cell_id, values)


def set_error(store: Store, cell_id: int, error: str | None, no_room: bool = False) -> None:
    """Record why cell ``cell_id`` could not start its run (None: clear it); ``no_room``:
    its model cannot play it (:data:`NO_ROOM`)."""
    if error is not None and no_room:
        error = _NO_ROOM_MARK + error
    with store.transaction(immediate=True):
        store.db.table("experiment_cells").update(cell_id, {"error": error})


def _status(run: Row | None, error: str | None) -> tuple[str, str | None]:
    """A cell's status and error from its run and its error column."""
    if run is not None:
        return run["status"], None
    if not error:
        return NOT_STARTED, None
    if error.startswith(_NO_ROOM_MARK):
        return NO_ROOM, error.removeprefix(_NO_ROOM_MARK)
    return NOT_STARTING, error


def _run_or_none(store: Store, run_id: int | None) -> Row | None:
    if run_id is None:
        return None
    try:
        return store.run(int(run_id))
    except StoreError:  # deleted since
        return None


def _cell(store: Store, row: Row) -> JSONDict:
    """A cell as stored, with its ``run`` (None: not started) and ``status`` (its run's,
    :data:`CHANGED`, :data:`NO_ROOM`, :data:`NOT_STARTING` or :data:`NOT_STARTED`)."""
    run = _run_or_none(store, row["run_id"])
    status, error = _status(run, row["error"])
    if run is not None and store.items_changed(run):
        status = CHANGED
    return {
        "id": row["id"],
        "position": row["position"],
        "label": row["label"],
        "activity": row["activity"],
        "dataset": row["dataset"],
        "settings": _load(row["settings"]) or {},
        "coords": _load(row["coords"]) or {},
        "run_id": None if run is None else int(run["id"]),
        "reused": bool(row["reused"]) and run is not None,
        "status": status,
        "error": error,
        "run": run,
    }


def cells(store: Store, experiment_id: int) -> list[JSONDict]:
    """The cells of an experiment in order (as :func:`_cell` reads each)."""
    rows = store.db["experiment_cells"].rows_where(
        "experiment_id = ?", [experiment_id], order_by="position"
    )
    return [_cell(store, row) for row in rows]


def _held_elsewhere(row: Row, run: Row | None) -> bool:
    """Whether another live process plays the cell: its run runs there, or that process
    took the cell (:func:`claim`) and is starting its run."""
    from engine.store.owner import current_owner, owner_alive

    me = current_owner()
    for owner in (run, row):
        if owner is None or owner.get("owner_pid") is None:
            continue
        mine = owner["owner_pid"] == me["owner_pid"] and owner["owner_host"] == me["owner_host"]
        alive = owner.get("status", "running") == "running" and owner_alive(owner) is not False
        if alive and not mine:
            return True
    return False


def claim(store: Store, cell_id: int) -> tuple[str, JSONDict]:
    """Take cell ``cell_id`` for this process to play, in one transaction holding the write
    lock, and the cell as stored now: ``"mine"`` (taken), ``"done"`` (its run finished) or
    ``"taken"`` (another live process plays it: :func:`release` gives it back)."""
    from engine.store.owner import current_owner

    with store.transaction(immediate=True):
        row = store.db.table("experiment_cells").get(cell_id)
        cell = _cell(store, row)
        if cell["status"] == "finished":
            return "done", cell
        if _held_elsewhere(row, cell["run"] if cell["status"] != CHANGED else None):
            return "taken", cell
        store.db.table("experiment_cells").update(cell_id, dict(current_owner()))
    return "mine", cell


def release(store: Store, cell_id: int) -> None:
    """Give back a cell this process took (:func:`claim`)."""
    free = {"owner_pid": None, "owner_host": None, "owner_started": None}
    with store.transaction(immediate=True):
        store.db.table("experiment_cells").update(cell_id, free)


def status_of(found: list[JSONDict]) -> str:
    """An experiment's status from its cells' (see the module's doc)."""
    statuses = [c["status"] for c in found]
    if statuses and all(s in ("finished", NO_ROOM) for s in statuses):
        return "finished"
    if "running" in statuses:
        return "running"
    if all(s in TO_START for s in statuses):
        return "planned"
    if NOT_STARTING in statuses:
        return "failed"
    unfinished = [s for s in statuses if s not in ("finished", NO_ROOM, *TO_START)]
    return unfinished[0] if unfinished else "cancelled"


def get(store: Store, experiment_id: int) -> JSONDict:
    """One experiment: ``id``, ``name``, ``spec``, ``created``, its ``cells`` (with their runs)
    and ``status``; :class:`StoreError` when there is none."""
    row = store.db.execute(
        "SELECT id, name, key, spec, created FROM experiments WHERE id = ?", [experiment_id]
    ).fetchone()
    if row is None:
        raise StoreError(f"no experiment with id {experiment_id}")
    found = cells(store, experiment_id)
    spec = _load(row[3]) or {}
    return {
        "id": int(row[0]),
        "name": row[1],
        "title": spec.get("title") or row[1],
        "key": row[2],
        "spec": spec,
        "created": row[4],
        "status": status_of(found),
        "cells": found,
    }


def all_experiments(store: Store) -> list[JSONDict]:
    """Every experiment, newest first (as :func:`get`)."""
    ids = [int(r[0]) for r in store.db.execute("SELECT id FROM experiments ORDER BY id DESC")]
    return [get(store, i) for i in ids]
