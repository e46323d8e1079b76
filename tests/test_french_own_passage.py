"""Evaluation integrity: a question never reads the passage made from it (same data set and
id, or near-identical question text) unless the run is an oracle run, labelled as such."""

from __future__ import annotations

import french_fixtures
import pytest

from engine.french.context import reader_passages
from engine.french.corpus import add_corpus_from_dataset, derived_from_question
from engine.french.dataset import ensure_sample
from engine.french.index import build_index
from engine.french.runner import run_french

indexes = french_fixtures.indexes


def test_near_identical_question_text() -> None:
    question = "Parmi les propositions suivantes, laquelle est exacte concernant la warfarine ?"
    passage = "Parmi les propositions suivantes, laquelle est exacte concernant la warfarine?\n"
    assert derived_from_question(passage + "Réponse exacte : antivitamine K", question)
    assert derived_from_question(
        "PARMI les propositions suivantes laquelle est exacte "
        "concernant la warfarin ? Réponse exacte : AVK",
        question,
    )
    assert not derived_from_question("La warfarine est une antivitamine K.", question)
    assert not derived_from_question("Quel est le pH ?", "Quel est le pH ?")  # too short to tell


def test_the_reader_never_sees_its_own_passage(store, indexes) -> None:
    dataset = ensure_sample(store)["dataset"]
    add_corpus_from_dataset(store, dataset, "own")
    index = build_index(store, "own", "bm25", name="own")
    for item in store.items(dataset, 3):
        given, top, excluded = reader_passages(index, dataset, item, 2)
        own = f"{dataset}#{item['id']}"
        assert excluded and top[0].source == own  # retrieval finds it first…
        assert len(given) == 2 and own not in {h.source for h in given}  # …the reader never
        oracle, _top, none = reader_passages(index, dataset, item, 2, oracle=True)
        assert oracle[0].source == own and not none


def test_a_copy_of_the_questions_is_recognised_by_its_text(store, indexes) -> None:
    dataset = ensure_sample(store)["dataset"]
    store.add_dataset("copy", "french", store.items(dataset))
    add_corpus_from_dataset(store, "copy", "copied")
    index = build_index(store, "copied", "bm25", name="copied")
    item = store.items(dataset, 1)[0]
    given, top, excluded = reader_passages(index, dataset, item, 1)
    assert top[0].source == f"copy#{item['id']}" and excluded  # another data set, same text
    assert given[0].source != f"copy#{item['id']}"


@pytest.mark.slow
def test_runs_count_and_label(store, indexes, chat_model) -> None:
    dataset = ensure_sample(store)["dataset"]
    add_corpus_from_dataset(store, dataset, "own")
    build_index(store, "own", "bm25", name="own")
    summary = run_french(store, dataset, "smollm2", index="own", k=1, method="logprob", limit=1)
    assert summary["status"] == "finished" and summary["own_passages_excluded"] == 1
    assert summary["oracle"] is False and summary["recall_at_k"]["recall"] == 100.0
    (answer,) = store.answers(summary["run_id"])
    assert answer["extra"]["passages"][0]["source"] != f"{dataset}#{answer['item_key']}"
    oracle = run_french(
        store, dataset, "smollm2", index="own", k=1, method="logprob", limit=1, oracle=True
    )
    assert oracle["oracle"] is True and oracle["own_passages_excluded"] == 0
    assert store.run(oracle["run_id"])["model"] == "smollm2 (oracle)"
    (answer,) = store.answers(oracle["run_id"])
    assert answer["extra"]["passages"][0]["source"] == f"{dataset}#{answer['item_key']}"
