"""French pharmacy exam questions (FrenchMedMCQA) answered with retrieved passages.

A retriever–reader pipeline: passages are retrieved for "question + its five options"
(BM25 with a French analyser, dense MiniLM embeddings, or both fused), the reader (a local
model) answers with the letters of the exact options, and answers are scored with the Hamming
score and the exact match ratio.

>>> from engine.french import build_index, load_index, ensure_sample       # doctest: +SKIP
>>> ensure_sample(store)                                                    # doctest: +SKIP
>>> index = build_index(store, "french-sample", "bm25", name="demo")        # doctest: +SKIP
>>> index.search("antidote du paracétamol", k=3)                            # doctest: +SKIP
"""

from engine.french.analyser import analyse, match_spans
from engine.french.corpus import CorpusError, add_corpus_from_dataset, add_corpus_from_path
from engine.french.dataset import DatasetError, ensure_sample, import_frenchmedmcqa
from engine.french.index import Hit, Index, build_index, list_indexes, load_index
from engine.french.reader import Reader, parse_letters
from engine.french.runner import run_french, run_summary
from engine.french.scoring import hamming, score_files, summarise
from engine.french.session import FrenchSession

__all__ = [
    "CorpusError",
    "DatasetError",
    "FrenchSession",
    "Hit",
    "Index",
    "Reader",
    "add_corpus_from_dataset",
    "add_corpus_from_path",
    "analyse",
    "build_index",
    "ensure_sample",
    "hamming",
    "import_frenchmedmcqa",
    "list_indexes",
    "load_index",
    "match_spans",
    "parse_letters",
    "run_french",
    "run_summary",
    "score_files",
    "summarise",
]
