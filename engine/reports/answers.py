"""A run's answers as a person reads them: numbered from 1, each beside its question's text.

Answers are stored under their item's key (often a hash); :func:`run_answers` joins them to
the run's data set so a table can show the question instead.

>>> item_text({"id": "9f2c…", "question": "华法林的作用机制是什么？"})
'华法林的作用机制是什么？'
>>> [[a["number"], a["question"]] for a in run_answers(store, 12)]    # doctest: +SKIP
[[1, '华法林的作用机制是什么？'], [2, 'Which is the most likely diagnosis?']]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.store.store import StoreError
from engine.text.columns import short_text

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import Item, Row

QUESTION_WIDTH = 80


def item_text(item: Item) -> str:
    """What an item asks: a question's text, or a consultation case's opening request."""
    for key in ("question", "initial_request"):
        if item.get(key):
            return str(item[key])
    task = item.get("task")
    if isinstance(task, dict) and task.get("question"):
        return str(task["question"])
    return ""


def item_texts(store: Store, dataset: str) -> dict[str, str]:
    """Item key → item text for a stored data set (empty when it is gone)."""
    try:
        items = store.items(dataset)
    except StoreError:
        return {}
    return {str(item.get("id")): item_text(item) for item in items}


def run_answers(store: Store, run_id: int, width: int = QUESTION_WIDTH) -> list[Row]:
    """The answers of run ``run_id`` in order, each the stored answer (``item_key``,
    ``chosen``, ``gold``, ``correct``, ``scores``, ``response``…) plus ``number`` (from 1),
    ``question`` (the item's text cut to ``width`` columns; the item key when the data set no
    longer holds it) and ``question_full``.

    Raises :class:`~engine.store.store.StoreError` when there is no such run."""
    run = store.run(run_id)
    texts = item_texts(store, run["dataset"])
    out: list[Row] = []
    for number, answer in enumerate(store.answers(run_id), start=1):
        full = texts.get(str(answer["item_key"])) or str(answer["item_key"])
        out.append(
            {**answer, "number": number, "question": short_text(full, width), "question_full": full}
        )
    return out
