"""One run's work, as an activity's run spec opens it (:class:`engine.activities.RunSpec`)
and the run loop (:func:`engine.runs.run`) plays it: its items and settings, the models it
leases from the pool, and how it answers one item."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.models.backend import default_concurrency

if TYPE_CHECKING:
    from engine.models.load import LoadSettings
    from engine.models.pool import ModelPool, PooledModel
    from engine.progress import Cancel
    from engine.types import JSONDict


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
        """Answer one item: the fields of :meth:`engine.store.Store.add_answer` but its
        scores (``response``, ``chosen``, ``gold``, ``extra``, ``latency_s``, tokens)."""
        raise NotImplementedError

    def close(self) -> None:
        """Give back every leased model."""
        for model in self.leases:
            model.close()
        self.leases.clear()
