"""The question bank on the practice tabs, driven through the app: a custom block (pool,
subject, timed) built on the start page and saved, a question marked and noted mid-block and
a miss tagged with why, all found stored, and shown again, after the app is opened anew. No
model is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from engine.bank.notebook import REASONS, entries, entry
from gui.testing import click_button, close_message_boxes, message_boxes, open_window

pytestmark = pytest.mark.gui
SAMPLE = "explaincpe-sample"
DRUGS = "药品知识题"  # sample-01, -02, -04, -05 … of the sample's first five
NOTE = "bisphosphonate: upright 30 min, plain water"


def click(qtbot: Any, widget: Any) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def opened(qtbot: Any, folder: Path) -> Any:
    w = open_window(folder)
    qtbot.addWidget(w)
    w.show()
    return w


def start(qtbot: Any, p: Any) -> None:
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 1 and p.item is not None and not p.busy)


def answer(qtbot: Any, p: Any, right: bool) -> None:
    """Answer the question shown, right or wrong, and wait for what comes after."""
    gold = p.item["answer"]
    letter = gold if right else next(x for x in "ABCDE" if x != gold)
    key = p.item["id"]
    click(qtbot, p.options.buttons[letter])
    click(qtbot, p.submit_button)
    timed = p.session.mode == "timed"
    qtbot.waitUntil(
        lambda: (
            not p.busy
            and (p.stack.currentIndex() == 2 or (p.item["id"] != key if timed else p.answered))
        )
    )


def check_subject(p: Any, name: str) -> None:
    for i in range(p.part.block.subjects.count()):
        item = p.part.block.subjects.item(i)
        if item.data(Qt.ItemDataRole.UserRole) == name:
            item.setCheckState(Qt.CheckState.Checked)
            return
    raise LookupError(name)


def pool_text(p: Any, pool: str) -> str:
    return p.part.block.pool.itemText(p.part.block.pool.findData(pool))


def first_practice(qtbot: Any, p: Any) -> None:
    """The first five questions in practice: 01, 02 and 05 missed, the first miss tagged."""
    p.dataset.select(SAMPLE)
    assert pool_text(p, "all") == "All (14)" and pool_text(p, "incorrect") == "Incorrect (0)"
    p.part.mode_practice.setChecked(True)
    p.part.count.setValue(5)
    p.part.in_order.setChecked(True)  # the sample's first five, not a random draw
    start(qtbot, p)
    assert p.position.text() == "Question 1 of 5"
    assert not p.marks.mark_button.isChecked() and p.marks.note.text() == ""
    for n in range(5):
        answer(qtbot, p, right=n in (2, 3))
        assert p.part.difficulty.text().startswith("Difficulty — ")
        assert p.marks.reasons.isVisible() == (n not in (2, 3))
        if n == 0:
            click(qtbot, p.marks.reason_buttons["knowledge"])
            assert p.marks.reason_buttons["knowledge"].isChecked()
            assert not p.marks.reason_buttons["misread"].isChecked()
        click(qtbot, p.next_button)
        qtbot.waitUntil(lambda: not p.busy and (p.stack.currentIndex() == 2 or not p.answered))
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2)
    p.back_to_setup()


def timed_block(qtbot: Any, p: Any) -> str:
    """A timed block of the missed drug questions; the second one marked and noted."""
    assert pool_text(p, "incorrect") == "Incorrect (3)"
    p.part.block.pool.setCurrentIndex(p.part.block.pool.findData("incorrect"))
    check_subject(p, DRUGS)
    assert not p.part.only_missed.isEnabled()  # the pool decides
    p.part.mode_timed.setChecked(True)
    p.part.minutes.setValue(10)
    p.part.count.setValue(0)
    p.part.block.save_as("missed drugs")
    assert p.part.block.saved.currentData() == "missed drugs"
    start(qtbot, p)
    assert p.session.mode == "timed" and p.session.time_limit_s == 600
    assert [q["id"] for q in p.session.questions] == ["sample-01", "sample-02", "sample-05"]
    answer(qtbot, p, right=True)
    key = p.item["id"]
    assert key == "sample-02"
    qtbot.keyClick(p, "m")  # M marks (the focus is on the options)
    assert p.marks.mark_button.isChecked() and p.marks.mark_button.text() == "★ Marked"
    store = p.ctx.store
    assert entry(store, "default", SAMPLE, key).marked
    p.marks.note.setFocus()
    qtbot.keyClicks(p.marks.note, NOTE[:20])
    qtbot.keyClick(p.marks.note, Qt.Key.Key_Return)  # kept; the answer is not submitted
    assert entry(store, "default", SAMPLE, key).note == NOTE[:20]
    assert p.item["id"] == key and not p.busy and p.marks.mark_button.isChecked()
    qtbot.keyClicks(p.marks.note, NOTE[20:])  # its "m" is typed, not a mark
    assert p.marks.mark_button.isChecked()
    answer(qtbot, p, right=False)  # the note is kept as the question changes
    assert entry(store, "default", SAMPLE, key).note == NOTE
    assert not p.marks.mark_button.isChecked() and p.marks.note.text() == ""
    click(qtbot, p.end_button)
    for box in message_boxes():  # questions left: it asks first
        click_button(box, "End session")
    qtbot.waitUntil(lambda: p.stack.currentIndex() == 2 and not p.busy)
    return key


def test_a_marked_and_noted_question_survives_a_restart(qtbot: Any, tmp_path: Path) -> None:
    w = opened(qtbot, tmp_path)
    try:
        p = w.go("exam").practice
        first_practice(qtbot, p)
        assert entry(w.ctx.store, "default", SAMPLE, "sample-01").reason == "knowledge"
        key = timed_block(qtbot, p)
    finally:
        close_message_boxes()
        w.close()

    again = opened(qtbot, tmp_path)
    try:
        store = again.ctx.store
        marked = entries(store, "default", marked=True)
        assert [(e.activity, e.dataset, e.item_key, e.note) for e in marked] == [
            ("exam", SAMPLE, key, NOTE)
        ]
        assert entry(store, "default", SAMPLE, "sample-01").reason == "knowledge"
        p = again.go("exam").practice
        p.dataset.select(SAMPLE)
        assert pool_text(p, "marked") == "Marked (1)"
        block = p.part.block
        block.saved.setCurrentIndex(block.saved.findData("missed drugs"))
        block.saved.activated.emit(block.saved.currentIndex())  # the saved block fills
        assert block.pool.currentData() == "incorrect" and block.chosen_subjects() == [DRUGS]
        assert p.part.mode_timed.isChecked() and p.part.minutes.value() == 10
        p.part.block.pool.setCurrentIndex(p.part.block.pool.findData("marked"))
        p.part.mode_practice.setChecked(True)
        start(qtbot, p)
        assert p.position.text() == "Question 1 of 1" and p.item["id"] == key
        assert p.marks.mark_button.isChecked() and p.marks.note.text() == NOTE
        answer(qtbot, p, right=False)
        assert p.marks.reasons.isVisible()
        assert not any(b.isChecked() for b in p.marks.reason_buttons.values())
        click(qtbot, p.marks.reason_buttons["time"])
        assert entry(store, "default", SAMPLE, key).reason == "time"
        assert REASONS["time"] == p.marks.reason_buttons["time"].text()
        assert not message_boxes()
    finally:
        close_message_boxes()
        again.close()


def test_an_empty_block_is_said_in_one_line(qtbot: Any, tmp_path: Path) -> None:
    w = opened(qtbot, tmp_path)
    try:
        p = w.go("exam").practice
        p.dataset.select(SAMPLE)
        pool = p.part.block.pool
        pool.setCurrentIndex(pool.findData("marked"))  # nothing marked yet
        click(qtbot, p.start_button)
        qtbot.waitUntil(lambda: bool(message_boxes()) and not p.busy)
        assert "no question of explaincpe-sample is in this block" in message_boxes()[0].text()
        assert p.stack.currentIndex() == 0
    finally:
        close_message_boxes()
        w.close()


def test_a_french_question_is_marked_noted_and_tagged(qtbot: Any, tmp_path: Path) -> None:
    w = opened(qtbot, tmp_path)
    try:
        f = w.go("french").practice
        name = "frenchmedmcqa-sample"
        qtbot.waitUntil(lambda: f.dataset.combo.findData(name) >= 0, timeout=60_000)
        f.dataset.select(name)
        f.part.retrieval.retriever.setCurrentIndex(f.part.retrieval.retriever.findData(""))
        f.part.limit.setValue(2)
        click(qtbot, f.start_button)
        qtbot.waitUntil(lambda: f.item is not None and not f.busy)
        key = f.item.id
        click(qtbot, f.marks.mark_button)
        f.marks.note.setFocus()
        qtbot.keyClicks(f.marks.note, "three right options here")
        qtbot.keyClick(f.marks.note, Qt.Key.Key_Return)  # Enter keeps the note
        store = w.ctx.store
        found = entry(store, "default", name, key)
        assert found.marked and found.note == "three right options here"
        assert found.activity == "french"
        gold = store.items_by_key(name)[key]["correct_answers"]
        wrong = "e" if gold != ["e"] else "a"  # the question is drawn at random
        click(qtbot, f.options.buttons[wrong])  # not every right one: a miss
        click(qtbot, f.submit_button)
        qtbot.waitUntil(lambda: f.part.verdict.text() != "" and not f.busy)
        assert f.marks.reasons.isVisible()
        click(qtbot, f.marks.reason_buttons["misread"])
        assert entry(store, "default", name, key).reason == "misread"
        click(qtbot, f.marks.reason_buttons["misread"])  # a second click clears it
        assert entry(store, "default", name, key).reason is None
        click(qtbot, f.next_button)
        qtbot.waitUntil(lambda: f.item.id != key and not f.busy)
        assert not f.marks.mark_button.isChecked() and f.marks.note.text() == ""
        assert [e.item_key for e in entries(store, "default", marked=True)] == [key]
    finally:
        close_message_boxes()
        w.close()
