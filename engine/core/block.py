"""A person's block of any activity, answered one item after another in the app's practice
panel: the run loop's :class:`~engine.core.solvers.Sitting` under the calls the panel makes
(``next_question``, ``answer``, ``finish``). What an answer is (``answer_of``) and which
option is right (``gold_of``) are the activity's item widget's; the activity's scorers
say whether it is right (``correct``), as for a model's answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.solvers import Sitting

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict


@dataclass(frozen=True)
class Said:
    """What the person's answer to one item came to."""

    key: str
    chosen: str | None
    gold: str
    correct: bool
    seconds: float


class PersonBlock:
    """The items of ``dataset`` a person's run of ``activity_id`` with ``settings`` asks
    (its block: ``keys``, ``order``, ``limit``; ``profile``), in the run's order.
    ``answer_of(item, chosen)`` is the answer stored for the option ``chosen`` (None:
    skipped), ``gold_of(item)`` the right option, ``key_of(item)`` the item's key."""

    mode = ""
    explained = True

    def __init__(
        self,
        store: Store,
        activity_id: str,
        dataset: str,
        settings: JSONDict,
        answer_of: Callable[[Any, str | None], JSONDict],
        gold_of: Callable[[Any], str],
        key_of: Callable[[Any], str] = lambda item: str(item["id"]),
    ) -> None:
        self.dataset, self.profile = dataset, str(settings.get("profile") or "")
        self.answer_of, self.gold_of, self.key_of = answer_of, gold_of, key_of
        self.sitting = Sitting(store, activity_id, dataset, settings)
        self.run_id = self.sitting.run_id
        asked = self.sitting.asked() or []
        self.positions = [position for position, _item in asked]
        self.questions = [item for _position, item in asked]
        self.feedback: list[Said] = []
        self.index = 0  # the place of the next item to answer
        self.finished = False
        self.summary: JSONDict | None = None

    @property
    def remaining(self) -> int:
        return len(self.questions) - self.index

    def next_question(self) -> Any | None:
        """The next item to answer (None: all are answered, or the run has ended)."""
        if self.finished or self.index >= len(self.questions):
            return None
        return self.questions[self.index]

    def answer(self, chosen: str | None) -> Said:
        """Answer the next item with the option ``chosen`` (None: skip it)."""
        item = self.questions[self.index]
        stored = self.sitting.give(self.answer_of(item, chosen), self.positions[self.index])
        said = Said(
            self.key_of(item),
            chosen,
            self.gold_of(item),
            bool(stored.get("correct")),
            float(stored.get("latency_s") or 0.0),
        )
        self.feedback.append(said)
        self.index += 1
        return said

    def finish(self) -> JSONDict:
        """End the run (cancelled when items are left) and return its summary."""
        if self.summary is None:
            self.summary = self.sitting.stop()
            self.finished = True
        return self.summary
