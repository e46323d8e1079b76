"""Model runs over a FrenchMedMCQA data set: retrieve → prompt → answer → parse → score → store.

Each answer is stored as soon as it is produced (``chosen`` and ``gold`` as "A + D"; the
per-question Hamming score, exact match and retrieval hit in ``scores``; the passages used in
``extra``), so an interrupted run can be resumed with ``resume=RUN_ID``. The summary holds the
Hamming score, the EMR, both by number of correct answers, and retrieval recall@k over the
questions whose own passage is in the corpus (corpora built ``--from-dataset``).
"""

from __future__ import annotations

import time
from typing import Any

from engine.french.dataset import ACTIVITY, gold, question_source, retrieval_query
from engine.french.index import Index
from engine.french.reader import Reader, format_letters
from engine.french.scoring import exact, hamming, summarise
from engine.progress import Cancel, Cancelled, ProgressCallback, report
from engine.store import Store, StoreError


def run_summary(store: Store, run_id: int) -> dict[str, Any]:
    """Scores of everything a run answered so far (also what :func:`run_french` returns)."""
    run = store.run(run_id)
    pairs, hits = [], []
    for a in store.answers(run_id):
        extra = a["extra"] or {}
        pairs.append((extra.get("pred", []), extra.get("gold", [])))
        recall = (a["scores"] or {}).get("retrieved")
        if recall is not None:
            hits.append(bool(recall))
    out: dict[str, Any] = {"run_id": run_id, "dataset": run["dataset"], "model": run["model"]}
    out.update(summarise(pairs))
    settings = run["settings"] or {}
    k = settings.get("k")
    out["recall_at_k"] = (
        {"k": k, "n": len(hits), "recall": round(100 * sum(hits) / len(hits), 2)} if hits else None
    )
    out["settings"] = settings
    return out


def run_french(
    store: Store,
    dataset: str,
    model: Any,
    *,
    model_name: str | None = None,
    index: Index | None = None,
    k: int = 1,
    method: str = "generate",
    threshold: float = 0.5,
    limit: int | None = None,
    resume: int | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> dict[str, Any]:
    """Answer the questions of ``dataset`` with ``model`` and store the run.

    ``model`` is a loaded model (``engine.runtime.LocalModel`` API) or a catalog name, opened
    here and closed at the end. With ``index`` the ``k`` best passages for "question + its five
    options" are given to the reader; without, none. ``resume`` continues a stored run with its
    own settings. Returns the summary (also stored with the run); ``status`` says whether the
    run finished, was cancelled or failed (the model crashed: ``error`` says why).
    """
    from engine.runtime import ModelCrashed, ModelError

    if k < 1:
        raise ValueError("k must be at least 1")
    items = store.items(dataset, limit)
    settings = {
        "method": method,
        "k": k if index is not None else 0,
        "threshold": threshold,
        "index": index.name if index is not None else None,
        "retriever": index.retriever if index is not None else None,
        "corpus": index.corpus if index is not None else None,
        "limit": limit,
    }
    owned = None
    if isinstance(model, str) or model is None:
        from engine.catalog import open_model, resolve

        model_name = model_name or resolve(model).name
        owned = model = open_model(model)
    model_name = model_name or getattr(model, "name", None) or str(getattr(model, "path", "model"))

    if resume is not None:
        run = store.run(resume)
        if run["activity"] != ACTIVITY or run["dataset"] != dataset:
            raise StoreError(f"run {resume} is not a French run on data set {dataset!r}")
        run_id, done = resume, store.answered_keys(resume)
        store.update_run(run_id, status="running", error=None)
    else:
        run_id = store.start_run(ACTIVITY, dataset, model_name, settings, n_total=len(items))
        done = set()

    reader = Reader(model, method=method, threshold=threshold)
    # Recall is known when the passages were made from this very data set's questions.
    recall_known = index is not None and index.corpus_dataset == dataset
    status, error, interrupted = "finished", None, False
    total = len(items)
    try:
        for position, item in enumerate(items):
            if item["id"] in done:
                continue
            if cancel is not None:
                cancel.check()
            started = time.perf_counter()
            hits = index.search(retrieval_query(item), k) if index is not None else []
            answer = reader.answer(item, [h.text for h in hits])
            pred, truth = set(answer.letters), gold(item)
            own = question_source(dataset, item["id"]) if recall_known else None
            scores: dict[str, Any] = {
                "hamming": round(hamming(pred, truth), 4),
                "exact": exact(pred, truth),
            }
            if own is not None:
                scores["retrieved"] = any(h.source == own for h in hits)
            store.add_answer(
                run_id,
                item["id"],
                response=answer.response,
                chosen=format_letters(pred),
                gold=format_letters(truth),
                correct=exact(pred, truth),
                scores=scores,
                extra={
                    "pred": sorted(pred),
                    "gold": sorted(truth),
                    "n_answers": len(truth),
                    "probabilities": answer.probabilities,
                    "passages": [
                        {"passage_id": h.passage_id, "score": round(h.score, 4), "source": h.source}
                        for h in hits
                    ],
                },
                latency_s=round(time.perf_counter() - started, 3),
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
                position=position,
            )
            report(
                progress,
                position + 1,
                total,
                item["id"],
                chosen=format_letters(pred),
                gold=format_letters(truth),
                hamming=scores["hamming"],
            )
    except Cancelled:
        status = "cancelled"
    except KeyboardInterrupt:
        status, interrupted = "cancelled", True
    except (ModelCrashed, ModelError) as exc:
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        if owned is not None:
            owned.close()
    summary = run_summary(store, run_id)
    summary["status"] = status
    if error:
        summary["error"] = error
    store.finish_run(run_id, summary, status=status, error=error)
    if interrupted:
        raise KeyboardInterrupt
    return summary
