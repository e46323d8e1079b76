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

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "analyser": ["analyse", "match_spans"],
        "corpus": ["CorpusError", "add_corpus_from_dataset", "add_corpus_from_path"],
        "dataset": ["DatasetError", "ensure_sample", "import_frenchmedmcqa"],
        "index": ["Hit", "Index", "build_index", "list_indexes", "load_index"],
        "reader": ["Reader", "parse_letters"],
        "runner": ["run_french", "french_sections"],
        "scoring": ["hamming", "score_files", "summarise"],
        "person": ["FrenchSitting"],
    },
)
