"""Who answers an activity's items: a model (the run loop, :mod:`engine.runs`, with the
activity's job as the solver) or a person. A person is a solver like a model: a
:class:`PersonRun` is a stored run of the activity (``runner="person"``) whose items are
shown with the same context a model's job builds (each activity's ``context`` module), whose
answers are scored by the activity's scorers (:func:`engine.scoring.run_scorers`) before they
are stored, and whose summary is the activity's own (its run spec's), so a person's run is
scored again with ``medexam rescore`` like a model's.

The interface is a callback one: an activity's session (``engine/<activity>/session.py``,
driven by the CLI's prompt or the app's screen) gives the next item's context, the person's
answer comes back through :meth:`PersonRun.submit`, and the engine scores and stores it.

>>> person = PersonRun.start(store, "french", "frenchmedmcqa-sample", items, {"k": 0})  # doctest: +SKIP
>>> scores = person.submit(0, items[0], {"chosen": "A", "gold": "A + B", "extra": {...}})  # doctest: +SKIP
>>> person.finish(done=True)["hamming"]                                               # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.activities import get_activity
from engine.scoring import Context, merged, run_scorers, score_answer
from engine.store import Store, StoreError
from engine.types import JSONDict

#: A person's runs are stored with this runner and model.
PERSON = "person"


@dataclass
class PersonRun:
    """One stored run of ``activity_id`` answered by a person (:meth:`start` or
    :meth:`resume` it). ``answered`` holds the keys of the items answered so far."""

    store: Store
    activity_id: str
    run_id: int
    answered: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        store: Store,
        activity_id: str,
        dataset: str,
        items: Sequence[Any],
        settings: JSONDict,
    ) -> PersonRun:
        """Start a person's run over ``items`` of ``dataset`` with ``settings`` stored on it."""
        if not items:
            raise StoreError(f"data set {dataset!r} holds no item to answer")
        run_id = store.start_run(
            activity_id, dataset, PERSON, settings, runner=PERSON, n_total=len(items)
        )
        return cls(store, activity_id, run_id)

    @classmethod
    def resume(cls, store: Store, activity_id: str, run_id: int, dataset: str) -> PersonRun:
        """Continue person run ``run_id`` (refused when it is not one of ``dataset``)."""
        run = store.run(run_id)
        if run["runner"] != PERSON or run["activity"] != activity_id or run["dataset"] != dataset:
            raise StoreError(f"run {run_id} is not a practice session on {dataset!r}")
        store.update_run(run_id, status="running")
        return cls(store, activity_id, run_id, set(store.answered_keys(run_id)))

    def submit(self, position: int, key: str, item: Any, answer: JSONDict) -> JSONDict:
        """Score the person's ``answer`` to ``item`` (the fields of a model's answer:
        ``response``, ``chosen``, ``gold``, ``extra``, ``latency_s``) by the activity's
        scorers and store it; return its values by key (``correct`` among them)."""
        key = str(key)
        if key in self.answered:
            raise StoreError(f"question {key!r} is already answered")
        values = store_scored(self.store, self.run_id, position, key, item, answer)
        self.answered.add(key)
        return values

    def summary(self) -> JSONDict:
        """The run's summary as its activity computes it (what a rescore gives again)."""
        spec = get_activity(self.activity_id).run_spec()
        return {**spec.summarize(self.store, self.run_id), "run_id": self.run_id}

    def finish(self, status: str, extra: JSONDict | None = None) -> JSONDict:
        """End the run with ``status`` and store its summary (with ``extra`` beside the
        activity's, computed once the run has its status); return the summary."""
        self.store.finish_run(self.run_id, {"status": status}, status=status)
        summary = {**self.summary(), **(extra or {}), "status": status}
        self.store.update_run(self.run_id, summary=summary)
        return summary


def store_scored(
    store: Store, run_id: int, position: int | None, key: str, item: Any, answer: JSONDict
) -> JSONDict:
    """Score ``answer`` to ``item`` by the scorers a run of its activity applies, store it
    with their scores and return their values by key (a person's answer, one at a time)."""
    context = Context(store, store.run(run_id))
    scored = score_answer(run_scorers(str(context.run["activity"]), context), answer, item, context)
    store.add_answer(run_id, str(key), position=position, scores=scored, **answer)
    return merged(scored)
