"""The SQLite store: data sets, runs, answers and turns, migrations."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from engine.core.scoring import Scored
from engine.store.migrations import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SchemaTooNew,
    migrate,
    schema_version,
)
from engine.store.store import Store, StoreError

QUESTIONS = [
    {"id": "q1", "question": "…", "answer": "B", "type1": "药物分析"},
    {"id": "q2", "question": "…", "answer": "C", "type1": "药理学"},
]


def test_a_data_set_round_trips(store):
    store.add_dataset("demo", "exam", QUESTIONS, source="demo.json")
    assert store.items("demo") == QUESTIONS
    ds = store.dataset("demo")
    assert ds["n_items"] == 2 and ds["activity"] == "exam"
    assert [d["name"] for d in store.datasets("exam")] == ["demo"]
    assert store.items("demo", limit=1) == QUESTIONS[:1]


def test_names_are_unique_unless_replaced(store):
    store.add_dataset("demo", "exam", QUESTIONS)
    with pytest.raises(StoreError, match="already exists"):
        store.add_dataset("demo", "exam", QUESTIONS)
    store.add_dataset("demo", "exam", QUESTIONS[:1], replace=True)
    assert len(store.items("demo")) == 1


def test_a_bad_data_set_leaves_nothing_behind(store):
    with pytest.raises(StoreError, match="duplicate item id 'q1'"):
        store.add_dataset("dup", "exam", [QUESTIONS[0], QUESTIONS[0]])
    assert not store.has_dataset("dup")


def test_a_run_keeps_each_answer_as_it_is_written(store, tmp_path):
    store.add_dataset("demo", "exam", QUESTIONS)
    run_id = store.start_run("exam", "demo", "smollm2", {"shots": 0}, n_total=2)
    store.add_answer(
        run_id,
        "q1",
        response="答案：B",
        chosen="B",
        gold="B",
        scores=[
            Scored("exam.letter", 1, {"correct": True}),
            Scored("exam.rouge", 1, {"rouge1": 0.5}),
        ],
        latency_s=0.2,
        prompt_tokens=100,
        completion_tokens=20,
        position=0,
    )
    # Another connection (another process, after a crash) already sees it.
    other = sqlite3.connect(store.path)
    assert other.execute("SELECT chosen FROM answers").fetchall() == [("B",)]
    other.close()
    assert store.answered_keys(run_id) == {"q1"}
    assert store.run(run_id)["n_done"] == 1
    store.finish_run(run_id, {"accuracy": 100.0}, status="cancelled")
    run = store.run(run_id)
    assert run["status"] == "cancelled" and run["summary"] == {"accuracy": 100.0}
    answer = store.answers(run_id)[0]
    assert answer["scores"] == {"rouge1": 0.5} and answer["correct"] == 1


def test_answering_again_replaces_the_answer(store):
    run_id = store.start_run("exam", "demo", "m")
    store.add_answer(
        run_id, "q1", chosen="A", scores=[Scored("exam.letter", 1, {"correct": False})]
    )
    store.add_answer(run_id, "q1", chosen="B", scores=[Scored("exam.letter", 1, {"correct": True})])
    assert [a["chosen"] for a in store.answers(run_id)] == ["B"]


def test_the_store_takes_scored_answers_only(store):
    run_id = store.start_run("exam", "demo", "m")
    with pytest.raises(StoreError, match="scorers' results"):
        store.add_answer(run_id, "q1", chosen="A", scores={"correct": True})  # type: ignore[arg-type]
    assert store.answers(run_id) == []


def test_turns_are_stored_in_order(store):
    run_id = store.start_run("consult", "cases", "smollm2")
    store.add_turn(run_id, "c1", 0, "patient", "My chest hurts.")
    store.add_turn(run_id, "c1", 1, "doctor", "Since when?")
    store.add_turn(run_id, "c1", 1, "patient", "Two days.", extra={"facts": ["Onset"]})
    turns = store.turns(run_id, "c1")
    assert [t["role"] for t in turns] == ["patient", "doctor", "patient"]
    assert turns[-1]["extra"] == {"facts": ["Onset"]}


def test_unknown_things_raise_store_error(store):
    with pytest.raises(StoreError):
        store.run(42)
    with pytest.raises(StoreError):
        store.items("nothing")
    with pytest.raises(StoreError):
        store.finish_run(store.start_run("exam", "d", "m"), {}, status="exploded")


def test_a_corpus_round_trips(store):
    store.add_corpus(
        "fr", [{"text": "Le paracétamol est un antalgique.", "source": "a.txt", "offset": 0}]
    )
    assert [p["text"] for p in store.passages("fr")] == ["Le paracétamol est un antalgique."]
    assert store.corpus("fr")["n_passages"] == 1


def test_a_new_database_is_at_the_newest_schema_in_wal_mode(store):
    assert store.version == SCHEMA_VERSION == schema_version(store.db)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_upgrade_an_older_database(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    assert migrate(db, MIGRATIONS[:1]) == 1
    db["runs"].insert({"activity": "exam", "dataset": "d", "model": "m", "status": "finished"})

    def add_notes(db: sqlite_utils.Database) -> None:
        db["runs"].add_column("notes", str)

    assert migrate(db, [*MIGRATIONS, add_notes]) == len(MIGRATIONS) + 1
    assert "notes" in db["runs"].columns_dict
    assert db["runs"].count == 1  # data kept
    # Opening it with this medexam, whose schema is older, is refused clearly.
    db.close()
    known = len(MIGRATIONS)
    with pytest.raises(
        StoreError,
        match=rf"written by a newer medexam \(schema {known + 1}; this one knows {known}",
    ):
        Store(path)
    with pytest.raises(SchemaTooNew):
        migrate(sqlite_utils.Database(path))
