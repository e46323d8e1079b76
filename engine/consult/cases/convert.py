"""A whole multiple-choice data set converted into draft consultation cases: one resumable job.

As the consultation paper built its test sets (§3.3), every question of an exam data set
is split into the patient's information and the task, an opening request is written and
key–value facts are extracted by a converter model (:func:`engine.consult.cases.draft.draft_case`;
any model: an embedded one, or a served one for the paper's quality). A question that holds
no patient information (a question about a mechanism or a fact, with no patient) is left out
by the paper's filter, counted and listed; one that cannot be a case for another reason (no
valid answer, or too long for the converter's context: counted apart, ``too_long``) is
listed apart, with why. A converter's error that is not a crash ends the job naming the
question it was converting.

The drafts are stored as they come, as a case data set (each case's ``meta.draft`` and
``meta.review`` say what to check), a few seconds apart and whenever the job stops; the
data set's meta remembers the source, the converter and the questions left out, so the same
call again goes on where it stopped and converts nothing twice. The questions are scheduled
by the run loop (:func:`engine.core.runs.answer_items`): as many in flight as the converter takes.

>>> convert_dataset(store, "medqa-test", "medqa-cases", "smollm2")  # doctest: +SKIP
{'dataset': 'medqa-test', 'name': 'medqa-cases', 'converted': 812, 'filtered': 4, ...}
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.consult.cases.cases import ACTIVITY, CaseError
from engine.consult.cases.draft import TOO_LONG, draft_case, mcq_parts, split_stem
from engine.core.progress import Cancel, ProgressCallback, report
from engine.core.runs import Job, answer_items
from engine.errors import UserError
from engine.models.pool import ModelPool, default_pool
from engine.models.protocol import ModelCrashed, ModelError

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import Item, JSONDict

#: The paper's filter: a question holds patient information when it speaks of a person.
_PATIENT = re.compile(
    r"\b\d+[- ](?:year|month|week|day)s?[- ]old\b|\b(?:patients?|man|woman|men|women|boy|girl|"
    r"child|infant|newborn|neonate|baby|toddler|adolescent|teenager|he|she|his|her|him)\b"
    r"|\b(?:patiente?s?|homme|femme|enfant|nourrisson|ans|il|elle)\b|患者|病人|男性|女性|岁|患儿",
    re.IGNORECASE,
)
FILTER_REASON = "no patient information"
SAVE_EVERY_S = 5.0


def left_out(item: Item) -> str | None:
    """Why the paper's filter leaves a question out (no information before the question, or
    none about a patient), or None when it holds patient information."""
    stem = mcq_parts(item)[0]
    information, _task = split_stem(stem)
    if not information or not _PATIENT.search(information):
        return FILTER_REASON
    return None


class ConvertJob(Job):
    """Drafts one case per question with the converter (leased from ``pool``)."""

    def __init__(self, pool: ModelPool, converter: str | None, dataset: str) -> None:
        super().__init__()
        self.model = self.lease(pool, converter)
        self.dataset = dataset
        self.label = converter or "model"

    def answer(self, item: Any, position: int) -> JSONDict:
        """``{"case": …}``, or ``{"filtered": reason}`` / ``{"refused": reason}``."""
        reason = left_out(item)
        if reason:
            return {"filtered": reason}
        try:
            case = draft_case(item, self.model, dataset=self.dataset, model_name=self.label)
        except CaseError as exc:
            key = "filtered" if FILTER_REASON in str(exc) else "refused"
            return {key: str(exc)}
        except ModelCrashed:
            raise
        except ModelError as exc:  # the job ends (its error may be every question's): said where
            raise ModelError(f"question {item.get('id')}: {exc}") from None
        return {"case": case.to_dict()}


def _source(case: JSONDict) -> object:
    """The id of the question a stored case was converted from."""
    return ((case.get("meta") or {}).get("converted_from") or {}).get("item")


@dataclass
class _State:
    """What a conversion holds so far (the stored case set and its meta)."""

    cases: list[JSONDict] = field(default_factory=list)
    filtered: list[JSONDict] = field(default_factory=list)
    refused: list[JSONDict] = field(default_factory=list)

    def done(self) -> set[str]:
        made = {str(_source(c)) for c in self.cases}
        return made | {str(x["item"]) for x in self.filtered + self.refused}


def _stored(store: Store, name: str, dataset: str, converter: str, replace: bool) -> _State:
    """The conversion stored as ``name`` to go on with (none when absent or ``replace``);
    refuses a data set that is not a conversion of ``dataset`` by ``converter``."""
    if replace or not store.has_dataset(name):
        return _State()
    ds = store.dataset(name)
    meta = ds.get("meta") or {}
    if ds["activity"] != ACTIVITY or meta.get("converted_from") != dataset:
        raise UserError(
            f"a data set named {name!r} exists and is not a conversion of {dataset!r} "
            "(choose another --name, or --replace it)"
        )
    if meta.get("converter") != converter:
        raise UserError(
            f"{name!r} is being converted by {meta.get('converter')!r}: go on with "
            f"--converter {meta.get('converter')}, or --replace to start again with {converter}"
        )
    return _State(
        store.items(name), list(meta.get("filtered") or []), list(meta.get("refused") or [])
    )


def _save(store: Store, name: str, dataset: str, converter: str, total: int, s: _State) -> None:
    meta = {"format": "cases", "draft": True, "converted_from": dataset, "converter": converter,
            "questions": total, "filtered": s.filtered, "refused": s.refused}  # fmt: skip
    store.add_dataset(name, ACTIVITY, s.cases, source=f"converted from {dataset}", meta=meta,
                      replace=True)  # fmt: skip


def convert_dataset(
    store: Store,
    dataset: str,
    name: str,
    converter: str | None = None,
    *,
    pool: ModelPool | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    replace: bool = False,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> JSONDict:
    """Convert the questions of exam data set ``dataset`` (its first ``limit``) into draft
    cases stored as ``name``, going on with a conversion stored there (see the module).

    Returns ``{"dataset", "name", "converter", "questions", "converted", "filtered",
    "refused", "too_long", "left_out": [{"item", "reason"}…], "new", "seconds"}``
    (``too_long``: those of ``refused`` too long for the converter's context). Raises
    :class:`~engine.core.progress.Cancelled` on cancel and the converter's error, after saving
    what was done.
    """
    if store.dataset(dataset)["activity"] != "exam":
        raise UserError(f"{dataset!r} is not a multiple-choice (exam) data set")
    label = converter or "model"
    items = store.items(dataset, limit=limit)
    state = _stored(store, name, dataset, label, replace)
    done = state.done()
    todo = [(i, item) for i, item in enumerate(items) if str(item["id"]) not in done]
    finished = len(items) - len(todo)
    started, saved = time.monotonic(), time.monotonic()
    report(progress, finished, len(items), "going on" if finished else "starting")
    job = ConvertJob(pool or default_pool(), converter, dataset)
    try:
        n = concurrency or job.default_concurrency()
        for _position, item, answer in answer_items(job, todo, cancel, n):
            key = str(item["id"])
            if "case" in answer:
                state.cases = [c for c in state.cases if c["id"] != answer["case"]["id"]]
                state.cases.append(answer["case"])
            else:
                kind = "filtered" if "filtered" in answer else "refused"
                getattr(state, kind).append({"item": key, "reason": answer[kind]})
            finished += 1
            if time.monotonic() - saved >= SAVE_EVERY_S:
                _save(store, name, dataset, label, len(items), state)
                saved = time.monotonic()
            out = len(state.filtered) + len(state.refused)
            report(progress, finished, len(items), f"{out} left out", filtered=len(state.filtered))
    finally:
        order = {str(item["id"]): i for i, item in enumerate(items)}
        for listed in (state.filtered, state.refused):  # in the data set's order
            listed.sort(key=lambda x: order.get(str(x["item"]), len(order)))
        state.cases.sort(key=lambda c: order.get(str(_source(c)), len(order)))
        _save(store, name, dataset, label, len(items), state)
        job.close()
    return summary(store, name) | {
        "new": len(todo),
        "seconds": round(time.monotonic() - started, 1),
    }


def summary(store: Store, name: str) -> JSONDict:
    """What a stored conversion holds: its source, converter, cases and questions left out."""
    ds = store.dataset(name)
    meta = ds.get("meta") or {}
    filtered, refused = meta.get("filtered") or [], meta.get("refused") or []
    return {
        "dataset": meta.get("converted_from"),
        "name": name,
        "converter": meta.get("converter"),
        "questions": meta.get("questions"),
        "converted": ds["n_items"],
        "filtered": len(filtered),
        "refused": len(refused),
        "too_long": sum(str(x.get("reason", "")).startswith(TOO_LONG) for x in refused),
        "left_out": [*filtered, *refused],
    }
