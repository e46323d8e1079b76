"""Deleting runs from the command line: asked first (y/N, or --yes), the last delete undone
with `runs undelete` (answers, scores and turns back, each in its place), a run still
running in another process refused until that process is gone; CSV files carry UTF-8's
byte-order mark so a spreadsheet reads their Chinese."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.scoring import Scored
from engine.store.dbfile import StoreError
from engine.store.deleted import delete_runs
from engine.store.owner import host, process_started
from engine.store.store import Store


def a_run(store: Store, gold: str = "B") -> int:
    """A finished exam run of two answers (one right), one with a consultation turn."""
    if not store.has_dataset("demo"):
        store.add_dataset("demo", "exam", [{"id": "q1", "question": "胃痛？"}, {"id": "q2"}])
    run_id = store.start_run("exam", "demo", "m", {"shots": 0}, n_total=2)
    right, wrong = ([Scored("exam.letter", 1, {"correct": c})] for c in (True, False))
    store.add_answer(run_id, "q1", response="答案：B", chosen="B", gold=gold, scores=right)
    store.add_answer(run_id, "q2", response="答案：A", chosen="A", gold="C", scores=wrong)
    store.add_turn(run_id, "q1", 1, "patient", "肚子疼")
    store.finish_run(run_id, {"accuracy": 50.0})
    return run_id


def medexam(store: Store, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["--db", store.path, *args], input=stdin)


def test_delete_asks_first_and_undelete_brings_everything_back(store):
    run_id = a_run(store)
    before = (store.run(run_id), store.answers(run_id), store.turns(run_id))

    for answer in (None, "n\n"):  # no answer, or no: nothing deleted
        out = medexam(store, "runs", "delete", str(run_id), stdin=answer)
        assert out.exit_code == 1 and "nothing deleted" in out.output
        assert f"Delete run {run_id} (exam, m on demo, 2 answers)? [y/N]" in out.output
        assert store.run(run_id)["n_done"] == 2

    out = medexam(store, "runs", "delete", str(run_id), stdin="y\n")
    assert out.exit_code == 0 and "undo: medexam runs undelete" in out.output
    with pytest.raises(StoreError, match=f"no run with id {run_id}"):
        store.run(run_id)
    assert store.answers(run_id) == [] and store.turns(run_id) == []

    out = medexam(store, "runs", "undelete")
    assert out.exit_code == 0 and out.output.strip() == f"restored run {run_id}"
    assert (store.run(run_id), store.answers(run_id), store.turns(run_id)) == before
    again = medexam(store, "runs", "undelete")
    assert again.exit_code == 1
    assert again.output.strip() == "Error: there is no deleted run to restore"


def test_only_the_last_delete_is_kept_and_yes_does_not_ask(store):
    first, second = a_run(store), a_run(store, gold="A")
    assert medexam(store, "runs", "delete", str(first), "--yes").exit_code == 0
    out = medexam(store, "runs", "delete", str(second), "-y")
    assert out.exit_code == 0 and "[y/N]" not in out.output
    assert medexam(store, "runs", "undelete").output.strip() == f"restored run {second}"
    assert [r["id"] for r in store.runs()] == [second]
    assert [a["gold"] for a in store.answers(second)] == ["A", "C"]
    assert store.start_run("exam", "demo", "m") == second + 1  # ids are still never reused


def test_a_run_running_in_another_process_is_refused_until_it_is_gone(store):
    run_id = a_run(store)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store.db.execute(
            "UPDATE runs SET status = 'running', finished = NULL, owner_pid = ?, "
            "owner_host = ?, owner_started = ? WHERE id = ?",
            [other.pid, host(), process_started(other.pid), run_id],
        )
        store.db.conn.commit()
        assert store.run(run_id)["status"] == "running"
        out = medexam(store, "runs", "delete", str(run_id), "--yes")
        assert out.exit_code == 1 and out.output.startswith(
            f"Error: run {run_id} is still running in another medexam process (pid {other.pid}"
        )
        assert len(out.output.strip().splitlines()) == 1
        with pytest.raises(StoreError, match="still running"):
            delete_runs(store, [run_id])
        assert store.run(run_id)["n_done"] == 2
    finally:
        other.kill()
        other.wait()
    assert store.run(run_id)["status"] == "interrupted"
    assert medexam(store, "runs", "delete", str(run_id), "--yes").exit_code == 0


def test_csv_files_start_with_the_byte_order_mark_excel_needs(store, tmp_path):
    run_id = a_run(store)
    answers, report = tmp_path / "run.csv", tmp_path / "report.csv"
    assert medexam(store, "runs", "export", str(run_id), "-o", str(answers)).exit_code == 0
    assert medexam(store, "report", str(run_id), "--out", str(report)).exit_code == 0
    for path in (answers, tmp_path / "run-turns.csv", report):
        raw = path.read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf"), path
        assert raw.count(b"\xef\xbb\xbf") == 1
    assert "胃痛" in answers.read_text(encoding="utf-8-sig")
    turns = tmp_path / "turns.csv"
    assert medexam(store, "runs", "export", str(run_id), "--turns", "-o", str(turns)).exit_code == 0
    assert turns.read_text(encoding="utf-8-sig").startswith("run_id")
    shown = medexam(store, "runs", "export", str(run_id))  # on stdout: no mark
    assert shown.output.startswith("run_id")
    json_file = tmp_path / "run.json"
    assert medexam(store, "runs", "export", str(run_id), "-o", str(json_file)).exit_code == 0
    assert json_file.read_bytes().startswith(b"{")
