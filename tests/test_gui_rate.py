"""Results → Rate explanations: a person rates a real model run's explanations with the
keyboard only, closes the app, opens it again and goes on where they stopped; a run without
explanations is refused in one line."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.models.scripted import ScriptedModel
from engine.ratings.people import MAX_COMMENT
from engine.ratings.perspectives import KEYS
from gui.testing import message_boxes, open_window

pytestmark = pytest.mark.gui

RATER = "dr-li"


def model_run(store: Any, method: str, limit: int) -> int:
    """A real smollm2 exam run over the sample's first ``limit`` questions."""
    settings = {"model": "smollm2", "method": method, "limit": limit, "max_tokens": 32}
    summary = run(store, "exam", ensure_sample(store), settings)
    assert summary["status"] == "finished", summary.get("error")
    return int(summary["run_id"])


def press(qtbot: Any, dialog: Any, keys: str) -> None:
    """Type ``keys`` where the dialog's keyboard focus is, one at a time ("\\n": Enter)."""
    for key in keys:
        target = dialog.focusWidget() or dialog
        if key == "\n":
            qtbot.keyClick(target, Qt.Key.Key_Return)
        else:
            qtbot.keyClick(target, key)


def open_rate(qtbot: Any, window: Any, run_id: int) -> Any:
    """Results → select ``run_id`` → Rate explanations → rater RATER (typed, Enter)."""
    r = window.go("results")
    r.reload()
    r.select_runs([run_id])
    assert r.rate_button.isEnabled()
    qtbot.mouseClick(r.rate_button, Qt.MouseButton.LeftButton)
    dialog = r.rate_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.session.rater == "default"
    field = dialog.rater.lineEdit()
    field.selectAll()
    qtbot.keyClicks(field, RATER)
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert dialog.session.rater == RATER
    return dialog


def test_gui_rate_three_by_keyboard_then_resume(qtbot, window, chat_model, tmp_path):
    run_id = model_run(window.ctx.store, "generate", 4)
    dialog = open_rate(qtbot, window, run_id)
    assert dialog.session.total == 4
    assert dialog.title.text() == (
        "Explanation 1 of 4 · 0 rated · this one drawn to check the judges: 4 left"
    )
    shown = dialog.answer_view.toPlainText()
    assert "Answer given" in shown and dialog.entry.explained.explanation.strip()[:10] in shown
    assert "smollm2" not in shown + dialog.question_view.toPlainText() + dialog.windowTitle()

    given = {}
    for n, digits in enumerate(("54321", "12345", "33333")):
        assert dialog.rows[0].hasFocus() or dialog.focusWidget() is dialog.rows[0]
        assert not dialog.next_button.isEnabled()
        key = dialog.entry.key
        comment = "misses the mechanism" if n == 1 else ""
        press(qtbot, dialog, digits + comment)  # after the fifth row: the comment
        assert dialog.next_button.isEnabled()
        press(qtbot, dialog, "\n")
        given[key] = (dict(zip(KEYS, map(int, digits), strict=True)), comment)
        assert dialog.entry is not None and dialog.entry.key != key
    assert dialog.title.text() == (
        "Explanation 4 of 4 · 3 rated · this one drawn to check the judges: 1 left"
    )

    window.close()
    assert not dialog.isVisible()  # closes with the main window
    again = open_window(tmp_path)
    qtbot.addWidget(again)
    again.show()
    try:
        dialog = open_rate(qtbot, again, run_id)
        assert dialog.title.text().startswith("Explanation 4 of 4 · 3 rated · this one drawn")
        assert dialog.entry.key not in given
        store = again.ctx.store
        rows = [
            r for r in store.rated_rows([run_id]) if r["scorer"] == f"explanation-rating@{RATER}"
        ]
        stored: dict[tuple[int, str], dict[str, Any]] = {}
        for r in rows:
            stored.setdefault((int(r["run_id"]), str(r["item_key"])), {})[r["key"]] = r
        assert set(stored) == set(given)
        for key, (values, comment) in given.items():
            assert {k: int(stored[key][k]["value"]) for k in KEYS} == values
            assert stored[key]["rated"]["value"] == 1
            assert (stored[key]["rated"]["explanation"] or "") == comment

        dialog.skip_button.click()  # the last one: all done
        assert dialog.stack.currentIndex() == 1
        assert dialog.done_title.text() == f"All 4 explanations done by {RATER}: 3 rated, 1 skipped"
        press(qtbot, dialog, "\n")  # Close
        assert not dialog.isVisible()
    finally:
        again.close()


def one_error() -> str:
    """The text of the one message box open (closed now): one line, no traceback."""
    boxes = message_boxes()
    assert len(boxes) == 1
    text = boxes[0].text()
    assert "\n" not in text and not boxes[0].detailedText()
    boxes[0].done(0)
    return text


def test_gui_rate_refuses_runs_without_explanations_and_bad_raters(qtbot, window, chat_model):
    store = window.ctx.store
    logprob = model_run(store, "logprob", 2)
    generated = model_run(store, "generate", 1)
    person = ExamSitting(store, ensure_sample(store), limit=1)
    person.next_question()
    person.answer("A")
    person.finish()

    r = window.go("results")
    r.reload()
    r.select_runs([person.run_id])
    assert not r.rate_button.isEnabled()  # a person's session has no explanations
    r.select_runs([logprob])
    assert r.rate_button.isEnabled()
    qtbot.mouseClick(r.rate_button, Qt.MouseButton.LeftButton)
    assert r.rate_dialog is None
    assert "no explanations to rate" in one_error()

    r.select_runs([generated])
    qtbot.mouseClick(r.rate_button, Qt.MouseButton.LeftButton)
    dialog = r.rate_dialog
    field = dialog.rater.lineEdit()
    field.selectAll()
    qtbot.keyClicks(field, "?!")
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert "cannot name a rater" in one_error()
    assert dialog.session.rater == dialog.rater.currentText() == "default"
    assert dialog.isVisible() and dialog.entry is not None

    dialog.rows[0].setFocus()  # Tab and Shift+Tab go from row to row
    qtbot.keyClick(dialog.rows[0], Qt.Key.Key_Tab)
    assert dialog.focusWidget() is dialog.rows[1]
    qtbot.keyClick(dialog.rows[1], Qt.Key.Key_Backtab)  # with Shift, QTest leaves it held
    assert dialog.focusWidget() is dialog.rows[0]


def test_gui_rate_shows_the_answer_with_its_option_and_caps_the_comment(
    qtbot, window, scripted_pool
):
    store = window.ctx.store
    pool = scripted_pool(ScriptedModel("model-a", replies="答案：B\n解析：B项正确。"))
    done = run(store, "exam", ensure_sample(store), {"model": "model-a", "limit": 1}, pool=pool)
    dialog = open_rate(qtbot, window, int(done["run_id"]))
    item = store.items(ensure_sample(store))[0]
    gold = item["answer"]
    assert f"Answer given: B. {item['options'][1]}" in dialog.answer_view.toPlainText()
    right = f"Right answer: {gold}. {item['options']['ABCDE'.index(gold)]}"
    assert right in dialog.question_view.toPlainText()
    assert dialog.comment.maxLength() == MAX_COMMENT
    assert str(MAX_COMMENT) in dialog.comment.placeholderText()


def test_gui_rate_shows_control_characters_escaped(qtbot, window, scripted_pool):
    store = window.ctx.store
    reply = "答案：B\n解析：B\u202e项正确\x1b[31m。"
    pool = scripted_pool(ScriptedModel("model-a", replies=reply))
    done = run(store, "exam", ensure_sample(store), {"model": "model-a", "limit": 1}, pool=pool)
    dialog = open_rate(qtbot, window, int(done["run_id"]))
    shown = dialog.answer_view.toPlainText()
    assert "B\\u202e项正确\\x1b[31m。" in shown
    assert "\u202e" not in shown and "\x1b" not in shown
