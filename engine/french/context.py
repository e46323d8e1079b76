"""What a French reader sees of the passages: the top k retrieved for a question, its own
passage (one made from the question itself) left out and the next best taking its place,
unless the run is an oracle. Used by every reader, chat model or trained
(:mod:`engine.french.runner`, :mod:`engine.train.reader_data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.french.corpus import derived_from_question
from engine.french.dataset import question_source, retrieval_query

if TYPE_CHECKING:
    from engine.french.index import Index


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
