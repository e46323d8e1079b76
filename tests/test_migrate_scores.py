"""A database written by medexam 0.1.0 (schema 4: scores inside each answer) opens with the
scores in their own table: every answer keeps its verdict and scores, every run's summary
computed afresh from the scorer rows is the summary that release stored, and scoring the
runs again changes nothing.

``tests/data/schema4.db`` was written by that release's own code: exam runs (generate and
logprob), French runs (no passages, BM25 passages), consultations (an oracle, both bounds, a
model doctor) with the embedded SmolLM2, and a person's exam and French sessions.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.core.scoring import rescore, summarize
from engine.store.migrations import SCHEMA_VERSION
from engine.store.store import Store

FIXTURE = Path(__file__).parent / "data" / "schema4.db"
VOLATILE = {"run_id", "status", "error"}


def _release_rows(path: Path) -> tuple[dict[int, dict], dict[tuple[int, str], dict]]:
    """The runs and answers as the release stored them, read with plain sqlite3."""
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    runs = {
        r[0]: {"activity": r[1], "runner": r[2], "status": r[3], "summary": json.loads(r[4])}
        for r in db.execute("SELECT id, activity, runner, status, summary FROM runs")
    }
    answers = {
        (r[0], r[1]): {"correct": r[2], "scores": json.loads(r[3]), "extra": json.loads(r[4])}
        for r in db.execute("SELECT run_id, item_key, correct, scores, extra FROM answers")
    }
    db.close()
    return runs, answers


@pytest.fixture
def migrated(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE, path)
    runs, answers = _release_rows(path)
    store = Store(path)
    yield store, runs, answers
    store.close()


def _same(value, old):
    if isinstance(old, dict):
        return isinstance(value, dict) and all(_same(value.get(k), v) for k, v in old.items())
    if isinstance(old, float) and isinstance(value, int | float):
        return value == pytest.approx(old, abs=5e-5)
    return value == old


def test_every_answer_keeps_its_verdict_and_scores(migrated):
    store, runs, answers = migrated
    assert store.version == SCHEMA_VERSION  # every migration since applied
    assert {r["activity"] for r in runs.values()} == {"exam", "french", "consult"}
    assert {r["runner"] for r in runs.values()} >= {"model", "person", "upper", "lower"}
    for run_id in runs:
        for a in store.answers(run_id):
            old = answers[(run_id, a["item_key"])]
            assert a["correct"] == old["correct"]
            for key, value in old["scores"].items():
                found = a["correct"] if key == "correct" else a["scores"][key]
                assert _same(found, value), (run_id, a["item_key"], key)
    names = {r["scorer"] for run_id in runs for r in store.run_scorers(run_id)}
    assert {"exam.letter", "exam.rouge", "french.options", "french.retrieval"} <= names
    assert {"consult.task", "consult.dialogue"} <= names


def test_each_model_run_summarised_afresh_gives_the_summary_it_stored(migrated):
    store, runs, _answers = migrated
    model_runs = [i for i, r in runs.items() if r["runner"] != "person" and r["summary"]]
    assert len(model_runs) >= 7
    for run_id in model_runs:
        old = {k: v for k, v in runs[run_id]["summary"].items() if k not in VOLATILE}
        assert store.run(run_id)["summary"] == runs[run_id]["summary"]  # left as it was
        new = {k: v for k, v in summarize(store, run_id).items() if k not in VOLATILE}
        # What summaries have said since the database was made: the no-answer shares by
        # reason, the share cut off and the chance level.
        assert set(new) - set(old) <= {"no_answer", "cut_off", "chance"}, run_id
        assert {k: new[k] for k in old} == old, run_id


def test_scoring_the_migrated_runs_again_changes_no_summary(migrated):
    store, runs, _answers = migrated
    for run_id, r in runs.items():
        if r["runner"] == "person" or not r["summary"]:
            continue
        # Leakage counts each fact once since consult.dialogue v2 (v1 scored these runs).
        old = {k: v for k, v in r["summary"].items() if k not in (*VOLATILE, "leakage")}
        again = rescore(store, run_id, force=True).summary
        assert {k: again[k] for k in old} == old, run_id


def test_the_views_read_the_scores_table(migrated):
    store, runs, answers = migrated
    rows = store.db.execute("SELECT run_id, item_key, correct, rouge1 FROM v_answers").fetchall()
    assert len(rows) == len(answers)
    for run_id, key, correct, rouge1 in rows:
        assert correct == answers[(run_id, key)]["correct"]
        assert _same(rouge1, answers[(run_id, key)]["scores"].get("rouge1"))
    n = store.db.execute("SELECT count(*) FROM v_scores").fetchone()[0]
    keys = [
        set(a["scores"]) | ({"correct"} if a["correct"] is not None else set())
        for a in answers.values()
    ]
    assert n == sum(len(k) for k in keys)
