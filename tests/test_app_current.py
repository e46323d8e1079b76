"""The app always current: what another medexam process commits (a data set imported, a run,
an experiment) shows in the open app within seconds, with no restart."""

from __future__ import annotations

import pytest

from engine.exam.dataset import ensure_sample, import_file, sample_path
from engine.exam.person import ExamSitting
from engine.store.changes import Changes
from engine.store.store import Store


@pytest.fixture
def other(window):
    """A second connection to the window's database: another process's, as far as the
    window can tell."""
    second = Store(window.ctx.db_path)
    yield second
    second.close()


def test_app_current_changes_are_only_other_connections_and_what_shows(tmp_path):
    path = tmp_path / "m.db"
    mine, theirs = Store(path), Store(path)
    try:
        watch = Changes(mine)
        assert watch.since() == set()
        ensure_sample(mine)  # this connection's own write: not another's
        assert watch.since() == set()
        import_file(theirs, sample_path(), "explaincpe", "cpe-two")
        assert watch.since() == {"data"}
        assert watch.since() == set()  # told once
        session = ExamSitting(theirs, "cpe-two", limit=2)
        assert watch.since() == {"runs"}
        session.answer(None)  # an answer alone: nothing a list shows
        assert watch.since() == set()
        session.finish()
        assert watch.since() == {"runs"}
        theirs.delete_dataset("cpe-two")
        assert "data" in watch.since()
    finally:
        mine.close()
        theirs.close()


def test_app_current_exam_screen_lists_a_data_set_imported_elsewhere(qtbot, window, other):
    p = window.go("exam").practice
    names = lambda: [p.dataset.combo.itemData(i) for i in range(p.dataset.combo.count())]  # noqa: E731
    assert "cpe-elsewhere" not in names()
    import_file(other, sample_path(), "explaincpe", "cpe-elsewhere")
    qtbot.waitUntil(lambda: "cpe-elsewhere" in names(), timeout=8000)
    # a data set deleted elsewhere goes as well
    other.delete_dataset("cpe-elsewhere")
    qtbot.waitUntil(lambda: "cpe-elsewhere" not in names(), timeout=8000)


def test_app_current_results_list_a_run_made_elsewhere(qtbot, window, other):
    results = window.go("results")
    ensure_sample(other)
    session = ExamSitting(other, "explaincpe-sample", limit=1)
    ids = lambda: {int(r["id"]) for r in results.runs.rows}  # noqa: E731
    qtbot.waitUntil(lambda: session.run_id in ids(), timeout=8000)
    session.answer(None)
    session.finish()
    status = lambda: next(r["status"] for r in results.runs.rows if r["id"] == session.run_id)  # noqa: E731
    qtbot.waitUntil(lambda: status() == "finished", timeout=8000)
