"""Who answers an activity's items: a model (the activity's job) or a person. Both answer
through the one run loop, :func:`engine.core.runs.run`: a person is a :class:`PersonSolver`,
whose job asks the person for each item the loop hands it and gives the answer back as a
model's job does. The loop scores it by the activity's scorers, stores it at once, calls
the run's ``on_answer`` hook (the tutor's feedback), honours the run's deadline (a timed
exam) and, after a kill -9, resumes the run where it stopped: a person's run is stored
(``runner="person"``), summarised and scored again (``medexam rescore``) like a model's.

The person meets the loop in ``ask(open) -> (position, answer)`` (:data:`Ask`): the loop
offers the items not answered yet and takes the one the person answered. The CLI's prompt and
the app's screen fill it through a :class:`Sitting`, whose loop runs in a thread of its own
and takes the answers through a queue (each activity's sitting, ``engine/<activity>/person.py``,
says how an item is shown and what its answer holds).

>>> sitting = Sitting(store, "exam", "explaincpe-sample",                   # doctest: +SKIP
...                   {"limit": 3, "mode": "practice"})
>>> (position, item), *rest = sitting.asked()                             # doctest: +SKIP
>>> answer = {"response": "A", "chosen": "A", "gold": item["answer"]}     # doctest: +SKIP
>>> sitting.give(answer)["correct"]                                       # doctest: +SKIP
>>> sitting.stop()["accuracy"]                                            # doctest: +SKIP
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from engine.bank.blocks import stored_block
from engine.core.progress import Cancel, Cancelled, Deadline, TimeUp
from engine.core.run_checks import spec_for
from engine.core.runs import Answered, Job, run
from engine.errors import UserError
from engine.models.pool import ModelPool
from engine.review import record_answer
from engine.store.store import Store, StoreError
from engine.types import JSONDict

#: A person's runs are stored with this runner and model.
PERSON = "person"

#: How a person is asked for an answer: ``ask(open)`` is given the items not answered yet,
#: ``(position, item)`` in the run's order, and gives back the position the person answered
#: (the first, where the activity asks in order) with its answer: the fields of a model's
#: (``response``, ``chosen``, ``gold``, ``extra``, ``latency_s``). It raises
#: :class:`~engine.core.progress.Cancelled` when the person quits.
Ask = Callable[[Sequence[tuple[int, Any]]], tuple[int, JSONDict]]


class PersonJob(Job):
    """A person's run: the block of items its settings name (:func:`stored_block`: their
    keys, order and limit), answered through ``ask`` in the order the person chooses. An
    answer that comes after the run's deadline is refused (:class:`~engine.core.progress.TimeUp`).
    ``extra`` is added to the run's summary, with the time spent (``seconds``) when
    ``seconds``."""

    runner = PERSON
    model_label = PERSON

    def __init__(
        self,
        store: Store,
        items: Sequence[Any],
        settings: JSONDict,
        solver: PersonSolver,
        key: Callable[[Any], str],
    ) -> None:
        super().__init__()
        self.store, self.items, self.settings, self.solver = store, items, settings, solver
        self.key = key
        self.started = solver.clock()
        self.mine: set[str] = set()  # the keys answered in this sitting

    def default_concurrency(self) -> int:
        return 1  # one person, one item at a time

    def in_turn(self, todo: Sequence[tuple[int, Any]], cancel: Cancel | None) -> Iterator[Answered]:
        left = list(todo)
        while left:
            if cancel is not None:
                cancel.check()
            if self.deadline is not None:
                self.deadline.check()
            position, answer = self.solver.ask(left)
            if self.deadline is not None:
                self.deadline.check()
            item = next(i for p, i in left if p == position)
            left = [(p, i) for p, i in left if p != position]
            self.mine.add(self.key(item))
            yield position, item, answer

    def answer(self, item: Any, position: int) -> JSONDict:
        return self.solver.ask([(position, item)])[1]

    def summary_extra(self) -> JSONDict:
        """The solver's ``extra``, and the time the person spent (``seconds``): this
        sitting's, with the answers' times of the earlier ones of a resumed run."""
        if not self.solver.seconds:
            return dict(self.solver.extra)
        answers = self.store.answers(self.run_id) if self.run_id is not None else []
        earlier = sum(a["latency_s"] or 0.0 for a in answers if a["item_key"] not in self.mine)
        spent = round(earlier + self.solver.clock() - self.started, 3)
        return {**self.solver.extra, "seconds": spent}


class PersonSolver:
    """A person answering a run of ``activity_id`` through ``ask`` (see :data:`Ask`); the
    settings are stored on the run as they are (its block: ``keys``, ``order``, ``limit``;
    its mode, profile…). ``extra`` goes into the run's summary, with the time spent
    (``seconds``, by ``clock``) when ``seconds``."""

    runner = PERSON

    def __init__(
        self,
        activity_id: str,
        ask: Ask,
        clock: Callable[[], float] = time.monotonic,
        extra: JSONDict | None = None,
        seconds: bool = True,
    ) -> None:
        self.activity_id, self.ask, self.clock = activity_id, ask, clock
        self.extra, self.seconds = dict(extra or {}), seconds

    def settings(self, given: JSONDict) -> JSONDict:
        return dict(given)

    def open(self, store: Store, dataset: str, settings: JSONDict, pool: ModelPool) -> Job:
        spec = spec_for(self.activity_id)
        items = stored_block(spec.items(store, dataset), settings, spec.key)
        if not items:
            raise StoreError(f"data set {dataset!r} holds no item to answer")
        return PersonJob(store, items, settings, self, spec.key)


def time_spent(store: Store, run_id: int) -> float:
    """Seconds a person's run has taken so far: its answers' times."""
    return float(sum(a["latency_s"] or 0.0 for a in store.answers(run_id)))


OnPersonAnswer = Callable[[Store, Any, JSONDict], None]


def card_hook(activity_id: str, dataset: str, profile: str, timed: bool = True) -> OnPersonAnswer:
    """A person's run's ``on_answer`` hook: each answer reviews the item's card
    (:mod:`engine.review`), right when the answer is ``correct``, with its time when
    ``timed``."""

    def review_card(store: Store, item: Any, shown: JSONDict) -> None:
        record_answer(
            store, activity_id, dataset, item, bool(shown.get("correct")),
            seconds=shown.get("latency_s") if timed else None, run_id=shown.get("run_id"),
            profile=profile,
        )  # fmt: skip

    return review_card


_END = object()  # the loop has ended: nothing more to ask, no answer to wait for


class Sitting:
    """A person's run driven from another thread: its loop (:func:`engine.core.runs.run`) runs
    in a thread of its own, on its own connection to ``store``'s database; :meth:`asked`
    gives the items the loop waits on, :meth:`give` hands it one's answer and returns it as
    stored (with its scores), :meth:`stop` ends the run (``cancelled``, or ``finished`` when
    the time is up) and returns its summary. ``resume`` continues a stored run instead of
    starting one; ``deadline`` ends it finished once it passes; ``on_answer(store, item,
    answer)`` is called in the loop's thread after each stored answer (``run_id`` in it);
    ``extra`` and ``seconds`` are :class:`PersonSolver`'s."""

    def __init__(
        self,
        store: Store,
        activity_id: str,
        dataset: str | None,
        settings: JSONDict,
        *,
        resume: int | None = None,
        deadline: Deadline | None = None,
        on_answer: OnPersonAnswer | None = None,
        clock: Callable[[], float] = time.monotonic,
        extra: JSONDict | None = None,
        seconds: bool = True,
    ) -> None:
        if store.path == ":memory:":  # the loop's thread opens the database again
            raise UserError("a person's sitting needs a database file, not one in memory")
        self.path, self.activity_id = store.path, activity_id
        self._asked: queue.Queue[Any] = queue.Queue()
        self._given: queue.Queue[Any] = queue.Queue()
        self._stored: queue.Queue[Any] = queue.Queue()
        self._on_answer = on_answer
        self.summary: JSONDict | None = None
        self.error: BaseException | None = None
        self.run_id: int | None = None
        self._open: list[tuple[int, Any]] | None = None  # the items the loop waits on
        solver = PersonSolver(activity_id, self._ask, clock, extra, seconds)
        started = threading.Event()
        args = (dataset, settings, resume, deadline, solver, started)
        self._thread = threading.Thread(target=self._run, args=args, daemon=True)
        self._thread.start()
        started.wait()
        if self.run_id is None:
            self._thread.join()
            raise self.error or UserError("the run could not start")

    def _run(
        self,
        dataset: str | None,
        settings: JSONDict,
        resume: int | None,
        deadline: Deadline | None,
        solver: PersonSolver,
        started: threading.Event,
    ) -> None:
        store = Store(self.path)

        def on_start(run_id: int) -> None:
            self.run_id = run_id
            started.set()

        def answered(item: Any, shown: JSONDict) -> None:
            if self._on_answer is not None:
                self._on_answer(store, item, {**shown, "run_id": self.run_id})
            self._stored.put(shown)

        try:
            self.summary = run(
                store, self.activity_id, dataset, settings, resume=resume, solver=solver,
                deadline=deadline, on_start=on_start, on_answer=answered,
            )  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.error = exc
        finally:
            started.set()
            self._asked.put(_END)
            self._stored.put(_END)
            store.close()

    def _ask(self, open_items: Sequence[tuple[int, Any]]) -> tuple[int, JSONDict]:
        self._asked.put(list(open_items))
        got = self._given.get()
        if isinstance(got, BaseException):
            raise got
        return got

    def asked(self) -> list[tuple[int, Any]] | None:
        """The items the loop waits on, ``(position, item)`` in the run's order (None: the
        run has ended)."""
        if self._open is None:
            got = self._asked.get()
            if got is _END:
                self._asked.put(_END)  # it stays ended
                return None
            self._open = got
        return self._open

    def give(self, answer: JSONDict, position: int | None = None) -> JSONDict:
        """Answer the item at ``position`` (default: the first the loop waits on); returns
        the answer as stored, ``scores`` and ``correct`` in it. Raises
        :class:`~engine.errors.UserError` when the run has ended or the item is answered."""
        waiting = self.asked()
        if waiting is None:
            raise UserError("the run has ended: that answer was not taken")
        position = waiting[0][0] if position is None else position
        if position not in {p for p, _ in waiting}:
            raise UserError(f"the item at position {position} is already answered")
        self._open = None
        self._given.put((position, answer))
        got = self._stored.get()
        if got is _END:
            self._stored.put(_END)
            if self.error is not None and not isinstance(self.error, Cancelled):
                raise self.error
            raise UserError("the run has ended: that answer was not taken")
        return got

    def stop(self, time_up: bool = False) -> JSONDict:
        """End the run (``finished`` when ``time_up``, else ``cancelled`` unless it ended by
        itself) and return its summary."""
        if self.asked() is not None:
            self._open = None
            self._given.put(TimeUp("time is up") if time_up else Cancelled())
        self._thread.join()
        if self.summary is None:
            raise self.error or UserError("the run ended without a summary")
        return self.summary
