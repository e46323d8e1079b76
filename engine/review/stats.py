"""Review statistics of a profile: cards and cards learned, retention, due cards per day for
the next days, and mastery by question type and category.

* **learned** — cards in FSRS's review state whose latest answer was right.
* **retention** — of the reviews of cards in the review state (answered after an interval of
  days, not while still learning), the percent answered right: Anki's "true retention".
* **mastery** — per topic a card is labelled with (``topic``), then per value of each
  question type field, the percent of its cards whose latest answer was right.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, NotRequired, TypedDict

from fsrs import State

from engine.review.cards import ReviewCard, cards, items_of, reviews, topics
from engine.review.profiles import DEFAULT_PROFILE
from engine.review.scheduling import LEARN_AHEAD, utcnow
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.types import JSONDict

DAYS = 14


class DayDue(TypedDict):
    """How many cards fall due on one day (ISO date)."""

    date: str
    due: int


class MasteryCell(TypedDict):
    """The cards of one topic value: how many, how many mastered, and the share (%)."""

    n: int
    mastered: int
    mastery: NotRequired[float | None]


#: ``{activity: {field: {value: cell}}}``.
Mastery = dict[str, dict[str, dict[str, MasteryCell]]]
#: The field of :func:`mastery` holding each card's own topic, as its card is labelled.
TOPIC = "topic"


def _percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def due_per_day(all_cards: list[ReviewCard], now: datetime, days: int = DAYS) -> list[DayDue]:
    """``[{date, due}]`` for today and the next ``days - 1`` days in ``now``'s time zone;
    today's count holds the overdue cards too, and those due now (within
    :data:`~engine.review.scheduling.LEARN_AHEAD`, as ``due_now`` counts them: a card due at
    00:05 is today's at 23:50)."""
    tz = now.tzinfo or UTC
    today = now.astimezone(tz).date()
    due_by = now + LEARN_AHEAD
    counts = [0] * days
    for card in all_cards:
        offset = 0 if card.due <= due_by else (card.due.astimezone(tz).date() - today).days
        if offset < days:
            counts[max(0, offset)] += 1
    return [
        {"date": (today + timedelta(days=i)).isoformat(), "due": n} for i, n in enumerate(counts)
    ]


def mastery(store: Store, all_cards: list[ReviewCard]) -> Mastery:
    """``{activity: {field: {value: {n, mastered, mastery}}}}``, values sorted by mastery."""
    items = items_of(store, all_cards)
    out: Mastery = {}
    for card in all_cards:
        fields = topics(card.activity, items[(card.dataset, card.item_key)])
        # first the topic a card is labelled with (its most specific field naming one)
        fields = {TOPIC: card.topic or "other", **fields}
        for name, value in fields.items():
            block = out.setdefault(card.activity, {}).setdefault(name, {})
            cell = block.setdefault(value, {"n": 0, "mastered": 0})
            cell["n"] += 1
            cell["mastered"] += bool(card.last_correct)
    for blocks in out.values():
        for name, values in blocks.items():
            for cell in values.values():
                cell["mastery"] = _percent(cell["mastered"], cell["n"])
            blocks[name] = dict(sorted(values.items(), key=lambda kv: (kv[1]["mastery"], kv[0])))
    return out


@dataclass
class ReviewStats:
    """A profile's review statistics (see the module's description): cards, reviews, the
    percent of the reviews answered right (``accuracy``) and of those after an interval
    (``retention``), due cards per day, and by activity, mastery."""

    profile: str
    cards: int
    learned: int
    due_now: int
    reviews: int
    accuracy: float | None
    retention: float | None
    retention_n: int
    due_per_day: list[DayDue]
    by_activity: dict[str, dict[str, int]]
    mastery: Mastery

    def as_dict(self) -> JSONDict:
        return asdict(self)


def stats(
    store: Store, profile: str = DEFAULT_PROFILE, now: datetime | None = None, days: int = DAYS
) -> JSONDict:
    """The profile's review statistics as a dict (:class:`ReviewStats`' fields)."""
    return review_stats(store, profile, now, days).as_dict()


def review_stats(
    store: Store, profile: str = DEFAULT_PROFILE, now: datetime | None = None, days: int = DAYS
) -> ReviewStats:
    """The profile's review statistics (see the module's description)."""
    now = now or utcnow().astimezone()
    all_cards = cards(store, profile)
    log = reviews(store, profile)
    mature = [r for r in log if r["state_before"] == int(State.Review)]
    due_by = now + LEARN_AHEAD
    active = [c for c in all_cards if not c.suspended]  # a suspended card is never due
    by_activity: dict[str, dict[str, int]] = {}
    for card in all_cards:
        block = by_activity.setdefault(card.activity, {"cards": 0, "learned": 0, "due": 0})
        block["cards"] += 1
        block["learned"] += _learned(card)
        block["due"] += card.due <= due_by and not card.suspended
    return ReviewStats(
        profile=profile,
        cards=len(all_cards),
        learned=sum(_learned(c) for c in all_cards),
        due_now=sum(c.due <= due_by for c in active),
        reviews=len(log),
        accuracy=_percent(sum(bool(r["correct"]) for r in log), len(log)),
        retention=_percent(sum(bool(r["correct"]) for r in mature), len(mature)),
        retention_n=len(mature),
        due_per_day=due_per_day(active, now, days),
        by_activity=by_activity,
        mastery=mastery(store, all_cards),
    )


def _learned(card: ReviewCard) -> bool:
    return card.memory.state == State.Review and bool(card.last_correct)
