"""What a French reader sees of the passages: the top k retrieved for a question, its own
passage (one made from the question itself) left out and the next best taking its place,
unless the run is an oracle. Used by every reader, chat model, trained or a person
(:mod:`engine.french.runner`, :mod:`engine.french.train.reader_data`,
:mod:`engine.french.person`): :func:`reader_context` is what each is given,
:func:`answer_fields` what each answer stores."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.french.corpus import derived_from_question
from engine.french.dataset import gold, question_source, retrieval_query
from engine.french.reader import format_letters
from engine.types import JSONDict

if TYPE_CHECKING:
    from engine.french.index import Index
    from engine.types import Row


def own_passage(dataset: str, item: Row, hit: Any) -> bool:
    """Whether passage ``hit`` was made from question ``item`` of ``dataset``: its source
    names the question, or it holds near-identical question text."""
    if hit.source == question_source(dataset, item["id"]):
        return True
    return derived_from_question(hit.text, item.get("question") or "")


def reader_passages(
    index: Index, dataset: str, item: Row, k: int, oracle: bool = False
) -> tuple[list[Any], list[Any], bool]:
    """What the reader sees for ``item``: ``(the k passages given, the unfiltered top k,
    whether an own passage was among the top k, so left out)``. The own passage
    (:func:`own_passage`) is skipped and the next best takes its place, unless ``oracle``; the
    unfiltered top k is what retrieval recall is measured on."""
    depth = k if oracle else k + 10
    ranked = index.search(retrieval_query(item), depth)
    if oracle:
        return ranked, ranked, False
    own = [own_passage(dataset, item, h) for h in ranked]
    kept = [h for h, mine in zip(ranked, own, strict=True) if not mine]
    return kept[:k], ranked[:k], any(own[:k])


@dataclass(frozen=True)
class ReaderContext:
    """What anyone answering question ``item`` is given: the question, its options and the
    passages (:func:`reader_passages`); a model reads them in its prompt, a person on the
    screen. ``top`` and ``excluded`` are what retrieval did, for its scores."""

    item: Row
    passages: list[Any] = field(default_factory=list)
    top: list[Any] = field(default_factory=list)
    excluded: bool = False


def reader_context(
    index: Index | None, dataset: str, item: Row, k: int, oracle: bool = False
) -> ReaderContext:
    """The context of ``item`` with the ``k`` passages of ``index`` (none without one)."""
    if index is None:
        return ReaderContext(item)
    given, top, excluded = reader_passages(index, dataset, item, k, oracle)
    return ReaderContext(item, given, top, excluded)


def answer_fields(
    context: ReaderContext, dataset: str, letters: Iterable[str], recall_known: bool
) -> JSONDict:
    """The stored fields of an answer choosing ``letters`` in ``context`` (a model's or a
    person's alike): the letters chosen and right, the passages given and what retrieval
    did (whether its own passage was found, when ``recall_known``)."""
    item = context.item
    pred, truth = sorted(set(letters)), sorted(gold(item))
    retrieval: JSONDict = {"own_excluded": context.excluded}
    if recall_known:
        own = question_source(dataset, item["id"])
        retrieval["retrieved"] = any(h.source == own for h in context.top)
    passages = [
        {"passage_id": h.passage_id, "score": round(h.score, 4), "source": h.source}
        for h in context.passages
    ]
    return {
        "chosen": format_letters(pred),
        "gold": format_letters(truth),
        "extra": {
            "pred": pred,
            "gold": truth,
            "n_answers": len(truth),
            "passages": passages,
            "retrieval": retrieval,
        },
    }
