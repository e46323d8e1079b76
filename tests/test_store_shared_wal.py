"""A database one process holds open through several stores (a run's worker threads each
open their own) keeps its write-ahead log when another process (the app, a report) reads it
and closes: opening a store does not open and close the file beside SQLite's handle, which
would drop the process's locks on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.store.store import Store

#: Another process: open the database, read it, close it.
READ = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "c.execute('SELECT count(*) FROM runs').fetchall(); c.close()"
)


def test_another_process_reading_and_closing_leaves_the_write_ahead_log(tmp_path: Path):
    path = tmp_path / "medexam.db"
    first = Store(path)
    first.start_run("exam", "d", "m", {"model": "m"})
    second = Store(path)  # a worker thread's own store on the same database

    subprocess.run([sys.executable, "-c", READ, str(path)], check=True)

    assert path.with_name("medexam.db-wal").exists()
    run_id = first.start_run("exam", "d", "m", {"model": "m"})
    assert second.run(run_id)["id"] == run_id
    second.close()
    first.close()
