"""Hostile databases: another program's SQLite file of every ``user_version``, truncated and
damaged files, a full disk, a read-only database, and three people answering the same
question at once. Each gets one clear line (a message box in the app), and nothing that is
not medexam's is written."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

import engine.store.dbfile
from engine.cli import cli
from engine.core.runs import run
from engine.models.scripted import ScriptedModel, scripted_pool
from engine.store.migrations import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, migrate
from engine.store.store import Store, StoreError


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def medexam(*args: str) -> tuple[int, list[str]]:
    """Run the command line; its exit code and output lines (stdout and stderr). An
    exception that escaped the command (a traceback for the user) fails the test."""
    result = CliRunner().invoke(cli, list(args))
    escaped = result.exception
    assert escaped is None or isinstance(escaped, SystemExit), repr(escaped)
    return result.exit_code, result.output.splitlines()


def pragma(path: Path, name: str) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        con.close()


def a_database_with_a_run(path: Path, answers: int = 3, reply: str = "答案：A") -> int:
    """A medexam database holding the exam sample and one finished run of a scripted model
    giving ``reply``; its run id."""
    from engine.exam.dataset import ensure_sample

    store = Store(path)
    dataset = ensure_sample(store)
    model = ScriptedModel("m", replies=reply)
    settings = {"model": "m", "limit": answers, "method": "generate", "max_tokens": 4000}
    summary = run(store, "exam", dataset, settings, pool=scripted_pool(model))
    store.close()
    return int(summary["run_id"])


# -- another program's database ------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, SCHEMA_VERSION + 1, 42])
def test_another_programs_database_is_left_byte_for_byte_unchanged(tmp_path, version):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE notes (id, body); INSERT INTO notes VALUES (1, 'precious');"
        f"PRAGMA user_version = {version};"
    )
    con.close()
    before = digest(path)
    code, lines = medexam("--db", str(path), "runs", "list")
    assert (code, lines) == (1, [f"Error: {path} is not a medexam database"])
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_a_database_shaped_like_medexams_but_marked_by_another_program_is_refused(tmp_path):
    path = tmp_path / "lookalike.db"
    db = sqlite_utils.Database(path)
    migrate(db, MIGRATIONS)
    db.execute("PRAGMA application_id = 1196444487")  # GeoPackage's
    db.close()
    before = digest(path)
    with pytest.raises(StoreError, match="is not a medexam database"):
        Store(path)
    assert digest(path) == before


def test_a_database_with_only_some_of_medexams_tables_is_refused(tmp_path):
    path = tmp_path / "partial.db"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, status TEXT); PRAGMA user_version = 2;"
    )
    con.close()
    before = digest(path)
    with pytest.raises(StoreError, match="is not a medexam database"):
        Store(path)
    assert digest(path) == before


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_a_medexam_database_from_before_the_mark_opens_and_gets_it(tmp_path, version):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrate(db, MIGRATIONS[:version])
    db.execute("PRAGMA application_id = 0")
    db.close()
    assert pragma(path, "application_id") == 0
    store = Store(path)
    assert store.version == SCHEMA_VERSION and not store.read_only
    store.close()
    assert pragma(path, "application_id") == APPLICATION_ID


@pytest.mark.parametrize("empty", [True, False])
def test_a_new_or_empty_file_becomes_a_marked_medexam_database(tmp_path, empty):
    path = tmp_path / "new.db"
    if empty:
        path.touch()
    store = Store(path)
    assert store.version == SCHEMA_VERSION
    store.close()
    assert pragma(path, "application_id") == APPLICATION_ID
    assert pragma(path, "user_version") == SCHEMA_VERSION


# -- truncated and damaged files -----------------------------------------------------------


@pytest.mark.parametrize("keep", [0.5, 0.05, 50])
def test_a_truncated_database_is_called_truncated_and_left_as_it_is(tmp_path, keep):
    path = tmp_path / "cut.db"
    a_database_with_a_run(path)
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(int(size * keep) if keep < 1 else keep)
    before = digest(path)
    for args in (["runs", "list"], ["runs", "show", "1"], ["report", "1"]):
        code, lines = medexam("--db", str(path), *args)
        assert code == 1 and len(lines) == 1, lines
        assert lines[0].startswith(f"Error: {path} is truncated or damaged ("), lines
    assert digest(path) == before


def test_a_database_with_damaged_pages_gives_one_line_for_every_command(tmp_path):
    path = tmp_path / "damaged.db"
    Store(path).close()
    schema_pages = pragma(path, "page_count")
    run_id = a_database_with_a_run(path, answers=8, reply="答案：A。" + "解释" * 1500)
    page = pragma(path, "page_size")
    pages = path.stat().st_size // page
    # Garbage over every page written after the schema (the answers, their long responses,
    # the questions), as a failing disk or a stray write leaves: the database still opens.
    with path.open("r+b") as fh:
        fh.seek(schema_pages * page)
        fh.write(b"\xa5" * ((pages - schema_pages) * page))
    for args in (
        ["runs", "show", str(run_id)],
        ["runs", "export", str(run_id)],
        ["report", str(run_id), "--format", "csv"],
        ["runs", "list"],
    ):
        code, lines = medexam("--db", str(path), *args)
        if args[1] != "list":  # reading the run's answers meets the damaged pages
            assert code == 1, (args, lines)
        if code:
            assert lines[-1].startswith(f"Error: {path} is truncated or damaged ("), lines


def test_the_app_says_in_a_message_box_that_the_database_is_damaged(tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from gui.app import create_app
    from gui.main_window import MainWindow

    path = tmp_path / "cut.db"
    a_database_with_a_run(path)
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size // 2)
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(
        QMessageBox, "critical", lambda _parent, title, text: shown.append((title, text))
    )
    create_app()
    window = MainWindow(str(path))
    window.ready()
    assert not window.is_ready
    assert len(shown) == 1 and shown[0][1].startswith(f"{path} is truncated or damaged")
    window.deleteLater()


# -- a full disk ---------------------------------------------------------------------------


def test_a_full_disk_gives_one_line_and_keeps_what_was_written(tmp_path, monkeypatch):
    import json

    path = tmp_path / "full.db"
    a_database_with_a_run(path)
    init = Store.__init__

    def on_a_full_disk(self: Store, *args: object) -> None:
        """Open the database on a disk with no page left (SQLite's own "disk full")."""
        init(self, *args)
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.db.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(Store, "__init__", on_a_full_disk)
    questions = tmp_path / "big.json"
    items = [
        {"id": i, "question": "问" * 4000, "options": ["a", "b", "c", "d"], "answer": "A"}
        for i in range(50)
    ]
    questions.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    code, lines = medexam("--db", str(path), "import", "mcq", str(questions), "--name", "big")
    assert code == 1
    assert lines == [f"Error: cannot write to {path}: the disk is full (database or disk is full)"]
    monkeypatch.undo()
    code, lines = medexam("--db", str(path), "runs", "list")
    assert code == 0 and len(lines) == 2  # the run stored before is still there
    store = Store(path)
    assert not store.has_dataset("big")
    store.close()


# -- a read-only database ------------------------------------------------------------------


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_read_only_database_is_read_and_a_write_says_it_is_read_only(
    tmp_path, monkeypatch, journal
):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "medexam.db"
    run_id = a_database_with_a_run(path)
    if journal == "delete":
        con = sqlite3.connect(path)
        con.execute("PRAGMA journal_mode = DELETE")
        con.close()
    before = digest(path)
    path.chmod(0o444)
    folder.chmod(0o555)
    if os.geteuid() == 0:  # permissions do not stop root: the mount would be read-only
        monkeypatch.setattr(engine.store.dbfile, "writable", lambda _path: False)
    try:
        code, lines = medexam("--db", str(path), "runs", "list")
        assert code == 0 and len(lines) == 2 and lines[1].split()[0] == str(run_id)
        for args in (
            ["runs", "show", str(run_id)],
            ["runs", "export", str(run_id)],
            ["report", str(run_id)],
        ):
            code, lines = medexam("--db", str(path), *args)
            assert code == 0, (args, lines)
        code, lines = medexam("--db", str(path), "runs", "delete", str(run_id))
        assert code == 1
        assert len(lines) == 1 and lines[0].startswith(f"Error: {path} is read-only: "), lines
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)
    assert digest(path) == before
    assert sorted(p.name for p in folder.iterdir()) == ["medexam.db"]


def test_a_read_only_database_that_needs_upgrading_says_so(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrate(db, MIGRATIONS[:3])
    db.close()
    monkeypatch.setattr(engine.store.dbfile, "writable", lambda _path: False)
    with pytest.raises(StoreError) as err:
        Store(path)
    assert str(err.value) == (
        f"{path} is read-only: its schema 3 needs upgrading to {SCHEMA_VERSION}, which writes to it"
    )


def test_truncated_and_read_only_are_told_apart(tmp_path, monkeypatch):
    cut, locked = tmp_path / "cut.db", tmp_path / "locked.db"
    a_database_with_a_run(cut)
    with cut.open("r+b") as fh:
        fh.truncate(cut.stat().st_size // 3)
    a_database_with_a_run(locked)
    monkeypatch.setattr(engine.store.dbfile, "writable", lambda path: Path(path) != locked)
    cut_code, cut_lines = medexam("--db", str(cut), "exam", "sample")
    locked_code, locked_lines = medexam("--db", str(locked), "review", "profiles", "--add", "x")
    assert cut_code == locked_code == 1
    assert cut_lines[0].startswith(f"Error: {cut} is truncated or damaged")
    assert locked_lines[0].startswith(f"Error: {locked} is read-only: ")


# -- people answering at once --------------------------------------------------------------


def test_three_sessions_answering_the_same_question_at_once_share_one_card(tmp_path, monkeypatch):
    """Three ``exam take`` on one database answer the first question at the same moment:
    each answer is a review of the one card, none fails, every session finishes."""
    import engine.review.cards as cards
    from engine.exam.dataset import ensure_sample
    from engine.exam.person import ExamSitting

    path = tmp_path / "shared.db"
    store = Store(path)
    dataset = ensure_sample(store)
    store.close()
    topic_of = cards.topic_of

    def slow_topic(*args: object) -> str | None:  # widen the gap between reading and writing
        time.sleep(0.2)
        return topic_of(*args)

    monkeypatch.setattr(cards, "topic_of", slow_topic)
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def take() -> None:
        own = Store(path)
        try:
            session = ExamSitting(own, dataset, limit=1)
            session.next_question()
            start.wait()
            session.answer("A")
            session.finish()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=take) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    store = Store(path)
    assert [r["status"] for r in store.runs()] == ["finished"] * 3
    assert store.db.execute("SELECT count(*), max(reps) FROM cards").fetchone() == (1, 3)
    assert store.db.execute("SELECT count(*) FROM card_reviews").fetchone()[0] == 3
    store.close()
