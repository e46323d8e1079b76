"""The French practice leak: with a corpus made from the questions themselves, a person's
session once showed a question's own passage ("… Réponse exacte : …") as Passage 1. A person
answers where a model would, so both see the same passages for the same item, never the
question's own; and the person's run is scored again to its own summary."""

from __future__ import annotations

import french_fixtures

from engine.core.scoring import rescore
from engine.french.corpus import add_corpus_from_dataset, derived_from_question
from engine.french.dataset import ensure_sample
from engine.french.index import build_index
from engine.french.person import FrenchSitting
from engine.french.runner import run_french
from engine.models.scripted import ScriptedModel

indexes = french_fixtures.indexes


def test_a_person_and_a_model_see_the_same_passages_never_the_questions_own(
    store, indexes, scripted_pool
) -> None:
    dataset = ensure_sample(store)["dataset"]
    add_corpus_from_dataset(store, dataset, "train-q")  # the README's recipe
    index = build_index(store, "train-q", "bm25", name="train-q-bm25")
    pool = scripted_pool(ScriptedModel("reader", replies="A"))
    model = run_french(
        store, dataset, "reader", index=index.name, k=2, limit=3, method="generate", pool=pool
    )
    given = {
        a["item_key"]: [p["source"] for p in a["extra"]["passages"]]
        for a in store.answers(model["run_id"])
    }
    session = FrenchSitting(store, dataset, limit=3, index=index, k=2)
    while not session.done:
        view = session.question()
        own = f"{dataset}#{view.id}"
        assert [p.source for p in view.passages] == given[view.id]  # what the model was given
        assert len(view.passages) == 2 and own not in given[view.id]
        assert not any(derived_from_question(p.text, view.question) for p in view.passages)
        session.answer("A")
    summary = session.finish()
    assert summary["own_passages_excluded"] == model["own_passages_excluded"] == 3
    person = store.answers(session.run_id)
    assert {a["item_key"]: [p["source"] for p in a["extra"]["passages"]] for a in person} == given
    assert [a["scores"]["hamming"] for a in person] == [
        a["scores"]["hamming"] for a in store.answers(model["run_id"])
    ]


def test_a_persons_french_run_is_rescored_to_its_own_summary(store, indexes) -> None:
    dataset = ensure_sample(store)["dataset"]
    add_corpus_from_dataset(store, dataset, "own")
    index = build_index(store, "own", "bm25", name="own")
    session = FrenchSitting(store, dataset, limit=3, index=index, k=1)
    for reply in ("A + B", "b", ""):
        session.question()
        session.answer(reply)
    summary = session.finish()
    assert summary["answered"] == 3 and summary["recall_at_k"]["recall"] == 100.0
    again = rescore(store, session.run_id, force=True)
    assert again.summary == summary
    assert again.scored == {"french.options": 3, "french.retrieval": 3}
