"""BM25 over French passages, built with bm25s (numpy + scipy sparse).

bm25s computes, at build time, the BM25 weight of every (passage, term) pair into a sparse CSC
matrix; a query then adds up the columns of its terms. :class:`BM25` keeps that matrix, scores
a query with one vectorised scatter-add (``np.add.at``) per distinct query term and selects the
top hits with a partition. Query terms are counted as often as they occur, as in rank-bm25.

Two IDF variants are offered (bm25s ``method``):

* ``"lucene"`` (default): ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, always positive, so
  even tiny corpora rank sensibly;
* ``"robertson"``: ``idf = log((N - df + 0.5) / (df + 0.5))`` floored at 0, which is rank-bm25's
  ``BM25Okapi(epsilon=0)``.

:func:`reference_bm25` builds the matching rank-bm25 model (a slow pure-Python
implementation) so tests and the benchmark can check that the top hits are identical. bm25s
leaves out rank-bm25's constant ``k1 + 1`` factor, which changes no ranking.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import bm25s
import numpy as np

if TYPE_CHECKING:
    from rank_bm25 import BM25Okapi

METHODS = ("lucene", "robertson")
K1 = 1.5
B = 0.75


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best positive scores, best first; ties go to the lower index."""
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > k:
        values = scores[candidates]
        kth = np.partition(values, len(values) - k)[len(values) - k]
        above = candidates[values > kth]
        tied = candidates[values == kth][: k - len(above)]
        candidates = np.concatenate([above, tied])
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order]


class BM25:
    """A BM25 index over pre-analysed passages (lists of terms).

    >>> index = BM25.build([["foie", "hepat"], ["rein"], ["foie"]])
    >>> index.search(["foie"], 2)
    ([2, 0], [0.21..., 0.15...])
    """

    def __init__(self, retriever: bm25s.BM25) -> None:
        self.retriever = retriever
        scores = retriever.scores
        self.data: np.ndarray = scores["data"]
        self.indices: np.ndarray = scores["indices"]
        self.indptr: np.ndarray = scores["indptr"]
        self.n_docs: int = int(scores["num_docs"])
        self.vocab: dict[str, int] = retriever.vocab_dict

    @classmethod
    def build(
        cls,
        corpus_terms: list[list[str]],
        k1: float = K1,
        b: float = B,
        method: str = "lucene",
        dtype: str = "float32",
    ) -> BM25:
        """Index ``corpus_terms`` (one list of analysed terms per passage)."""
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; choose from {', '.join(METHODS)}")
        if not corpus_terms:
            raise ValueError("cannot index an empty corpus")
        retriever = bm25s.BM25(k1=k1, b=b, method=method, dtype=dtype)
        retriever.index(corpus_terms, show_progress=False)
        return cls(retriever)

    @property
    def params(self) -> dict[str, float | str]:
        r = self.retriever
        return {"k1": r.k1, "b": r.b, "method": r.method, "dtype": str(r.dtype)}

    def term_ids(self, terms: list[str]) -> list[int]:
        vocab = self.vocab
        return [vocab[t] for t in terms if t and t in vocab]

    def scores(self, terms: list[str]) -> np.ndarray:
        """The BM25 score of every passage for the analysed query ``terms``.

        A term repeated in the query counts as often as it occurs (as in rank-bm25): its
        column is added once, multiplied by its count.
        """
        out = np.zeros(self.n_docs, dtype=self.data.dtype)
        counts: dict[int, int] = {}
        for t in self.term_ids(terms):
            counts[t] = counts.get(t, 0) + 1
        indptr, indices, data = self.indptr, self.indices, self.data
        for t, count in counts.items():
            start, end = indptr[t], indptr[t + 1]
            weights = data[start:end] if count == 1 else data[start:end] * count
            np.add.at(out, indices[start:end], weights)
        return out

    def search(self, terms: list[str], k: int = 10) -> tuple[list[int], list[float]]:
        """Positions and scores of the ``k`` best passages with a positive score."""
        scores = self.scores(terms)
        best = top_k(scores, k)
        return best.tolist(), scores[best].astype(float).tolist()

    def save(self, directory: str | Path) -> None:
        """Write the index into ``directory`` (bm25s's own files)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(directory))
        (directory / "medexam_bm25.json").write_text(json.dumps(self.params), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, mmap: bool = False) -> BM25:
        """Read an index written by :meth:`save`."""
        return cls(bm25s.BM25.load(str(directory), mmap=mmap, load_corpus=False))


def reference_bm25(
    corpus_terms: list[list[str]], k1: float = K1, b: float = B, method: str = "lucene"
) -> BM25Okapi:
    """rank-bm25's ``BM25Okapi`` with the IDF of ``method``, for checking :class:`BM25`.

    ``"robertson"`` is stock ``BM25Okapi(epsilon=0)``; ``"lucene"`` replaces only its IDF.
    """
    from rank_bm25 import BM25Okapi

    if method == "robertson":
        return BM25Okapi(corpus_terms, k1=k1, b=b, epsilon=0.0)
    if method != "lucene":
        raise ValueError(f"unknown BM25 method {method!r}")

    class LuceneIdfOkapi(BM25Okapi):
        def _calc_idf(self, nd: dict[str, int]) -> None:
            n = self.corpus_size
            self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in nd.items()}
            self.average_idf = sum(self.idf.values()) / max(len(self.idf), 1)

    return LuceneIdfOkapi(corpus_terms, k1=k1, b=b)
