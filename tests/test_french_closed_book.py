"""Passages when the student wants them: French practice in open book (passages with the
question), closed book (passages once answered, each option with the passage sentences
bearing on it) or none, in the app (the choice remembered) and in the terminal. No model:
a person answers."""

from __future__ import annotations

import french_fixtures
import pytest
from click.testing import CliRunner
from PySide6.QtCore import Qt

from engine.cli import cli
from engine.errors import UserError
from engine.french.book import option_notes
from engine.french.dataset import ensure_sample
from engine.french.index import build_index
from engine.french.person import FrenchSitting

indexes = french_fixtures.indexes
LONG = 300_000
NOTES = "What the passages say of each option"


def _notes_by_letter(view) -> dict[str, str]:
    return {o.letter: " ".join(n.text for n in o.notes) for o in view.notes}


def test_closed_book_session_shows_passages_and_notes_only_once_answered(store, indexes):
    dataset = ensure_sample(store)["dataset"]
    index = build_index(store, "french-sample", "bm25", name="s")
    session = FrenchSitting(store, dataset, 2, index, 2, book="closed")
    before = session.question(0)
    assert before.passages == [] and before.notes == []
    session.answer("A + D", 0)
    after = session.question(0)
    assert len(after.passages) == 2 and [o.letter for o in after.notes] == list("abcde")
    said = _notes_by_letter(after)
    assert "N-acétylcystéine" in said["b"] and "NAPQI" in said["c"]
    assert "principalement hépatique" in said["a"] and "alcoolisme" in said["e"].lower()
    b = after.notes[1].notes[0]  # the option's own words are located in the sentence
    assert {b.text[s:e] for s, e in b.spans} == {"antidote", "acétylcystéine"}
    # The answer was given without passages: none stored as seen, no recall counted.
    extra = store.answers(session.run_id)[0]["extra"]
    assert extra["passages"] == [] and "retrieved" not in extra["retrieval"]
    assert store.run(session.run_id)["settings"]["book"] == "closed"
    # Open book again: the next question comes with its passages, and no notes.
    session.set_book("open")
    assert len(session.question(1).passages) == 2 and session.question(1).notes == []
    session.set_book("none")
    assert session.question(1).passages == []
    with pytest.raises(UserError, match="unknown passage mode 'shut'"):
        session.set_book("shut")


def test_closed_book_notes_leave_out_the_question_words_and_say_when_nothing_bears():
    class P:
        def __init__(self, text: str) -> None:
            self.text = text

    passages = [P("Le paracétamol est hépatotoxique. Le rein élimine le paracétamol.")]
    notes = option_notes(
        passages,
        "Le paracétamol ?",
        [("a", "Paracétamol hépatotoxique"), ("b", "Le coeur"), ("c", "Paracétamol")],
    )
    assert [n.text for n in notes[0].notes] == ["Le paracétamol est hépatotoxique."]
    assert notes[1].notes == []
    assert len(notes[2].notes) == 2  # only question words: those are used


def _french_panel(qtbot, window):
    p = window.go("french").practice
    qtbot.waitUntil(lambda: p.dataset.combo.findData("frenchmedmcqa-sample") >= 0, timeout=LONG)
    qtbot.waitUntil(lambda: p.part.retrieval.corpus.findData("french-sample") >= 0)
    p.dataset.select("frenchmedmcqa-sample")
    r = p.part.retrieval
    r.corpus.setCurrentIndex(r.corpus.findData("french-sample"))
    r.retriever.setCurrentIndex(r.retriever.findData("bm25"))
    r.k.setValue(2)
    p.part.limit.setValue(2)
    p.part.in_order.setChecked(True)
    return p


@pytest.mark.gui
def test_closed_book_panel_shows_passages_with_option_notes_after_the_answer(qtbot, window):
    p = _french_panel(qtbot, window)
    p.part.book.setCurrentIndex(p.part.book.findData("closed"))
    qtbot.mouseClick(p.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    shown = p.part.passages.toPlainText()
    assert "Passage 1" not in shown and "paracétamol" not in shown and "once you answer" in shown
    for letter in ("a", "d"):
        p.options.toggle(letter)
    qtbot.mouseClick(p.submit_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.part.verdict.text() != "" and not p.busy)
    shown = p.part.passages.toPlainText()
    assert NOTES in shown and "Passage 2" in shown and "N-acétylcystéine" in shown
    assert shown.index(NOTES) < shown.index("B. L'antidote est la N-acétylcystéine")
    assert "#fde68a" in p.part.passages.toHtml()  # the option words highlighted

    # None: the passages go, the retrieval controls with them; open: back with the question.
    p.part.book.setCurrentIndex(p.part.book.findData("none"))
    qtbot.waitUntil(lambda: "No passages" in p.part.passages.toPlainText() and not p.busy)
    assert not p.part.retrieval.isEnabled()
    qtbot.mouseClick(p.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.item.position == 1 and not p.busy, timeout=LONG)
    p.part.book.setCurrentIndex(p.part.book.findData("open"))
    qtbot.waitUntil(lambda: "Passage 1" in p.part.passages.toPlainText() and not p.busy)
    assert NOTES not in p.part.passages.toPlainText()


@pytest.mark.gui
def test_closed_book_choice_survives_a_restart_of_the_panel(qtbot, window):
    from gui.widgets.practice import PracticePanel

    p = window.go("french").practice
    for book in ("closed", "none"):
        p.part.book.setCurrentIndex(p.part.book.findData(book))
        again = PracticePanel(window.ctx, "french")
        qtbot.addWidget(again)
        assert again.part.book.currentData() == book
        assert again.part.retrieval.isEnabled() == (book != "none")

    # A session started in "none" shows the passages once open book is chosen.
    p = _french_panel(qtbot, window)
    qtbot.mouseClick(p.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.item is not None and not p.busy, timeout=LONG)
    assert p.session.index is None and "No passages" in p.part.passages.toPlainText()
    p.part.book.setCurrentIndex(p.part.book.findData("open"))
    qtbot.waitUntil(
        lambda: "Passage 2" in p.part.passages.toPlainText() and not p.busy, timeout=LONG
    )


def _take(db_path: str, *args: str, reply: str = "A + D\n"):
    return CliRunner().invoke(
        cli,
        ["--db", db_path, "french", "take", "--dataset", "frenchmedmcqa-sample", "--limit",
         "1", "--in-order", *args],
        input=reply,
    )  # fmt: skip


def test_closed_book_in_the_terminal_prints_passages_after_the_answer(db_path, indexes):
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_path, "french", "sample"]).exit_code == 0
    built = runner.invoke(cli, ["--db", db_path, "french", "index", "--corpus", "french-sample",
                                "--name", "s"])  # fmt: skip
    assert built.exit_code == 0, built.output
    closed = _take(db_path, "--index", "s", "-k", "2", "--passages", "closed")
    out = closed.output
    assert closed.exit_code == 0, out
    assert out.index("vous avez choisi A + D") < out.index("Document (sample-p0")
    assert out.index("Document (sample-p0") < out.index("Ce que les passages disent")
    notes = out[out.index("Ce que les passages disent") :]
    assert "B. L'antidote est la N-acétylcystéine" in notes and "(sample-p02)" in notes

    opened = _take(db_path, "--index", "s")  # --index alone: open book, as before
    assert opened.output.index("Document (") < opened.output.index("vous avez choisi")
    assert "Ce que les passages" not in opened.output
    none = _take(db_path, "--index", "s", "--passages", "none")
    assert none.exit_code == 0 and "Document (" not in none.output
    lacking = _take(db_path, "--passages", "closed")
    assert lacking.exit_code == 2 and "--passages closed needs --index NAME" in lacking.output
