"""The French QA screen, driven end to end: questions with retrieved passages (the query
words highlighted), several options ticked, Hamming score and exact match per question and
overall, the retriever and k changed mid-session; and a model run. The model is the real
embedded one."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui.french.passages import HIGHLIGHT
from gui.testing import click_button, message_boxes

pytestmark = [pytest.mark.gui, pytest.mark.usefixtures("chat_model")]
LONG = 300_000


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_practice_with_highlighted_passages(qtbot, window):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    qtbot.waitUntil(lambda: p.part.retrieval.corpus.findData("french-sample") >= 0)
    p.dataset.select("frenchmedmcqa-sample")
    r = p.part.retrieval
    r.corpus.setCurrentIndex(r.corpus.findData("french-sample"))
    r.retriever.setCurrentIndex(r.retriever.findData("bm25"))
    r.k.setValue(2)
    p.part.limit.setValue(2)
    p.part.in_order.setChecked(True)  # sample-01 first, not a random draw
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    assert p.position.text() == "Question 1 of 2"
    assert len(p.item.passages) == 2
    html = p.part.passages.toHtml()
    assert "Passage 2" in p.part.passages.toPlainText()
    assert "#fde68a" in html  # the query words are highlighted
    assert HIGHLIGHT.startswith("<span")

    # Fewer passages: the current question is retrieved again.
    r.k.setValue(1)
    qtbot.waitUntil(
        lambda: not p.busy and "Passage 2" not in p.part.passages.toPlainText(), timeout=LONG
    )

    # Tick two options, one of them right.
    gold = ["a", "b", "c"]  # sample-01: paracetamol poisoning
    assert p.item.id == "sample-01"
    for letter in ("a", "d"):
        click(qtbot, p.options.buttons[letter])
    assert p.options.selected() == ["a", "d"]
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    assert (
        "Partly right" in p.part.verdict.text() and "Hamming score 25.0%" in p.part.verdict.text()
    )
    assert p.options.buttons["a"].state == "correct"
    assert p.options.buttons["d"].state == "wrong"
    assert all(p.options.buttons[x].state in ("correct", "missed") for x in gold)
    assert "Hamming 25.0%" in p.part.total.text() and "EMR 0.0%" in p.part.total.text()

    click(qtbot, p.next_button)
    qtbot.waitUntil(lambda: p.position.text() == "Question 2 of 2" and not p.busy, timeout=LONG)
    right = sorted(p.session.items[1]["correct_answers"])
    for letter in right:
        p.options.toggle(letter)
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: "Finished" in p.part.total.text(), timeout=LONG)
    run = window.ctx.store.runs("french")[0]
    assert run["runner"] == "person" and run["status"] == "finished"
    assert run["summary"]["hamming"] == pytest.approx(62.5)
    assert run["summary"]["emr"] == 50.0


def test_model_run_over_french_questions(qtbot, window):
    m = window.go("french").runs
    qtbot.waitUntil(lambda: m.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    qtbot.waitUntil(lambda: m.retrieval.corpus.findData("french-sample") >= 0, timeout=LONG)
    m.dataset.select("frenchmedmcqa-sample")
    m.fields["model"].setCurrentIndex(m.fields["model"].findData("smollm2"))
    r = m.retrieval
    r.corpus.setCurrentIndex(r.corpus.findData("french-sample"))
    r.retriever.setCurrentIndex(r.retriever.findData("bm25"))
    r.k.setValue(1)
    m.fields["method"].setCurrentIndex(m.fields["method"].findData("generate"))
    m.limit.setValue(1)
    click(qtbot, m.run_button)
    qtbot.waitUntil(
        lambda: message_boxes() or (m.job is None and "Run #" in m.summary.text()), timeout=LONG
    )
    assert not message_boxes(), [b.text() for b in message_boxes()]
    run = window.ctx.store.runs("french")[0]
    assert run["runner"] == "model" and run["status"] == "finished", run.get("error")
    assert run["settings"]["retriever"] == "bm25" and run["settings"]["k"] == 1
    assert len(m.rows.rows) == 1 and m.live.text().endswith("%")
    assert m.rows.data(m.rows.index(0, 1)) == "1"  # numbered from 1, not the question's id


START_AT_ONCE = """
import sys
from PySide6.QtWidgets import QApplication
from gui.testing import message_boxes, open_window

window = open_window(sys.argv[1])
window.show()
practice = window.go("french").practice
practice.start_button.click()  # at once: the sample data is still loading
app = QApplication.instance()
clicked = False
for _ in range(600):
    app.processEvents()
    if practice.item is not None or message_boxes():
        break
    if not clicked and practice.start_button.isEnabled():
        practice.start_button.click()  # the moment it can start
        clicked = True
    window.thread().msleep(20)
print("boxes:", [b.text() for b in message_boxes()])
print("question:", practice.item.id if practice.item is not None else None)
"""


def test_start_pressed_at_once_after_opening(tmp_path):
    import os
    import subprocess
    import sys

    env = os.environ | {"MEDEXAM_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-c", START_AT_ONCE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "KeyError" not in out.stdout + out.stderr
    assert "boxes: []" in out.stdout and "question: sample-" in out.stdout, out.stdout


def test_opens_on_the_imported_set_not_the_sample_written_after_it(tmp_path):
    import json

    from engine.french.dataset import ensure_sample, import_frenchmedmcqa
    from engine.importers import opening_dataset
    from engine.paths import samples_dir
    from engine.store.store import Store

    sample = json.loads((samples_dir() / "frenchmedmcqa_sample.json").read_text("utf-8"))
    own = [{k: v for k, v in q.items() if k != "sample"} for q in sample[:2]]
    path = tmp_path / "own.json"
    path.write_text(json.dumps(own), encoding="utf-8")
    store = Store(tmp_path / "medexam.db")
    import_frenchmedmcqa(store, path, name="own")  # imported from the command line first
    ensure_sample(store)  # the app's first start writes the sample afterwards
    assert opening_dataset(store.datasets("french"), "", "") == "own"


def test_finish_before_the_end_closes_the_session(qtbot, window):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    p.dataset.select("frenchmedmcqa-sample")
    p.part.retrieval.retriever.setCurrentIndex(p.part.retrieval.retriever.findData(""))
    p.part.limit.setValue(2)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    p.options.toggle("a")
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    assert p.next_button.isEnabled()
    click(qtbot, p.end_button)  # one question left: it asks first
    box = message_boxes()[0]
    assert box.text().startswith("1 question(s) not answered yet are not asked.")
    click_button(box, "Keep going")
    assert p.session is not None and not message_boxes()
    click(qtbot, p.end_button)
    click_button(message_boxes()[0], "End session")
    qtbot.waitUntil(lambda: "Finished" in p.part.total.text() and not p.busy, timeout=LONG)
    # the run is closed: no next question of it, nothing to check or finish again
    assert not (p.next_button.isVisible() and p.next_button.isEnabled())
    assert not p.submit_button.isEnabled() and not p.end_button.isEnabled()
    assert p.start_button.isEnabled()
    run = window.ctx.store.runs("french")[0]
    assert run["status"] == "cancelled" and run["n_done"] == 1
