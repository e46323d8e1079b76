"""The database schema, one migration per version.

``PRAGMA user_version`` holds the schema version. :func:`migrate` applies every migration
newer than it, each in its own transaction, so an interrupted upgrade leaves the database
at the last complete version. Append new migrations; never edit a released one.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]


def _m1_initial(db: sqlite_utils.Database) -> None:
    db["datasets"].create(
        {
            "id": int,
            "name": str,
            "activity": str,
            "source": str,
            "created": str,
            "n_items": int,
            "meta": str,
        },
        pk="id",
        not_null={"name", "activity"},
    )
    db["datasets"].create_index(["name"], unique=True)
    db["items"].create(
        {"id": int, "dataset_id": int, "key": str, "position": int, "category": str, "data": str},
        pk="id",
        foreign_keys=[("dataset_id", "datasets", "id")],
    )
    db["items"].create_index(["dataset_id", "key"], unique=True)
    db["runs"].create(
        {
            "id": int,
            "activity": str,
            "dataset": str,
            "model": str,
            "runner": str,
            "settings": str,
            "status": str,
            "started": str,
            "finished": str,
            "n_total": int,
            "n_done": int,
            "summary": str,
            "error": str,
        },
        pk="id",
    )
    db["runs"].create_index(["activity"])
    db["answers"].create(
        {
            "id": int,
            "run_id": int,
            "item_key": str,
            "position": int,
            "response": str,
            "chosen": str,
            "gold": str,
            "correct": int,
            "scores": str,
            "extra": str,
            "latency_s": float,
            "prompt_tokens": int,
            "completion_tokens": int,
            "created": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["answers"].create_index(["run_id", "item_key"], unique=True)
    db["turns"].create(
        {
            "id": int,
            "run_id": int,
            "item_key": str,
            "turn": int,
            "role": str,
            "text": str,
            "extra": str,
            "latency_s": float,
            "tokens": int,
            "created": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["turns"].create_index(["run_id", "item_key", "turn"])
    db["corpora"].create(
        {
            "id": int,
            "name": str,
            "source": str,
            "created": str,
            "n_passages": int,
            "fingerprint": str,
            "meta": str,
        },
        pk="id",
        not_null={"name"},
    )
    db["corpora"].create_index(["name"], unique=True)
    db["passages"].create(
        {"id": int, "corpus_id": int, "position": int, "source": str, "offset": int, "text": str},
        pk="id",
        foreign_keys=[("corpus_id", "corpora", "id")],
    )
    db["passages"].create_index(["corpus_id", "position"], unique=True)


MIGRATIONS: list[Migration] = [_m1_initial]
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(db: sqlite_utils.Database) -> int:
    return db.execute("PRAGMA user_version").fetchone()[0]


def migrate(db: sqlite_utils.Database, migrations: list[Migration] | None = None) -> int:
    """Bring ``db`` up to the newest schema; return the version it is at."""
    steps = MIGRATIONS if migrations is None else migrations
    current = schema_version(db)
    if current > len(steps):
        raise RuntimeError(
            f"database schema version {current} is newer than this medexam ({len(steps)}); "
            "upgrade medexam"
        )
    for version, step in enumerate(steps[current:], start=current + 1):
        with db.conn:
            step(db)
            db.execute(f"PRAGMA user_version = {version}")
    return schema_version(db)
