"""BM25 on bm25s gives the same top-10 as rank-bm25 (BM25Okapi, same k1, b, IDF, analyser)."""

from __future__ import annotations

import numpy as np
import pytest
from french_fixtures import sample_passages, sample_questions

from engine.french.analyser import analyse
from engine.french.bm25 import BM25, reference_bm25, top_k
from engine.french.dataset import retrieval_query


def reference_top10(ref, terms: list[str]) -> list[int]:
    return top_k(np.asarray(ref.get_scores(terms)), 10).tolist()


@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_top10_identical_on_the_sample_corpus(method):
    corpus = [analyse(p["text"]) for p in sample_passages()]
    ours = BM25.build(corpus, k1=1.2, b=0.75, method=method)
    ref = reference_bm25(corpus, k1=1.2, b=0.75, method=method)
    queries = [retrieval_query(q) for q in sample_questions()]
    queries += ["antidote", "vitamine K", "hépatite virale B vaccin", "insuline pancréas"]
    for query in queries:
        terms = analyse(query)
        ids, scores = ours.search(terms, 10)
        assert ids == reference_top10(ref, terms), query
        # Same scores up to rank-bm25's constant (k1 + 1) factor.
        ref_scores = np.asarray(ref.get_scores(terms))[ids]
        np.testing.assert_allclose(np.array(scores) * (1.2 + 1), ref_scores, rtol=1e-5)


@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_top10_identical_on_a_random_corpus(method):
    rng = np.random.default_rng(7)
    vocab = [f"mot{i}" for i in range(2000)]
    weights = 1 / np.arange(1, 2001) ** 1.1
    p = weights / weights.sum()
    corpus = [list(rng.choice(vocab, size=rng.integers(3, 60), p=p)) for _ in range(2000)]
    ours = BM25.build(corpus, method=method)
    ref = reference_bm25(corpus, method=method)
    for _ in range(150):
        terms = list(rng.choice(vocab, size=rng.integers(1, 15), p=p))
        assert ours.search(terms, 10)[0] == reference_top10(ref, terms)


def test_only_passages_sharing_a_term_are_returned():
    index = BM25.build([["foie"], ["rein"], ["foie", "rein"], ["coeur"]])
    ids, scores = index.search(["foie"], 10)
    assert ids == [0, 2] and all(s > 0 for s in scores)
    assert index.search(["inconnu"], 10) == ([], [])
    assert index.search([], 10) == ([], [])


def test_ties_go_to_the_earlier_passage():
    index = BM25.build([["a", "b"], ["c", "d"], ["a", "b"], ["a", "b"]])
    assert index.search(["a"], 2)[0] == [0, 2]


def test_save_and_load_give_the_same_results(tmp_path):
    corpus = [analyse(p["text"]) for p in sample_passages()]
    index = BM25.build(corpus, method="robertson", k1=1.3, b=0.6)
    index.save(tmp_path / "bm25")
    loaded = BM25.load(tmp_path / "bm25")
    assert loaded.params == index.params
    for q in sample_questions():
        terms = analyse(retrieval_query(q))
        assert loaded.search(terms, 10) == index.search(terms, 10)


def test_unknown_method_and_empty_corpus():
    with pytest.raises(ValueError, match="unknown BM25 method"):
        BM25.build([["a"]], method="atire")
    with pytest.raises(ValueError, match="empty corpus"):
        BM25.build([])
