"""Indexes over stored corpora: BM25, dense (the embedded MiniLM) and hybrid; persistence."""

from __future__ import annotations

import json

import french_fixtures
import numpy as np
import pytest
from french_fixtures import sample_passages

from engine.french.corpus import add_corpus_from_path
from engine.french.dataset import SAMPLE_CORPUS, SAMPLE_DATASET, retrieval_query
from engine.french.dense import default_model_dir
from engine.french.index import (
    IndexError_,
    build_index,
    list_indexes,
    load_index,
    reciprocal_rank_fusion,
)
from engine.text.embedder import embed

indexes = french_fixtures.indexes
sample_store = french_fixtures.sample_store


def relevant() -> dict[str, set[str]]:
    """Which sample questions each sample passage answers."""
    return {p["id"]: set(p["about"]) for p in sample_passages()}


def hits_at(index, store, k: int) -> int:
    about = relevant()
    return sum(
        any(q["id"] in about[h.source] for h in index.search(retrieval_query(q), k))
        for q in store.items(SAMPLE_DATASET)
    )


def test_bm25_index_finds_the_passage_that_answers(sample_store, indexes):
    index = build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s-bm25")
    assert index.rebuilt and len(index) == sample_store.corpus(SAMPLE_CORPUS)["n_passages"]
    assert (indexes / "s-bm25" / "manifest.json").is_file()
    assert hits_at(index, sample_store, 1) >= 13 and hits_at(index, sample_store, 3) == 15
    hit = index.search("antidote intoxication paracétamol", 1)[0]
    assert hit.source == "sample-p02" and "N-acétylcystéine" in hit.text
    assert hit.text == index.passages[hit.passage_id]["text"]


def test_embedded_minilm_embeddings_are_normalised():
    assert (default_model_dir() / "config.json").is_file()
    vectors = embed(["Le foie", "Le rein", "Le foie"])
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[2] == pytest.approx(1.0, abs=1e-5)


def test_dense_and_hybrid_indexes(sample_store, indexes):
    dense = build_index(sample_store, SAMPLE_CORPUS, "dense", name="s-dense")
    embeddings = np.load(indexes / "s-dense" / "dense" / "embeddings.npy")
    assert embeddings.shape == (len(dense), 384)
    assert hits_at(dense, sample_store, 3) >= 13
    cosines = [h.score for h in dense.search("vaccin contre l'hépatite B", 5)]
    assert cosines == sorted(cosines, reverse=True) and all(-1 <= c <= 1 for c in cosines)

    hybrid = build_index(sample_store, SAMPLE_CORPUS, "hybrid", name="s-hybrid")
    assert hits_at(hybrid, sample_store, 3) == 15
    loaded = load_index("s-hybrid")
    query = "surveillance de l'héparine et thrombopénie"
    assert [h.passage_id for h in loaded.search(query, 5)] == [
        h.passage_id for h in hybrid.search(query, 5)
    ]


def test_reciprocal_rank_fusion():
    ids, scores = reciprocal_rank_fusion([[1, 2, 3], [3, 2]], 3, rrf_k=60)
    assert ids == [3, 2, 1]
    assert scores == pytest.approx([1 / 63 + 1 / 61, 1 / 62 + 1 / 62, 1 / 61])
    assert reciprocal_rank_fusion([[5, 4], [4, 5]], 2)[0] == [4, 5]  # a tie: lower id first


def test_rebuilt_only_when_the_corpus_changes(sample_store, indexes, tmp_path):
    first = build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s")
    built = json.loads((indexes / "s" / "manifest.json").read_text())["built"]
    again = build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s")
    assert first.rebuilt and not again.rebuilt
    assert json.loads((indexes / "s" / "manifest.json").read_text())["built"] == built
    assert again.is_fresh(sample_store)

    other_settings = build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s2", method="robertson")
    assert other_settings.rebuilt
    assert build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s2").rebuilt  # settings changed

    doc = tmp_path / "new.jsonl"
    doc.write_text(
        json.dumps(
            {
                "id": "n1",
                "text": "La ciclosporine est un immunosuppresseur "
                "inhibiteur de la calcineurine ; sa néphrotoxicité impose une surveillance "
                "de la fonction rénale et des concentrations sanguines.",
            }
        )
    )
    add_corpus_from_path(sample_store, doc, SAMPLE_CORPUS, replace=True)
    assert not load_index("s").is_fresh(sample_store)
    rebuilt = build_index(sample_store, SAMPLE_CORPUS, "bm25", name="s")
    assert rebuilt.rebuilt and len(rebuilt) == 1
    assert rebuilt.search("ciclosporine", 1)[0].source == "n1"
    assert not any(p.name.startswith(".") for p in indexes.iterdir())  # no leftovers


def test_list_and_errors(sample_store, indexes):
    build_index(sample_store, SAMPLE_CORPUS, "bm25")
    assert [m["name"] for m in list_indexes()] == [f"{SAMPLE_CORPUS}-bm25"]
    with pytest.raises(IndexError_, match="no index named 'nope'"):
        load_index("nope")
    with pytest.raises(IndexError_, match="unknown retriever"):
        build_index(sample_store, SAMPLE_CORPUS, "sparse")
    with pytest.raises(IndexError_, match="invalid index name"):
        build_index(sample_store, SAMPLE_CORPUS, "bm25", name="../x")
