"""French QA without surprises: a retriever whose index is not built shows the build's
progress (passages done of the total) with a Cancel that really stops it, in practice and
before a model run; passages are named by a readable source; the screen opens on the last
imported data set; a person's answers go to the review profile chosen. Real MiniLM, real
sample data."""

from __future__ import annotations

import hashlib
import re

import french_fixtures
import pytest
from PySide6.QtCore import Qt

from engine.french.corpus import fingerprint
from engine.french.dataset import import_frenchmedmcqa
from engine.review.profiles import add_profile
from engine.text.embedder import BATCH_SIZE
from gui.models import set_setting
from gui.testing import message_boxes, open_window

indexes = french_fixtures.indexes
pytestmark = pytest.mark.gui
LONG = 300_000
N = 16 * BATCH_SIZE  # passages of the corpus whose dense index is cancelled
HASH = re.compile(r"[0-9a-f]{64}")


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def choose(box, data):
    box.setCurrentIndex(box.findData(data))


@pytest.fixture
def practice(qtbot, indexes, window):
    """The practice tab once the sample is in, with corpus "big": ``N`` passages made from
    a data set's questions (their sources ``train#<sha256>``)."""
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    rows = [
        {
            "text": f"Passage {i} : le paracétamol à forte dose est toxique pour le foie.",
            "source": "train#" + hashlib.sha256(str(i).encode()).hexdigest(),
            "offset": 0,
        }
        for i in range(N)
    ]
    window.ctx.store.add_corpus("big", rows, fingerprint=fingerprint(rows))
    window.ctx.notify_data()
    return p


def test_a_dense_index_builds_with_progress_and_cancels(qtbot, window, practice, indexes):
    p, r = practice, practice.part.retrieval
    store = window.ctx.store
    add_profile(store, "alice")
    set_setting("review/profile", "alice")
    choose(r.retriever, "bm25")
    choose(r.corpus, "big")
    qtbot.waitUntil(lambda: not p.busy, timeout=LONG)

    choose(r.retriever, "dense")
    row = p.part.build_row
    qtbot.waitUntil(lambda: "embedding passages" in row.label.text(), timeout=LONG)
    assert row.isVisible() and row.bar.maximum() == N and 0 < row.bar.value() < N
    assert row.label.text() == "Dense index: embedding passages"
    assert not p.start_button.isEnabled() and not r.isEnabled()
    click(qtbot, row.stop)
    qtbot.waitUntil(lambda: not p.busy, timeout=LONG)
    assert r.retriever.currentData() == "bm25" and r.isEnabled()  # back to the choice before
    assert not row.isVisible() and not message_boxes()
    assert window.statusBar().currentMessage() == (
        "Index build cancelled; nothing was kept. Passages: BM25 (words)."
    )
    assert not (indexes / "big-dense").exists()

    # BM25 over the same corpus: the passages are named by their question, not a hash.
    p.dataset.select("frenchmedmcqa-sample")
    p.part.limit.setValue(1)
    p.part.in_order.setChecked(True)  # the first question, which has passages
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    shown = p.part.passages.toPlainText()
    assert "train: « Passage" in shown
    assert not HASH.search(p.part.passages.toHtml())
    run = store.runs("french")[0]
    assert run["settings"]["profile"] == "alice"  # the profile of the Review screen

    # Dense over the small sample corpus, chosen mid-session: built, then retrieved again.
    choose(r.corpus, "french-sample")
    choose(r.retriever, "dense")  # while the corpus change runs: taken up after it
    qtbot.waitUntil(lambda: not p.busy and (indexes / "french-sample-dense").is_dir(), timeout=LONG)
    qtbot.waitUntil(lambda: "Passage 1" in p.part.passages.toPlainText(), timeout=LONG)
    assert p.session.index.retriever == "dense" and not message_boxes()


def test_a_model_run_cancels_its_index_build(qtbot, window, practice, indexes):
    m = window.go("french").runs
    m.dataset.select("frenchmedmcqa-sample")
    choose(m.retrieval.corpus, "big")
    choose(m.retrieval.retriever, "dense")
    m.limit.setValue(1)
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: "embedding passages" in m.progress.label.text(), timeout=LONG)
    assert m.progress.bar.maximum() == N
    click(qtbot, m.progress.stop)
    assert m.progress.label.text() == "Cancelling the index build…"
    qtbot.waitUntil(lambda: m.job is None, timeout=LONG)
    assert m.progress.label.text() == "Index build cancelled; no run started."
    assert not message_boxes() and m.run_button.isEnabled()
    assert window.ctx.store.runs("french") == []
    assert not (indexes / "big-dense").exists()


def test_opens_on_the_last_imported_data_set(qtbot, window, tmp_path):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    questions = french_fixtures.sample_questions()[:3]
    path = french_fixtures.write_questions(tmp_path / "more.json", questions)
    import_frenchmedmcqa(window.ctx.store, path, "more-questions")
    window.ctx.notify_data()
    assert p.dataset.name == "more-questions"
    window.close()

    again = open_window(tmp_path)
    qtbot.addWidget(again)
    again.show()
    q = again.go("french").practice
    assert q.dataset.name == "more-questions"
    # The person picks the sample: it is the one the screen opens on next time.
    i = q.dataset.combo.findData("frenchmedmcqa-sample")
    q.dataset.combo.setCurrentIndex(i)
    q.dataset.combo.activated.emit(i)
    again.close()

    third = open_window(tmp_path)
    qtbot.addWidget(third)
    third.show()
    assert third.go("french").practice.dataset.name == "frenchmedmcqa-sample"
    third.close()
