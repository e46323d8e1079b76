"""The database schema, one migration per version.

``PRAGMA user_version`` holds the schema version. :func:`migrate` applies every migration
newer than it, each in its own transaction, so an interrupted upgrade leaves the database
at the last complete version. Append new migrations; never edit a released one.
``PRAGMA application_id`` marks the file as medexam's (:data:`APPLICATION_ID`): :func:`migrate`
sets it on every database it brings up to date, new or written before the mark existed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.errors import MedexamError

if TYPE_CHECKING:
    import sqlite_utils

Migration = Callable[["sqlite_utils.Database"], None]


def _m1_initial(db: sqlite_utils.Database) -> None:
    db.table("datasets").create(
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
    db.table("datasets").create_index(["name"], unique=True)
    db.table("items").create(
        {"id": int, "dataset_id": int, "key": str, "position": int, "category": str, "data": str},
        pk="id",
        foreign_keys=[("dataset_id", "datasets", "id")],
    )
    db.table("items").create_index(["dataset_id", "key"], unique=True)
    db.table("runs").create(
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
    db.table("runs").create_index(["activity"])
    db.table("answers").create(
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
    db.table("answers").create_index(["run_id", "item_key"], unique=True)
    db.table("turns").create(
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
    db.table("turns").create_index(["run_id", "item_key", "turn"])
    db.table("corpora").create(
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
    db.table("corpora").create_index(["name"], unique=True)
    db.table("passages").create(
        {"id": int, "corpus_id": int, "position": int, "source": str, "offset": int, "text": str},
        pk="id",
        foreign_keys=[("corpus_id", "corpora", "id")],
    )
    db.table("passages").create_index(["corpus_id", "position"], unique=True)


RUN_COLUMNS = (
    "activity TEXT, dataset TEXT, model TEXT, runner TEXT, settings TEXT, status TEXT, "
    "started TEXT, finished TEXT, n_total INTEGER, n_done INTEGER, summary TEXT, error TEXT"
)
RUN_COPY = (
    "id, activity, dataset, model, runner, settings, status, started, finished, n_total, "
    "n_done, summary, error"
)


def _m2_run_owner(db: sqlite_utils.Database) -> None:
    """Runs record the process that runs them; run ids are never reused after a delete.

    SQLite adds AUTOINCREMENT only by rebuilding the table (foreign keys are off meanwhile,
    see :func:`migrate`); every row keeps its id.
    """
    db.execute(
        f"CREATE TABLE runs_new (id INTEGER PRIMARY KEY AUTOINCREMENT, {RUN_COLUMNS}, "
        "owner_pid INTEGER, owner_host TEXT, owner_started REAL)"
    )
    db.execute(f"INSERT INTO runs_new ({RUN_COPY}) SELECT {RUN_COPY} FROM runs")
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_new RENAME TO runs")
    db.execute("CREATE INDEX idx_runs_activity ON runs (activity)")


def _m3_review_cards(db: sqlite_utils.Database) -> None:
    """Person profiles, and a spaced-repetition card per profile and question with the log
    of its reviews (see :mod:`engine.review`). The ``default`` profile always exists."""
    db.execute(
        "CREATE TABLE profiles (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created TEXT)"
    )
    db.execute("INSERT INTO profiles (name, created) VALUES ('default', datetime('now'))")
    db.execute(
        "CREATE TABLE cards (id INTEGER PRIMARY KEY AUTOINCREMENT, profile TEXT NOT NULL, "
        "activity TEXT NOT NULL, dataset TEXT NOT NULL, item_key TEXT NOT NULL, topic TEXT, "
        "state INTEGER, step INTEGER, stability REAL, difficulty REAL, due TEXT, "
        "last_review TEXT, reps INTEGER DEFAULT 0, lapses INTEGER DEFAULT 0, "
        "last_rating INTEGER, last_correct INTEGER, created TEXT, updated TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX idx_cards_item ON cards (profile, dataset, item_key)")
    db.execute("CREATE INDEX idx_cards_due ON cards (profile, due)")
    db.execute(
        "CREATE TABLE card_reviews (id INTEGER PRIMARY KEY, "
        "card_id INTEGER NOT NULL REFERENCES cards(id), reviewed TEXT, rating INTEGER, "
        "suggested INTEGER, correct INTEGER, seconds REAL, source TEXT, run_id INTEGER, "
        "state_before INTEGER, due TEXT)"
    )
    db.execute("CREATE INDEX idx_card_reviews_card ON card_reviews (card_id)")


def _json_columns(column: str, keys: list[str]) -> str:
    """``json_extract(column, '$.key') AS key`` for each key (``a.b`` → ``a_b``)."""
    return ", ".join(f"json_extract({column}, '$.{k}') AS {k.replace('.', '_')}" for k in keys)


_RUN_SETTINGS = "method shots lang instruction doctor patient patient_mode solver retriever k"
_RUN_SCORES = "accuracy score hamming emr rouge1 rouge2 rougeL patient_f1 doctor_f1 avg_turns"


def _v_runs(db: sqlite_utils.Database) -> None:
    """``v_runs``: a run per row, its distinguishing settings and headline scores as columns."""
    db.execute(
        "CREATE VIEW v_runs AS SELECT r.id AS run_id, r.activity, r.dataset, r.model, r.runner, "
        "r.status, r.started, r.finished, r.n_done, r.n_total, "
        f"{_json_columns('r.settings', [*_RUN_SETTINGS.split(), 'corpus'])}, "
        f"{_json_columns('r.summary', [*_RUN_SCORES.split(), 'calibration.ece'])}, "
        "r.error, r.settings, r.summary FROM runs r"
    )


def _v_answers(db: sqlite_utils.Database, scores: str, stored: str) -> None:
    """``v_answers``: an answer per row, joined with its run and its item's question and
    types; ``scores`` are the score columns, ``stored`` the raw JSON columns at the end."""
    db.execute(
        "CREATE VIEW v_answers AS SELECT a.run_id, r.activity, r.dataset, r.model, r.runner, "
        "a.item_key, a.position, coalesce(json_extract(i.data, '$.question'), "
        "json_extract(i.data, '$.task.question')) AS question, i.category, "
        f"{_json_columns('i.data', ['type1', 'type2', 'type3'])}, "
        f"a.gold, a.chosen, {scores}, "
        "json_extract(a.extra, '$.confidence') AS confidence, a.latency_s, a.prompt_tokens, "
        f"a.completion_tokens, a.created, {stored} FROM answers a "
        "JOIN runs r ON r.id = a.run_id LEFT JOIN datasets d ON d.name = r.dataset "
        "LEFT JOIN items i ON i.dataset_id = d.id AND i.key = a.item_key"
    )


def _m4_views(db: sqlite_utils.Database) -> None:
    """Readable views for sqlite3 and Datasette: ``v_runs`` and ``v_answers`` (the scores,
    then stored on each answer, as columns)."""
    per_answer = "rouge1 rouge2 rougeL hamming exact patient_f1 doctor_f1"
    _v_runs(db)
    columns = _json_columns("a.scores", per_answer.split())
    _v_answers(db, f"a.correct, a.response, {columns}", "a.scores, a.extra")


#: Scorer of each score key stored on an answer before scores had their own table (schema 5).
_V4_SCORERS = {
    "exam": dict.fromkeys(["rouge1", "rouge2", "rougeL"], "exam.rouge")
    | {"correct": "exam.letter"},
    "french": dict.fromkeys(["correct", "hamming", "exact"], "french.options")
    | dict.fromkeys(["own_excluded", "retrieved"], "french.retrieval"),
    "consult": dict.fromkeys(["correct", "similarity"], "consult.task"),
}
#: Where a key the table above does not name goes (a consultation's dialogue metrics…).
_V4_OTHER = {"exam": "exam.recorded", "french": "french.recorded", "consult": "consult.dialogue"}


def _v4_hamming(extra: dict[str, object]) -> float | None:
    """A French answer's Hamming score at full precision (schema 4 kept it rounded)."""
    pred, gold = extra.get("pred"), extra.get("gold")
    if not isinstance(pred, list) or not isinstance(gold, list):
        return None
    union = set(pred) | set(gold)
    return 1.0 if not union else len(set(pred) & set(gold)) / len(union)


def _v4_score_rows(activity: str, row: tuple[object, ...]) -> list[tuple[object, ...]]:
    run_id, key, correct, scores, created, extra = row
    values = json.loads(str(scores)) if scores else {}
    if correct is not None:
        values = {"correct": correct, **values}
    found = _v4_hamming(json.loads(str(extra)) if extra else {})
    if activity == "french" and "hamming" in values and found is not None:
        values["hamming"] = found
    names = _V4_SCORERS.get(activity, {})
    other = _V4_OTHER.get(activity, f"{activity}.recorded")
    out: list[tuple[object, ...]] = []
    for name, value in values.items():
        if isinstance(value, dict | list | str):
            value = json.dumps(value, ensure_ascii=False)
        out.append((run_id, key, names.get(name, other), 1, name, value, created))
    return out


def _m5_scores(db: sqlite_utils.Database) -> None:
    """Scores get their own table (``scores``: answer, scorer name and version, key, value,
    explanation), so one answer carries several scorers' results and a run can be scored
    again (:mod:`engine.core.scoring`). Each answer's stored scores and ``correct`` become rows of
    the scorers that compute them; French retrieval facts also move to the answer's
    ``extra["retrieval"]``, where the retrieval scorer reads them. The answers lose their
    ``scores`` and ``correct`` columns; the views read the scores table."""
    db.execute("DROP VIEW IF EXISTS v_answers")
    db.execute("DROP VIEW IF EXISTS v_runs")
    db.execute(
        "CREATE TABLE scores (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL "
        "REFERENCES runs(id), item_key TEXT NOT NULL, scorer TEXT NOT NULL, "
        "version INTEGER NOT NULL, key TEXT NOT NULL, value, explanation TEXT, created TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX idx_scores_answer ON scores (run_id, item_key, scorer, key)")
    rows = db.execute(
        "SELECT r.activity, a.run_id, a.item_key, a.correct, a.scores, a.created, a.extra "
        "FROM answers a JOIN runs r ON r.id = a.run_id"
    ).fetchall()
    for activity, run_id, key, correct, scores, created, extra in rows:
        db.conn.executemany(
            "INSERT INTO scores (run_id, item_key, scorer, version, key, value, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            _v4_score_rows(activity, (run_id, key, correct, scores, created, extra)),
        )
        found = json.loads(scores) if scores else {}
        retrieval = {k: found[k] for k in ("own_excluded", "retrieved") if k in found}
        if activity == "french" and retrieval:
            moved = {**(json.loads(extra) if extra else {}), "retrieval": retrieval}
            db.execute(
                "UPDATE answers SET extra = ? WHERE run_id = ? AND item_key = ?",
                [json.dumps(moved, ensure_ascii=False), run_id, key],
            )
    db.execute("ALTER TABLE answers DROP COLUMN scores")
    db.execute("ALTER TABLE answers DROP COLUMN correct")
    _views(db)


def _score_column(key: str) -> str:
    return (
        "(SELECT s.value FROM scores s WHERE s.run_id = a.run_id AND s.item_key = a.item_key "
        f"AND s.key = '{key}' ORDER BY s.id DESC LIMIT 1) AS {key}"
    )


def _views(db: sqlite_utils.Database) -> None:
    """``v_runs``, ``v_answers`` (the main scores as columns, read from the scores table)
    and ``v_scores`` (a score per row, with its run)."""
    per_answer = "correct rouge1 rouge2 rougeL hamming exact patient_f1 doctor_f1"
    _v_runs(db)
    columns = ", ".join(_score_column(k) for k in per_answer.split())
    _v_answers(db, f"a.response, {columns}", "a.extra")
    db.execute(
        "CREATE VIEW v_scores AS SELECT s.run_id, r.activity, r.dataset, r.model, r.runner, "
        "s.item_key, s.scorer, s.version, s.key, s.value, s.explanation, s.created "
        "FROM scores s JOIN runs r ON r.id = s.run_id"
    )


def _m6_notebook(db: sqlite_utils.Database) -> None:
    """A student's notebook (a mark, a note and why a question was missed, per profile and
    question: :mod:`engine.bank.notebook`) and saved custom blocks (:mod:`engine.bank.blocks`)."""
    db.execute(
        "CREATE TABLE notebook (id INTEGER PRIMARY KEY, profile TEXT NOT NULL, "
        "activity TEXT NOT NULL, dataset TEXT NOT NULL, item_key TEXT NOT NULL, "
        "marked INTEGER NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '', reason TEXT, "
        "updated TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX idx_notebook_item ON notebook (profile, dataset, item_key)")
    db.execute(
        "CREATE TABLE blocks (id INTEGER PRIMARY KEY, profile TEXT NOT NULL, "
        "name TEXT NOT NULL, spec TEXT NOT NULL, created TEXT, used TEXT)"
    )
    db.execute("CREATE UNIQUE INDEX idx_blocks_name ON blocks (profile, name)")


def _m7_trainings(db: sqlite_utils.Database) -> None:
    """Trainings (:mod:`engine.train`): one per row, like a run — its kind, data sets and
    settings, its status and owner (read ``interrupted`` once the owner is gone), where it is
    (step, epoch), its loss curve and evaluations, and its result: the artefact's name and
    folder. Ids are never reused."""
    db.execute(
        "CREATE TABLE trainings (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, "
        "kind TEXT NOT NULL, dataset TEXT, data TEXT, settings TEXT, status TEXT, "
        "device TEXT, step INTEGER, n_steps INTEGER, epoch INTEGER, loss_curve TEXT, "
        "evals TEXT, result TEXT, error TEXT, started TEXT, finished TEXT, "
        "owner_pid INTEGER, owner_host TEXT, owner_started REAL)"
    )
    db.execute("CREATE INDEX idx_trainings_name ON trainings (name)")


def _m8_deleted_runs(db: sqlite_utils.Database) -> None:
    """The runs of the last delete, kept to be restored (:mod:`engine.store.deleted`): each run's
    row with its answers, scores and turns as stored, in JSON, until the next delete."""
    db.execute(
        "CREATE TABLE deleted_runs (run_id INTEGER PRIMARY KEY, deleted TEXT, data TEXT NOT NULL)"
    )


def _m9_experiments(db: sqlite_utils.Database) -> None:
    """Experiments (:mod:`engine.experiments`): a grid of runs played as one job. Each
    experiment has its cells in order, each cell the settings of one run and, once started
    or reused, that run's id (the runs stay ordinary runs; a deleted run leaves its cell to
    be run again)."""
    db.execute(
        "CREATE TABLE experiments (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, "
        "key TEXT NOT NULL, spec TEXT, created TEXT)"
    )
    db.execute("CREATE INDEX idx_experiments_key ON experiments (key)")
    db.execute(
        "CREATE TABLE experiment_cells (id INTEGER PRIMARY KEY, "
        "experiment_id INTEGER NOT NULL REFERENCES experiments(id), position INTEGER NOT NULL, "
        "label TEXT, activity TEXT NOT NULL, dataset TEXT NOT NULL, settings TEXT, "
        "coords TEXT, run_id INTEGER, reused INTEGER NOT NULL DEFAULT 0)"
    )
    db.execute(
        "CREATE UNIQUE INDEX idx_experiment_cells ON experiment_cells (experiment_id, position)"
    )


def _m10_experiment_errors(db: sqlite_utils.Database) -> None:
    """Why an experiment's cell could not start its run (a prompt that fits no question of
    the model's context…), kept until the cell's run starts."""
    db.execute("ALTER TABLE experiment_cells ADD COLUMN error TEXT")


def _m11_card_suspended(db: sqlite_utils.Database) -> None:
    """A review card may be suspended: it is never due until it is unsuspended."""
    db.execute("ALTER TABLE cards ADD COLUMN suspended INTEGER NOT NULL DEFAULT 0")


def _m12_run_metrics(db: sqlite_utils.Database) -> None:
    """``v_run_metrics``: every number of a run's summary, one per row (its key and value),
    with the run's activity, data set, model, runner and status: every scorer's metrics,
    a measure added with a new scorer among them, with no column to add."""
    summary = "CASE WHEN json_valid(r.summary) THEN r.summary ELSE '{}' END"
    db.execute(
        "CREATE VIEW v_run_metrics AS SELECT r.id AS run_id, r.activity, r.dataset, r.model, "
        f"r.runner, r.status, m.key, m.value FROM runs r, json_each({summary}) m "
        "WHERE m.type IN ('integer', 'real')"
    )


def _m13_dataset_fingerprints(db: sqlite_utils.Database) -> None:
    """A data set holds the fingerprint of its items (keys and contents) and a run that of
    its data set's items when it started, so a run is never taken as one of a data set
    replaced by other items since (reused, counted finished, reported as of its items).
    Runs stored before are taken to be of their data set as it is now."""
    from engine.store.fingerprint import items_fingerprint

    db.execute("ALTER TABLE datasets ADD COLUMN fingerprint TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN dataset_fingerprint TEXT")
    for (dataset_id,) in db.execute("SELECT id FROM datasets").fetchall():
        rows = db.execute(
            "SELECT key, data FROM items WHERE dataset_id = ? ORDER BY position", [dataset_id]
        )
        found = items_fingerprint((str(key), str(data)) for key, data in rows)
        db.execute("UPDATE datasets SET fingerprint = ? WHERE id = ?", [found, dataset_id])
    db.execute(
        "UPDATE runs SET dataset_fingerprint = "
        "(SELECT d.fingerprint FROM datasets d WHERE d.name = runs.dataset)"
    )


def _m14_cell_owners(db: sqlite_utils.Database) -> None:
    """An experiment's cell records the process that took it to play (as a run records its
    own), so two processes on one database never play the same cell."""
    for column in ("owner_pid INTEGER", "owner_host TEXT", "owner_started REAL"):
        db.execute(f"ALTER TABLE experiment_cells ADD COLUMN {column}")


MIGRATIONS: list[Migration] = [
    _m1_initial,
    _m2_run_owner,
    _m3_review_cards,
    _m4_views,
    _m5_scores,
    _m6_notebook,
    _m7_trainings,
    _m8_deleted_runs,
    _m9_experiments,
    _m10_experiment_errors,
    _m11_card_suspended,
    _m12_run_metrics,
    _m13_dataset_fingerprints,
    _m14_cell_owners,
]
SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNew(MedexamError):
    """The database was written by a newer medexam (``found`` > ``known``)."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(f"schema {found}; this one knows {known}")
        self.found = found
        self.known = known


class MigrationError(MedexamError):
    """A migration left the database inconsistent; it was rolled back."""


#: ``PRAGMA application_id`` of a medexam database ("MDEX").
APPLICATION_ID = 0x4D444558


def schema_version(db: sqlite_utils.Database) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def application_id(db: sqlite_utils.Database) -> int:
    return int(db.execute("PRAGMA application_id").fetchone()[0])


def _mark(db: sqlite_utils.Database) -> None:
    """Give ``db`` medexam's application id, when it has not got it yet."""
    if application_id(db) != APPLICATION_ID:
        with db.conn:
            db.execute("BEGIN IMMEDIATE")
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _broken_keys(db: sqlite_utils.Database) -> set[tuple[object, ...]]:
    return {tuple(row) for row in db.execute("PRAGMA foreign_key_check").fetchall()}


def migrate(db: sqlite_utils.Database, migrations: list[Migration] | None = None) -> int:
    """Bring ``db`` up to the newest schema; return the version it is at.

    Raises :class:`SchemaTooNew`, touching nothing, when the database is newer than the
    migrations known here. The database gets medexam's application id. Each step runs in one
    transaction holding the write lock (a step another process applied meanwhile is skipped).
    Foreign keys are off while migrations run (so tables can be rebuilt) and checked before each
    step commits; a step that breaks them is rolled back (:class:`MigrationError`).
    """
    steps = MIGRATIONS if migrations is None else migrations
    current = schema_version(db)
    if current > len(steps):
        raise SchemaTooNew(current, len(steps))
    _mark(db)
    if current == len(steps):
        return current
    foreign_keys = db.execute("PRAGMA foreign_keys").fetchone()[0]
    db.execute("PRAGMA foreign_keys = OFF")
    try:
        for version, step in enumerate(steps[current:], start=current + 1):
            with db.conn:
                db.execute("BEGIN IMMEDIATE")
                if schema_version(db) >= version:  # another process migrated meanwhile
                    continue
                before = _broken_keys(db)
                step(db)
                broken = _broken_keys(db) - before
                if broken:
                    raise MigrationError(
                        f"migration to schema {version} breaks {len(broken)} foreign key(s)"
                    )
                db.execute(f"PRAGMA user_version = {version}")
    finally:
        db.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
    return schema_version(db)
