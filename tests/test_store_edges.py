"""The store at its edges: run ownership and ``interrupted`` runs, run ids never reused,
migrating an older database, and databases it refuses to open (with one clear line)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from engine.cli import cli
from engine.store.deleted import delete_runs
from engine.store.migrations import (
    MIGRATIONS,
    SCHEMA_VERSION,
    MigrationError,
    migrate,
    schema_version,
)
from engine.store.owner import host, process_started
from engine.store.store import RUN_STATUSES, Store, StoreError

REPO = Path(__file__).resolve().parents[1]
MEDEXAM = Path(sys.executable).with_name("medexam")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def set_owner(store: Store, run_id: int, pid: int | None, host: str, started: float | None):
    store.db.execute(
        "UPDATE runs SET owner_pid = ?, owner_host = ?, owner_started = ? WHERE id = ?",
        [pid, host, started, run_id],
    )
    store.db.conn.commit()


@pytest.fixture
def sleeper():
    """A live process that is not this one."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


# -- ownership -------------------------------------------------------------------------


def test_a_run_is_owned_by_the_process_that_started_it(store):
    run_id = store.start_run("exam", "demo", "m")
    run = store.run(run_id)
    assert (run["owner_pid"], run["owner_host"]) == (os.getpid(), host())
    assert run["owner_started"] == pytest.approx(process_started(os.getpid()), abs=1)
    assert run["status"] == "running" and store.live(run_id) and store.live(run)


def test_a_run_whose_process_died_reads_interrupted_and_nothing_is_written(tmp_path):
    path = tmp_path / "medexam.db"
    Store(path).close()
    child = (
        "import sys; from engine.store.store import Store; "
        "print(Store(sys.argv[1]).start_run('exam', 'demo', 'm'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(path)], capture_output=True, text=True, check=True
    )
    run_id = int(out.stdout)
    store = Store(path)
    assert store.run(run_id)["status"] == "interrupted"
    assert [r["status"] for r in store.runs()] == ["interrupted"]
    assert not store.live(run_id)
    stored = store.db.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()
    assert stored == ("running",)
    store.close()


def test_a_reused_pid_is_not_mistaken_for_the_owner(store):
    run_id = store.start_run("exam", "demo", "m")
    set_owner(store, run_id, os.getpid(), host(), 1_000_000.0)  # this pid, another start time
    assert store.run(run_id)["status"] == "interrupted"


def test_a_run_without_an_owner_reads_interrupted(store):
    run_id = store.start_run("exam", "demo", "m")
    set_owner(store, run_id, None, "", None)
    assert store.run(run_id)["status"] == "interrupted"


def test_a_run_of_another_host_stays_running(store):
    run_id = store.start_run("exam", "demo", "m")
    set_owner(store, run_id, 1, "elsewhere.example", 1.0)
    assert store.run(run_id)["status"] == "running" and store.live(run_id)
    with pytest.raises(StoreError, match=r"still running .*on elsewhere\.example"):
        store.claim_run(run_id)
    assert store.claim_run(run_id, force=True)["owner_host"] == host()


def test_claiming_is_refused_while_another_live_process_runs_it(store, sleeper):
    run_id = store.start_run("exam", "demo", "m")
    set_owner(store, run_id, sleeper.pid, host(), process_started(sleeper.pid))
    assert store.run(run_id)["status"] == "running"
    with pytest.raises(StoreError) as err:
        store.claim_run(run_id)
    assert str(err.value) == (
        f"run {run_id} is still running in another medexam process (pid {sleeper.pid} on {host()})"
    )
    with pytest.raises(StoreError, match="still running"):
        store.update_run(run_id, status="running")  # resuming claims too
    sleeper.kill()
    sleeper.wait()
    assert store.run(run_id)["status"] == "interrupted"
    store.finish_run(run_id, {}, status="failed", error="boom")
    run = store.claim_run(run_id)
    assert run["status"] == "running" and run["finished"] is None and run["error"] is None
    assert run["owner_pid"] == os.getpid()


def test_claiming_ones_own_or_a_finished_run_succeeds(store):
    run_id = store.start_run("exam", "demo", "m")
    assert store.claim_run(run_id)["status"] == "running"
    store.finish_run(run_id, {"accuracy": 50.0})
    assert store.run(run_id)["finished"] is not None
    assert store.claim_run(run_id)["finished"] is None
    with pytest.raises(StoreError, match="no run with id 99"):
        store.claim_run(99)


def test_interrupted_is_readable_but_never_a_target(store):
    assert "interrupted" in RUN_STATUSES
    run_id = store.start_run("exam", "demo", "m")
    with pytest.raises(StoreError, match="cannot be finished as 'interrupted'"):
        store.finish_run(run_id, {}, status="interrupted")
    with pytest.raises(StoreError, match="cannot be finished as 'running'"):
        store.finish_run(run_id, {}, status="running")
    with pytest.raises(StoreError, match="not set"):
        store.update_run(run_id, status="interrupted")
    assert store.run(run_id)["status"] == "running"


def test_run_ids_are_never_reused_after_a_delete(store):
    ids = [store.start_run("exam", "demo", "m") for _ in range(3)]
    delete_runs(store, [ids[-1]])
    assert store.start_run("exam", "demo", "m") == ids[-1] + 1


# -- migration ---------------------------------------------------------------------------


def test_a_version_1_database_migrates_keeping_every_row(tmp_path):
    path = tmp_path / "v1.db"
    db = sqlite_utils.Database(path)
    db.execute("PRAGMA foreign_keys = ON")
    assert migrate(db, MIGRATIONS[:1]) == 1
    for status in ("finished", "running", "finished"):
        db["runs"].insert({"activity": "exam", "dataset": "d", "model": "m", "status": status})
    db["answers"].insert({"run_id": 2, "item_key": "q1", "chosen": "B"})
    db["turns"].insert({"run_id": 3, "item_key": "c1", "turn": 0, "role": "patient"})
    db.close()

    store = Store(path)
    assert store.version == SCHEMA_VERSION
    assert [r["id"] for r in store.runs()] == [3, 2, 1]
    assert store.run(2)["status"] == "interrupted"  # running, no owner recorded
    assert store.run(1)["status"] == "finished"
    assert [a["chosen"] for a in store.answers(2)] == ["B"]
    assert len(store.turns(3)) == 1
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert "AUTOINCREMENT" in store.db["runs"].schema
    assert store.db["runs"].indexes[0].columns == ["activity"]
    with pytest.raises(sqlite3.IntegrityError):  # answers still reference runs
        store.db.execute("INSERT INTO answers (run_id, item_key) VALUES (99, 'x')")
    delete_runs(store, [3])
    assert store.start_run("exam", "d", "m") == 4
    store.close()


def test_a_migration_that_fails_leaves_the_previous_version(tmp_path):
    db = sqlite_utils.Database(tmp_path / "x.db")
    migrate(db, MIGRATIONS[:1])

    def broken(db: sqlite_utils.Database) -> None:
        db.execute("ALTER TABLE runs ADD COLUMN notes TEXT")
        raise RuntimeError("half way")

    with pytest.raises(RuntimeError, match="half way"):
        migrate(db, [MIGRATIONS[0], broken])
    assert schema_version(db) == 1 and "notes" not in db["runs"].columns_dict


def test_a_migration_that_breaks_foreign_keys_is_rolled_back(tmp_path):
    db = sqlite_utils.Database(tmp_path / "x.db")
    migrate(db, MIGRATIONS)
    db["runs"].insert({"activity": "exam", "status": "finished"})
    db["answers"].insert({"run_id": 1, "item_key": "q1"})

    def drop_runs(db: sqlite_utils.Database) -> None:
        db.execute("DELETE FROM runs")

    with pytest.raises(MigrationError, match="breaks 1 foreign key"):
        migrate(db, [*MIGRATIONS, drop_runs])
    assert schema_version(db) == SCHEMA_VERSION and db["runs"].count == 1


# -- databases that are refused ------------------------------------------------------------


def test_a_text_file_is_not_a_database_and_stays_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)
    before = (digest(path), path.stat().st_mtime_ns)
    with pytest.raises(StoreError) as err:
        Store(path)
    assert str(err.value) == f"{path} is not a medexam database"
    assert (digest(path), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_another_programs_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    before = digest(path)
    with pytest.raises(StoreError, match="is not a medexam database"):
        Store(path)
    assert digest(path) == before


def test_a_newer_database_is_refused_untouched(tmp_path):
    path = tmp_path / "new.db"
    Store(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.execute("PRAGMA journal_mode = DELETE")
    con.commit()
    con.close()
    before = digest(path)
    with pytest.raises(StoreError) as err:
        Store(path)
    assert str(err.value) == (
        f"{path} was written by a newer medexam "
        f"(schema {SCHEMA_VERSION + 5}; this one knows {SCHEMA_VERSION})"
    )
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db"]


def test_a_chosen_database_in_a_missing_folder_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "no" / "such" / "x.db"
    with pytest.raises(StoreError) as err:
        Store(path)
    assert str(err.value) == f"folder {path.parent} does not exist"
    monkeypatch.setenv("MEDEXAM_DB", str(path))
    with pytest.raises(StoreError, match="does not exist"):
        Store()
    assert not (tmp_path / "no").exists()
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)


def test_the_default_database_creates_its_folder(tmp_path, monkeypatch):
    home = tmp_path / "fresh" / "home"
    monkeypatch.setenv("MEDEXAM_HOME", str(home))
    monkeypatch.delenv("MEDEXAM_DB", raising=False)
    store = Store()
    assert Path(store.path) == home / "medexam.db" and Path(store.path).is_file()
    store.close()


# -- the command line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["runs", "list"], ["runs", "show", "1"], ["import", "mcq", "questions.json"]],
)
def test_every_command_reports_a_bad_database_in_one_line(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    Path("notadb.txt").write_text("hello\n")
    Path("questions.json").write_text("[]")
    result = CliRunner().invoke(cli, ["--db", "notadb.txt", *args])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == ["Error: notadb.txt is not a medexam database"]
    assert Path("notadb.txt").read_text() == "hello\n"
    missing = CliRunner().invoke(cli, ["--db", "nowhere/x.db", *args])
    assert missing.exit_code == 1
    assert missing.output.splitlines() == ["Error: folder nowhere does not exist"]
    assert not Path("nowhere").exists()


@pytest.mark.parametrize("command", [["runs", "list"], ["gui"]])
def test_the_medexam_command_reports_a_bad_database_in_one_line(tmp_path, command):
    (tmp_path / "notadb.txt").write_text("hello\n")
    env = {**os.environ, "MEDEXAM_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    env.pop("MEDEXAM_DB", None)
    result = subprocess.run(
        [str(MEDEXAM), "--db", "notadb.txt", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["Error: notadb.txt is not a medexam database"]
    assert result.stdout == ""
    assert (tmp_path / "notadb.txt").read_text() == "hello\n"


def test_samples_written_by_another_instance_meanwhile_are_not_an_error(store, monkeypatch):
    """Two app instances starting at once both see no sample, then both write it: the one
    that writes second finds it there and goes on."""
    from engine.consult.cases import cases
    from engine.exam import dataset as exam_dataset
    from engine.french import dataset as french_dataset

    for module in (exam_dataset, cases, french_dataset):
        module.ensure_sample(store)
    names = [d["name"] for d in store.datasets()]
    corpora = [c["name"] for c in store.corpora()]
    monkeypatch.setattr(type(store), "has_dataset", lambda self, name: False)
    monkeypatch.setattr(type(store), "corpora", lambda self: [])
    for module in (exam_dataset, cases, french_dataset):
        module.ensure_sample(store)  # the check saw nothing; the write finds it there
    monkeypatch.undo()
    assert [d["name"] for d in store.datasets()] == names
    assert [c["name"] for c in store.corpora()] == corpora
