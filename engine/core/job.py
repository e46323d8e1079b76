"""One run's work, as an activity's run spec opens it (:class:`engine.activities.RunSpec`)
and the run loop (:func:`engine.core.runs.run`) plays it: its items and settings, the models it
leases from the pool, and how it answers one item."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine.models.backend import default_concurrency

if TYPE_CHECKING:
    from engine.core.progress import Cancel, Deadline
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool, PooledModel
    from engine.store.store import Store
    from engine.types import JSONDict

#: ``(position, item, answer)``: one item answered.
Answered = tuple[int, Any, "JSONDict"]


class Job:
    """One run's work, opened by an activity's :class:`engine.activities.RunSpec`: the
    items, the settings stored on the run, and how to answer one item. Models are leased
    with :meth:`lease` and given back by :meth:`close`. The loop sets ``run_id``,
    ``cancel`` and ``on_step`` before the first answer."""

    runner = "model"  # the run's runner: "model" or a baseline's name
    items: Sequence[Any] = ()
    settings: JSONDict  # what is stored on the run (derived settings included)
    model_label = ""  # the run's "model" column
    #: The load settings its models were loaded with, when the job chose them (an exam
    #: sizes its context to its prompts); None: the run's own.
    load: LoadSettings | None = None

    def __init__(self) -> None:
        self.leases: list[PooledModel] = []
        self.run_id: int | None = None
        self.cancel: Cancel | None = None
        self.on_step: Callable[..., None] | None = None
        self.deadline: Deadline | None = None

    def step(self, message: str, **info: Any) -> None:
        """Report progress within an item (a consultation's turn, from any thread): the
        run's progress callback gets ``message`` and ``info`` with the items done so far."""
        if self.on_step is not None:
            self.on_step(message, **info)

    def lease(
        self, pool: ModelPool, name: str | None, load: LoadSettings | None = None
    ) -> PooledModel:
        """A model from the pool (the run's load settings, ``load`` laid over them), held
        until :meth:`close`."""
        model = pool.acquire(name, load)
        self.leases.append(model)
        return model

    def default_concurrency(self) -> int:
        """Items in flight when the caller does not say: the fewest any leased model takes
        well (:func:`engine.models.backend.default_concurrency`)."""
        return default_concurrency(self.leases)

    def answer(self, item: Any, position: int) -> JSONDict:
        """Answer one item: the fields of :meth:`engine.store.store.Store.add_answer` but its
        scores (``response``, ``chosen``, ``gold``, ``extra``, ``latency_s``, tokens)."""
        raise NotImplementedError

    def in_turn(self, todo: Sequence[tuple[int, Any]], cancel: Cancel | None) -> Iterator[Answered]:
        """``(position, item, answer)`` of each of ``todo``, one at a time: in order (a
        person's job lets the person choose), stopping at cancel and at the deadline."""
        for position, item in todo:
            if cancel is not None:
                cancel.check()
            if self.deadline is not None:
                self.deadline.check()
            answer = timed(self, item, position)
            if cancel is not None:
                cancel.check()
            yield position, item, answer

    def summary_extra(self) -> JSONDict:
        """What the job adds to the run's summary when it ends (a person's time spent)."""
        return {}

    def close(self) -> None:
        """Give back every leased model."""
        for model in self.leases:
            model.close()
        self.leases.clear()


class Solver(Protocol):
    """Who answers a run when it is not the activity's model job (a person,
    :class:`engine.core.solvers.PersonSolver`): it checks the settings stored on the run and opens
    the run's :class:`Job`, whose ``answer`` gives each item's answer as a model's does."""

    runner: str

    def settings(self, given: JSONDict) -> JSONDict: ...

    def open(self, store: Store, dataset: str, settings: JSONDict, pool: ModelPool) -> Job: ...


def timed(job: Job, item: Any, position: int) -> JSONDict:
    """``job``'s answer to one item, its ``latency_s`` measured when the job gave none."""
    started = time.perf_counter()
    answer = job.answer(item, position)
    if answer.get("latency_s") is None:
        answer["latency_s"] = round(time.perf_counter() - started, 3)
    return answer
