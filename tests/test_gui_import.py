"""Importing from the app: exam questions from a CSV file, a bad file refused with the
record and the reason (nothing stored), and a French corpus from a folder of text files."""

from __future__ import annotations

import pytest

from gui.widgets.qt_import import ImportDialog

pytestmark = pytest.mark.gui


def dialog(qtbot, window, kind, fmt):
    d = ImportDialog(window.ctx, kind, window)
    qtbot.addWidget(d)
    d.format.setCurrentIndex(d.format.findData(fmt))
    d.show()
    return d


def test_import_questions_from_csv(qtbot, window, tmp_path):
    exam = window.go("exam")
    path = tmp_path / "my-questions.csv"
    path.write_text(
        "id,question,A,B,C,answer,explanation\n"
        "1,Which drug is an antidote to paracetamol?,Naloxone,N-acetylcysteine,Atropine,B,NAC\n"
        "2,Which vitamin does warfarin antagonise?,K,C,D,A,\n",
        encoding="utf-8",
    )
    d = dialog(qtbot, window, "exam", "mcq")
    d.path.setText(str(path))
    assert d.name.text() == "my-questions"
    d.import_button.click()
    qtbot.waitUntil(lambda: d.result() != 0)
    assert window.ctx.store.dataset("my-questions")["n_items"] == 2
    # every data set picker of the app knows it now
    assert exam.practice.dataset.combo.findData("my-questions") >= 0
    assert exam.evaluation.dataset.combo.findData("my-questions") >= 0


def test_a_bad_file_is_refused_with_the_reason(qtbot, window, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[{"id": 1, "question": "Q?", "options": ["a", "b"], "answer": "Z"}]')
    d = dialog(qtbot, window, "exam", "mcq")
    d.path.setText(str(path))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.message.text() != "" and d.job is None)
    assert "record 1" in d.message.text() and "answer" in d.message.text()
    assert d.isVisible()
    assert not window.ctx.store.has_dataset("bad")

    # A file that is not there.
    d.path.setText(str(tmp_path / "missing.json"))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.job is None and "missing.json" in d.message.text())


def test_import_a_corpus_from_a_folder(qtbot, window, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "foie.txt").write_text(
        "Le paracétamol est hépatotoxique à forte dose. " * 8, encoding="utf-8"
    )
    (folder / "rein.md").write_text(
        "Les anti-inflammatoires non stéroïdiens sont néphrotoxiques. " * 8, encoding="utf-8"
    )
    d = dialog(qtbot, window, "corpus", "folder")
    d.path.setText(str(folder))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.result() != 0, timeout=60_000)
    corpus = window.ctx.store.corpus("docs")
    assert corpus["n_passages"] >= 2
    assert "docs" in d.report
