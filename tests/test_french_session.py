"""A student's practice session: questions, highlighted passages, multi-select answers."""

from __future__ import annotations

import french_fixtures
import pytest

from engine.french.dataset import SAMPLE_CORPUS, SAMPLE_DATASET
from engine.french.index import build_index
from engine.french.person import FrenchSitting
from engine.store.store import StoreError

indexes = french_fixtures.indexes
sample_store = french_fixtures.sample_store


def test_a_session_with_passages(sample_store, indexes):
    index = build_index(sample_store, SAMPLE_CORPUS, "bm25")
    session = FrenchSitting(sample_store, SAMPLE_DATASET, limit=3, index=index, k=2)
    assert len(session) == 3 and not session.done

    view = session.question()
    assert (view.position, view.total, view.id) == (0, 3, "sample-01")
    assert [letter for letter, _ in view.options] == list("abcde")
    assert len(view.passages) == 2
    top = view.passages[0]
    assert top.source == "sample-p02"  # the antidote passage
    marked_words = {top.text[s:e].lower() for s, e in top.spans}
    assert {"paracétamol", "antidote", "intoxication", "acétylcystéine"} <= marked_words
    assert "[paracétamol]" in top.marked("[", "]")

    first = session.answer(["a", "b"])  # gold: a, b, c
    assert first.hamming == pytest.approx(2 / 3, abs=1e-4) and not first.exact
    assert first.missed == ["c"] and first.wrong == []
    second = session.answer("B")  # gold: b
    assert second.exact and second.hamming == 1.0
    assert session.position == 2
    third = session.answer("A + D + E")  # gold: a, b, d
    assert third.hamming == pytest.approx(2 / 4) and third.wrong == ["e"]
    assert session.done

    summary = session.finish()
    assert summary["n"] == 3 and summary["emr"] == pytest.approx(33.33)
    assert summary["hamming"] == pytest.approx(round(100 * (2 / 3 + 1 + 0.5) / 3, 2), abs=0.01)
    assert summary["by_n_answers"]["1"] == {"n": 1, "hamming": 100.0, "emr": 100.0}

    run = sample_store.run(session.run_id)
    assert (run["runner"], run["model"], run["activity"], run["status"]) == (
        "person",
        "person",
        "french",
        "finished",
    )
    answers = sample_store.answers(session.run_id)
    assert [a["chosen"] for a in answers] == ["A + B", "B", "A + D + E"]
    assert answers[0]["extra"]["passages"][0]["source"] == "sample-p02"


def test_any_order_each_once_and_resume(sample_store):
    session = FrenchSitting(sample_store, SAMPLE_DATASET, limit=3)
    assert session.question().passages == []
    session.answer([], position=1)  # an empty answer scores 0
    assert session.feedback(1).hamming == 0 and session.position == 2  # the next unanswered
    with pytest.raises(StoreError, match="already answered"):
        session.answer("A", position=1)
    with pytest.raises(ValueError, match="not an option letter"):
        session.answer(["z"])
    partial = session.finish()
    assert partial["answered"] == 1 and sample_store.run(session.run_id)["status"] == "cancelled"

    again = FrenchSitting.resume(sample_store, session.run_id)
    assert again.position == 0 and again.question(1).answered
    again.answer("abc")
    again.answer("b")
    assert again.done and again.finish()["n"] == 3
    assert sample_store.run(session.run_id)["status"] == "finished"


def test_unknown_dataset(store):
    with pytest.raises(StoreError):
        FrenchSitting(store, "nope")
