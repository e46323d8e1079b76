"""Trainings in the database (the ``trainings`` table, schema 7), kept the way runs are.

A training records the process that runs it; its status reads ``running`` while that process
may be at work and ``interrupted`` once it is gone without finishing (kill -9, a crash: read
so, never written, as for runs — :func:`engine.store.owner.owner_alive`). :func:`claim` makes the
calling process its owner before it is resumed. JSON columns (``data``, ``settings``,
``loss_curve``, ``evals``, ``result``) are decoded on the way out.

>>> from engine.store.store import Store
>>> store = Store(":memory:")
>>> tid = start(store, "demo", "french-reader", "train", {}, {"epochs": 1}, "cpu", 4)
>>> get(store, tid)["status"], get(store, tid)["loss_curve"]
('running', [])
>>> finish(store, tid, "finished", {"artefact": "demo"})
>>> get(store, tid)["status"]
'finished'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engine.store.dbfile import StoreError, now
from engine.store.owner import current_owner, host
from engine.store.store import FINAL_STATUSES, owned_view

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict

JSON_COLUMNS = ("data", "settings", "loss_curve", "evals", "result")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _view(row: dict[str, Any]) -> JSONDict:
    return owned_view(row, JSON_COLUMNS)


def start(
    store: Store,
    name: str,
    kind: str,
    dataset: str,
    data: JSONDict,
    settings: JSONDict,
    device: str,
    n_steps: int,
) -> int:
    """Record the start of a training owned by this process; return its id."""
    row = {
        "name": name,
        "kind": kind,
        "dataset": dataset,
        "data": _dump(data),
        "settings": _dump(settings),
        "status": "running",
        "device": device,
        "step": 0,
        "n_steps": n_steps,
        "epoch": 0,
        "loss_curve": _dump([]),
        "evals": _dump([]),
        "result": _dump({}),
        "error": None,
        "started": now(),
        "finished": None,
        **current_owner(),
    }
    with store.transaction(immediate=True):
        # last_pk is set after an insert
        return int(store.db.table("trainings").insert(row).last_pk)  # type: ignore[arg-type]


def get(store: Store, training_id: int) -> JSONDict:
    """One training (its status ``interrupted`` when its owner is gone)."""
    rows = list(store.db["trainings"].rows_where("id = ?", [training_id]))
    if not rows:
        raise StoreError(f"no training with id {training_id}")
    return _view(rows[0])


def all_trainings(store: Store, kind: str | None = None) -> list[JSONDict]:
    """Every training, newest first (of one kind, when given)."""
    where, args = ("kind = ?", [kind]) if kind else (None, None)
    return [_view(r) for r in store.db["trainings"].rows_where(where, args, order_by="id desc")]


def by_name(store: Store, name: str) -> list[JSONDict]:
    """The trainings that made (or are making) the artefact ``name``, newest first."""
    rows = store.db["trainings"].rows_where("name = ?", [name], order_by="id desc")
    return [_view(r) for r in rows]


def claim(store: Store, training_id: int) -> JSONDict:
    """Make this process the training's owner and mark it running again (before resuming);
    refused while another live process may still run it."""
    with store.transaction(immediate=True):
        row = get(store, training_id)
        me = current_owner()
        mine = row["owner_pid"] == me["owner_pid"] and row["owner_host"] == host()
        if row["status"] == "running" and not mine:
            raise StoreError(
                f"training {training_id} is still running in another medexam process "
                f"(pid {row['owner_pid']} on {row['owner_host']})"
            )
        store.db.execute(
            "UPDATE trainings SET status = 'running', finished = NULL, error = NULL, "
            "owner_pid = ?, owner_host = ?, owner_started = ? WHERE id = ?",
            [me["owner_pid"], me["owner_host"], me["owner_started"], training_id],
        )
    return get(store, training_id)


def update(store: Store, training_id: int, **fields: Any) -> None:
    """Change a training's columns (JSON ones given as values)."""
    values = {k: (_dump(v) if k in JSON_COLUMNS else v) for k, v in fields.items()}
    with store.transaction(immediate=True):
        store.db.table("trainings").update(training_id, values)


def finish(
    store: Store, training_id: int, status: str, result: JSONDict, error: str | None = None
) -> None:
    """Close a training: ``status`` is finished, cancelled or failed."""
    if status not in FINAL_STATUSES:
        raise StoreError(f"a training cannot be finished as {status!r}")
    update(store, training_id, status=status, result=result, error=error, finished=now())
