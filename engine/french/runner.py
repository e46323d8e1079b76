"""Model runs over a FrenchMedMCQA data set: retrieve → prompt → answer → parse → score → store.

Each answer is stored as soon as it is produced (``chosen`` and ``gold`` as "A + D"; the
per-question Hamming score, exact match and retrieval hit in ``scores``; the passages used in
``extra``), so an interrupted run can be resumed with ``resume=RUN_ID``. The summary holds the
Hamming score, the EMR, both by number of correct answers, and retrieval recall@k over the
questions whose own passage is in the corpus (corpora built ``--from-dataset``).

Evaluation integrity: a passage made from a question (its source names the question's data
set and id, or it holds near-identical question text) is never given to the reader for that
same question; the next best passage takes its place, and the summary counts the questions
that had their own passage excluded (``own_passages_excluded``). Retrieval recall of the own
passage is still measured on the unfiltered ranking, as a diagnostic of the retriever. The
``oracle`` setting gives the own passage on purpose: the run is then labelled "oracle" (its
model column, so in every list, report and export, and ``oracle`` in the summary).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from engine.activities import FRENCH
from engine.french.corpus import derived_from_question
from engine.french.dataset import gold, question_source, retrieval_query
from engine.french.reader import METHODS, THRESHOLD, Reader, format_letters
from engine.french.scoring import exact, hamming, summarise
from engine.progress import Cancel, ProgressCallback
from engine.runs import Job
from engine.store import Store

if TYPE_CHECKING:
    from engine.french.index import Index
    from engine.models.pool import ModelPool


def run_summary(store: Store, run_id: int) -> dict[str, Any]:
    """Scores of everything a run answered so far (also what :func:`run_french` returns)."""
    run = store.run(run_id)
    pairs, hits, excluded = [], [], 0
    for a in store.answers(run_id):
        extra = a["extra"] or {}
        pairs.append((extra.get("pred", []), extra.get("gold", [])))
        excluded += bool((a["scores"] or {}).get("own_excluded"))
        recall = (a["scores"] or {}).get("retrieved")
        if recall is not None:
            hits.append(bool(recall))
    out: dict[str, Any] = {"run_id": run_id, "dataset": run["dataset"], "model": run["model"]}
    out.update(summarise(pairs))
    # Hamming and EMR are over the answered questions; accuracy (exact matches) is over all.
    total = max(int(run.get("n_total") or 0), len(pairs))
    exact_matches = sum(1 for p, g in pairs if set(p) == set(g))
    out.update(
        n=total,
        answered=len(pairs),
        accuracy=round(100 * exact_matches / total, 2) if total else 0.0,
    )
    settings = run["settings"] or {}
    k = settings.get("k")
    out["recall_at_k"] = (
        {"k": k, "n": len(hits), "recall": round(100 * sum(hits) / len(hits), 2)} if hits else None
    )
    out["own_passages_excluded"] = excluded
    out["oracle"] = bool(settings.get("oracle"))
    out["settings"] = settings
    return out


DEFAULTS: dict[str, Any] = {
    "model": None,
    "method": "generate",
    "index": None,
    "k": 1,
    "threshold": THRESHOLD,
    "limit": None,
    "oracle": False,
}

#: Label added to the model of an oracle run (it sees each question's own passage).
ORACLE_LABEL = " (oracle)"


def french_settings(given: dict[str, Any]) -> dict[str, Any]:
    """A French run's settings with their defaults, checked; ``k`` is 0 without an index."""
    out = {key: given.get(key, default) for key, default in DEFAULTS.items()}
    if out["method"] not in METHODS:
        raise ValueError(f"unknown method {out['method']!r}; choose from {', '.join(METHODS)}")
    if out["index"] and int(out["k"] or 0) < 1:
        raise ValueError("k must be at least 1")
    if out["limit"] is not None and int(out["limit"]) < 1:
        raise ValueError("limit must be at least 1")
    if not out["index"]:
        out["k"] = 0
    out["oracle"] = bool(out["oracle"])
    return out


def own_passage(dataset: str, item: dict[str, Any], hit: Any) -> bool:
    """Whether passage ``hit`` was made from question ``item`` of ``dataset``: its source
    names the question, or it holds near-identical question text."""
    if hit.source == question_source(dataset, item["id"]):
        return True
    return derived_from_question(hit.text, item.get("question") or "")


def reader_passages(
    index: Index, dataset: str, item: dict[str, Any], k: int, oracle: bool = False
) -> tuple[list[Any], list[Any], bool]:
    """What the reader sees for ``item``: ``(the k passages given, the unfiltered top k,
    whether an own passage was among the top k, so left out)``. The own passage (:func:`own_passage`) is skipped
    and the next best takes its place, unless ``oracle``; the unfiltered top k is what
    retrieval recall is measured on."""
    depth = k if oracle else k + 10
    ranked = index.search(retrieval_query(item), depth)
    if oracle:
        return ranked, ranked, False
    own = [own_passage(dataset, item, h) for h in ranked]
    kept = [h for h, mine in zip(ranked, own, strict=True) if not mine]
    return kept[:k], ranked[:k], any(own[:k])


class FrenchJob(Job):
    """One model's run over a FrenchMedMCQA data set."""

    def __init__(self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool):
        from engine.french.index import load_index

        super().__init__()
        self.dataset = dataset
        self.items = store.items(dataset, settings["limit"])
        self.index: Index | None = load_index(settings["index"]) if settings["index"] else None
        self.k = settings["k"]
        # Recall is known when the passages were made from this very data set's questions.
        self.recall_known = self.index is not None and self.index.corpus_dataset == dataset
        self.model = self.lease(pool, settings["model"])
        self.oracle = bool(settings.get("oracle"))
        self.model_label = self.model.name + (ORACLE_LABEL if self.oracle else "")
        self.reader = Reader(self.model, method=settings["method"], threshold=settings["threshold"])
        index = self.index
        self.settings = {
            **settings,
            "model": self.model.name,
            "retriever": index.retriever if index is not None else None,
            "corpus": index.corpus if index is not None else None,
        }

    def retrieve(self, item: dict[str, Any]) -> tuple[list[Any], list[Any], bool]:
        """See :func:`reader_passages`."""
        if self.index is None:
            return [], [], False
        return reader_passages(self.index, self.dataset, item, self.k, self.oracle)

    def answer(self, item: dict[str, Any], position: int) -> dict[str, Any]:
        started = time.perf_counter()
        hits, top, excluded = self.retrieve(item)
        answer = self.reader.answer(item, [h.text for h in hits])
        pred, truth = set(answer.letters), gold(item)
        scores: dict[str, Any] = {
            "hamming": round(hamming(pred, truth), 4),
            "exact": exact(pred, truth),
            "own_excluded": excluded,
        }
        if self.recall_known:
            own = question_source(self.dataset, item["id"])
            scores["retrieved"] = any(h.source == own for h in top)
        passages = [
            {"passage_id": h.passage_id, "score": round(h.score, 4), "source": h.source}
            for h in hits
        ]
        return {
            "response": answer.response,
            "chosen": format_letters(pred),
            "gold": format_letters(truth),
            "correct": exact(pred, truth),
            "scores": scores,
            "extra": {
                "pred": sorted(pred),
                "gold": sorted(truth),
                "n_answers": len(truth),
                "probabilities": answer.probabilities,
                "passages": passages,
            },
            "latency_s": round(time.perf_counter() - started, 3),
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }


class FrenchSpec:
    """French QA for :func:`engine.runs.run`: settings ``model``, ``index`` (a built index's
    name, or none for no passage), ``k``, ``method``, ``threshold``, ``limit``, ``oracle``
    (give each question its own passage; see the module docstring)."""

    activity = FRENCH

    def settings(self, given: dict[str, Any]) -> dict[str, Any]:
        return french_settings(given)

    def open(
        self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool
    ) -> FrenchJob:
        return FrenchJob(store, dataset, settings, pool)

    def summarize(self, store: Store, run_id: int) -> dict[str, Any]:
        return run_summary(store, run_id)


SPEC = FrenchSpec()


def run_french(
    store: Store,
    dataset: str,
    model: str | None = None,
    *,
    index: str | None = None,
    k: int = 1,
    method: str = "generate",
    threshold: float = THRESHOLD,
    limit: int | None = None,
    oracle: bool = False,
    resume: int | None = None,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> dict[str, Any]:
    """Answer the questions of ``dataset`` with the model called ``model`` and store the run.

    With ``index`` (a built index's name) the ``k`` best passages for "question + its five
    options" are given to the reader, a question's own passage left out unless ``oracle``;
    without, none. ``resume`` continues a stored run with its own settings. A shorthand for
    :func:`engine.runs.run`.
    """
    from engine.runs import run

    given = {
        "model": model,
        "index": index,
        "k": k,
        "method": method,
        "threshold": threshold,
        "limit": limit,
        "oracle": oracle,
    }
    return run(
        store,
        FRENCH.id,
        dataset,
        {} if resume is not None else given,
        resume=resume,
        pool=pool,
        progress=progress,
        cancel=cancel,
    )
