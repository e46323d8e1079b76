"""The app's practice screens draw their blocks at random too: two starts with the same
"How many" ask different questions, the seed is stored on the run, and "In file order"
takes the first questions of the set."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.bank.blocks import stored_block

pytestmark = [pytest.mark.gui]
LONG = 120_000


def started_keys(qtbot, p, window) -> tuple[list[str], dict]:
    """Start a session on page ``p``; the keys it asks, in order, and its run's settings."""
    before = p.session
    p.start()
    qtbot.waitUntil(lambda: p.session is not None and p.session is not before, timeout=LONG)
    run = window.ctx.store.run(p.session.run_id)
    items = window.ctx.store.items(run["dataset"])
    return [str(i["id"]) for i in stored_block(items, run["settings"])], run["settings"]


def test_exam_practice_draws_at_random_unless_in_file_order(qtbot, window):
    p = window.go("exam").practice
    p.dataset.select("explaincpe-sample")
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(5)
    p.part.in_order.setChecked(False)
    first, settings = started_keys(qtbot, p, window)
    second, again = started_keys(qtbot, p, window)
    assert len(first) == len(second) == 5 and first != second
    assert settings["order"] == "random" and settings["seed"] != again["seed"]
    assert [str(q["id"]) for q in p.session.questions] == second  # asked in the drawn order
    p.part.in_order.setChecked(True)
    ordered, settings = started_keys(qtbot, p, window)
    every = [str(i["id"]) for i in window.ctx.store.items("explaincpe-sample")]
    assert ordered == every[:5] and settings["seed"] is None


def test_french_practice_draws_at_random_unless_in_file_order(qtbot, window):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    p.dataset.select("frenchmedmcqa-sample")
    p.part.retrieval.retriever.setCurrentIndex(p.part.retrieval.retriever.findData(""))
    p.part.limit.setValue(4)
    p.part.in_order.setChecked(False)
    first, settings = started_keys(qtbot, p, window)
    qtbot.waitUntil(lambda: not p.busy, timeout=LONG)
    second, again = started_keys(qtbot, p, window)
    assert len(first) == len(second) == 4 and settings["seed"] != again["seed"]
    assert [str(i["id"]) for i in p.session.items] == second
    qtbot.waitUntil(lambda: not p.busy, timeout=LONG)
    p.part.in_order.setChecked(True)
    ordered, settings = started_keys(qtbot, p, window)
    every = [str(i["id"]) for i in window.ctx.store.items("frenchmedmcqa-sample")]
    assert ordered == every[:4] and settings["order"] == "file"


def test_a_data_set_without_subjects_says_so_and_still_starts(qtbot, window, tmp_path):
    """ExplainCPE's dev split carries no question types: the Subjects box says so rather
    than standing empty, and a block draws from every question."""
    import json

    from engine.exam.dataset import import_file

    rows = [{"id": i, "question": f"Q{i}?", "options": ["a", "b", "c", "d", "e"],
             "answer": "B", "explanation": "because"} for i in range(3)]  # fmt: skip
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    import_file(window.ctx.store, path, name="untyped")
    window.ctx.notify_data()
    p = window.go("exam").practice
    p.dataset.select("untyped")
    box = p.part.block.subjects
    assert box.count() == 1 and "untyped names no subjects" in box.item(0).text()
    assert not box.item(0).flags() & Qt.ItemFlag.ItemIsEnabled
    box.itemClicked.emit(box.item(0))  # a click ticks nothing
    assert p.part.block.chosen_subjects() == [] and p.part.block.plain
    p.dataset.select("explaincpe-sample")
    assert "names no subjects" not in box.item(0).text()
