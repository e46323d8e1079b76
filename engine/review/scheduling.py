"""Scheduling with FSRS (the ``fsrs`` package, the scheduler Anki uses).

Every answer a person gives is a review of the question's card. The rating is suggested from
the answer: wrong (or skipped) is **Again**, right but slower than :data:`SLOW_S` seconds is
**Hard**, right otherwise is **Good**; the person may give another one (**Easy** only comes
that way). A question missed comes back a minute later (one learning step), one answered
right comes back days later, and the interval grows with each success.

>>> # card = record_answer(store, "exam", "cpe-test", item, correct=False, seconds=12.0)
>>> # card.state, card.due
"""

from __future__ import annotations

from copy import deepcopy
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from fsrs import Rating, Scheduler, State

from engine.review.cards import ReviewCard, card_for, log_review, save_card
from engine.review.profiles import DEFAULT_PROFILE
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.types import Row

#: A right answer slower than this (seconds) is rated Hard.
SLOW_S = 90.0
#: Cards due within this much time count as due now (Anki's learn-ahead limit).
LEARN_AHEAD = timedelta(minutes=20)
#: Easy waits at least this much longer than Good, as in Anki: while a card is still being
#: learned FSRS may give both the same first interval (a day), and Easy would mean nothing.
EASY_BEYOND_GOOD = timedelta(days=1)
RATINGS = {"again": Rating.Again, "hard": Rating.Hard, "good": Rating.Good, "easy": Rating.Easy}


def make_scheduler(fuzz: bool = True) -> Scheduler:
    """The FSRS scheduler medexam uses: 90 % desired retention, one 1-minute learning step
    (the question was just seen in full), one 10-minute relearning step."""
    return Scheduler(
        desired_retention=0.9,
        learning_steps=(timedelta(minutes=1),),
        relearning_steps=(timedelta(minutes=10),),
        enable_fuzzing=fuzz,
    )


SCHEDULER = make_scheduler()
#: The same without fuzz: the intervals shown before a rating (:func:`next_intervals`).
PREVIEW = make_scheduler(fuzz=False)


def utcnow() -> datetime:
    return datetime.now(UTC)


def suggest_rating(correct: bool, seconds: float | None = None, slow_s: float = SLOW_S) -> Rating:
    """Again when wrong, Hard when right but slow, Good when right in time."""
    if not correct:
        return Rating.Again
    if seconds is not None and seconds > slow_s:
        return Rating.Hard
    return Rating.Good


def parse_rating(value: Rating | int | str) -> Rating:
    """A rating from its number (1-4) or name (again, hard, good, easy; any case)."""
    if isinstance(value, Rating):
        return value
    text = str(value).strip().lower()
    if text in RATINGS:
        return RATINGS[text]
    if text.isdigit() and 1 <= int(text) <= 4:
        return Rating(int(text))
    raise ValueError(f"a rating is 1-4 or again, hard, good, easy (got {value!r})")


def review(
    store: Store,
    card: ReviewCard,
    rating: Rating | int | str,
    *,
    correct: bool,
    seconds: float | None = None,
    suggested: Rating | None = None,
    source: str = "review",
    run_id: int | None = None,
    now: datetime | None = None,
    scheduler: Scheduler | None = None,
) -> ReviewCard:
    """Review ``card`` with ``rating`` at ``now``, store its new state and the review log
    entry in one transaction, and return it."""
    rating = parse_rating(rating)
    now = now or utcnow()
    before = card.memory.state
    good_wait = _wait(card, Rating.Good, now.astimezone(UTC)) if rating == Rating.Easy else None
    memory, _log = (scheduler or SCHEDULER).review_card(
        deepcopy(card.memory),
        rating,
        review_datetime=now.astimezone(UTC),
        review_duration=None if seconds is None else int(seconds * 1000),
    )
    if good_wait is not None and memory.due - now <= good_wait:  # Easy beyond Good
        memory.due = now + good_wait + EASY_BEYOND_GOOD
    card.memory = memory
    card.reps += 1
    if rating == Rating.Again and before == State.Review:
        card.lapses += 1
    card.last_rating = int(rating)
    card.last_correct = bool(correct)
    with store.transaction():
        save_card(store, card)
        log_review(
            store,
            card,
            reviewed=now.astimezone(UTC).isoformat(timespec="seconds"),
            rating=int(rating),
            suggested=int(suggested if suggested is not None else rating),
            correct=int(bool(correct)),
            seconds=seconds,
            source=source,
            run_id=run_id,
            state_before=int(before),
        )
    return card


def record_answer(
    store: Store,
    activity: str,
    dataset: str,
    item: Row,
    correct: bool,
    *,
    seconds: float | None = None,
    run_id: int | None = None,
    profile: str | None = None,
    now: datetime | None = None,
) -> ReviewCard:
    """The answer a person just gave to ``item`` in a session, as a review of its card
    (created on the first answer) with the suggested rating. The card is read and written
    in one transaction holding the write lock: sessions answering it at once take turns."""
    now = now or utcnow()
    profile = profile or DEFAULT_PROFILE
    rating = suggest_rating(correct, seconds)
    with store.transaction(immediate=True):
        card = card_for(store, profile, activity, dataset, item, now)
        return review(
            store,
            card,
            rating,
            correct=correct,
            seconds=seconds,
            suggested=rating,
            source=activity,
            run_id=run_id,
            now=now,
        )


def next_intervals(card: ReviewCard, now: datetime | None = None) -> dict[str, timedelta]:
    """How long ``card`` would wait after each rating given ``now`` (again, hard, good, easy),
    as Anki shows on its buttons: the scheduler's intervals before any fuzz, Easy's at least
    a day beyond Good's (:data:`EASY_BEYOND_GOOD`)."""
    now = (now or utcnow()).astimezone(UTC)
    waits = {name: _wait(card, rating, now) for name, rating in RATINGS.items()}
    waits["easy"] = max(waits["easy"], waits["good"] + EASY_BEYOND_GOOD)
    return waits


def _wait(card: ReviewCard, rating: Rating, now: datetime) -> timedelta:
    """How long FSRS (without fuzz) would make ``card`` wait after ``rating`` at ``now``."""
    return PREVIEW.review_card(deepcopy(card.memory), rating, review_datetime=now)[0].due - now


def short_interval(wait: timedelta) -> str:
    """An interval as Anki writes it on a button: "<1m", "10m", "5h", "3d", "2.1mo", "1.5y"."""
    minutes = wait.total_seconds() / 60
    if minutes < 1:
        return "<1m"
    days = minutes / 1440
    for size, unit in ((365, "y"), (30, "mo")):
        if days >= size:
            return f"{days / size:.1f}".removesuffix(".0") + unit
    for size, unit in ((1440, "d"), (60, "h"), (1, "m")):
        if minutes >= size:
            return f"{round(minutes / size)}{unit}"
    return "<1m"


def interval_text(card: ReviewCard, now: datetime | None = None) -> str:
    """When the card comes back, in words ("in 10 minutes", "in 3 days")."""
    seconds = (card.due - (now or utcnow())).total_seconds()
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        n = round(seconds / size)
        if n >= 1:
            return f"in {n} {unit}{'s' if n != 1 else ''}"
    return "now"
