"""The review queue: the cards due now, and a review session that asks them.

A card counts as due once its due time is at most :data:`~engine.review.scheduling.LEARN_AHEAD`
away, so a question missed a minute ago is due at once. A session asks the soonest due card
first; a card answered wrong comes back in the same session once the others are done, as in
Anki, until the person stops or nothing is due.

>>> # session = ReviewSession(store, profile="default")
>>> # shown = session.next_card(); feedback = session.answer("B"); session.rate()  # suggested
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from fsrs import Rating

from engine.bank.notebook import REASONS, entries
from engine.errors import UserError
from engine.review.cards import ReviewCard, cards, face, items_of
from engine.review.profiles import DEFAULT_PROFILE
from engine.review.scheduling import (
    LEARN_AHEAD,
    next_intervals,
    review,
    short_interval,
    suggest_rating,
    utcnow,
)
from engine.store.store import Store
from engine.types import Face

if TYPE_CHECKING:
    from engine.types import JSONDict

#: What may separate the letters of an answer ("A + D", "a, d", "a et d").
SEPARATORS = re.compile(r"\b(?:et|and)\b|[\s+,;/&|]", re.IGNORECASE)


class ReviewError(UserError):
    """A request the review session cannot serve (no card shown, bad letters…)."""


def due_cards(
    store: Store,
    profile: str = DEFAULT_PROFILE,
    now: datetime | None = None,
    activity: str | None = None,
) -> list[ReviewCard]:
    """The profile's cards due now (within the learn-ahead time), soonest first."""
    return cards(store, profile, activity=activity, due_by=(now or utcnow()) + LEARN_AHEAD)


class DueBlock(TypedDict):
    """What is due of one activity: how many cards, and how many per topic."""

    count: int
    by_topic: dict[str, int]


class DueSummary(TypedDict):
    """What is due now (see :func:`due_summary`)."""

    profile: str
    count: int
    by_activity: dict[str, DueBlock]
    cards: list[JSONDict]


class SessionSummary(TypedDict):
    """A review session so far (see :meth:`ReviewSession.summary`)."""

    profile: str
    reviewed: int
    correct: int
    again: int
    due_left: int


def due_summary(
    store: Store, profile: str = DEFAULT_PROFILE, now: datetime | None = None
) -> DueSummary:
    """``{profile, count, by_activity: {activity: {count, by_topic}}, cards: [...]}``:
    what is due now, counted by activity and topic, each card with its question."""
    due = due_cards(store, profile, now)
    items = items_of(store, due)
    by_activity: dict[str, DueBlock] = {}
    listed = []
    for card in due:
        block = by_activity.setdefault(card.activity, {"count": 0, "by_topic": {}})
        block["count"] += 1
        topic = card.topic or "—"
        block["by_topic"][topic] = block["by_topic"].get(topic, 0) + 1
        item = items[(card.dataset, card.item_key)]
        listed.append({**card.as_dict(), "question": item["question"]})
    return {"profile": profile, "count": len(due), "by_activity": by_activity, "cards": listed}


@dataclass
class Shown:
    """A card as the session shows it (the answer is in ``face.gold``: show it only after)."""

    card: ReviewCard
    face: Face
    position: int  # 1-based count of cards shown in this session
    due_left: int  # cards due now, this one included

    @property
    def activity(self) -> str:
        return self.card.activity


@dataclass
class ReviewFeedback:
    """The verdict on one answer and the rating suggested for it."""

    key: str
    activity: str
    chosen: list[str]
    gold: list[str]
    correct: bool
    explanation: str
    seconds: float
    suggested: str  # again, hard, good

    def as_dict(self) -> JSONDict:
        return asdict(self)


def _letters(response: str | Iterable[str] | None, face_: Face) -> list[str]:
    """The letters of an answer ("B", "a + d", ["A", "D"]); None or empty: skipped."""
    if response is None:
        return []
    if isinstance(response, str):
        letters = list(SEPARATORS.sub("", response).upper())
    else:
        letters = sorted({str(x).strip().upper() for x in response})
    bad = [x for x in letters if x not in face_.letters]
    if bad or (len(letters) > 1 and not face_.multi):
        allowed = ", ".join(face_.letters)
        raise ReviewError(
            f"answer with {'letters' if face_.multi else 'one'} of {allowed} (got {response!r})"
        )
    return sorted(set(letters))


class ReviewSession:
    """Asks the profile's due cards, one at a time: :meth:`next_card`, :meth:`answer`, then
    :meth:`rate` (the suggested rating unless another is given). ``limit`` stops after that
    many cards; ``activity`` keeps one activity's cards; ``why`` only the questions the
    student said they missed for that reason (:data:`engine.bank.notebook.REASONS`)."""

    def __init__(
        self,
        store: Store,
        profile: str = DEFAULT_PROFILE,
        *,
        activity: str | None = None,
        limit: int | None = None,
        why: str | None = None,
        now: Callable[[], datetime] = utcnow,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.profile = profile
        self.activity = activity
        self.limit = limit
        self.why = why
        if why is not None and why not in REASONS:
            raise ReviewError(f"unknown reason {why!r} (choose from {', '.join(REASONS)})")
        self._now = now
        self._clock = clock
        self.shown: Shown | None = None
        self.feedback: ReviewFeedback | None = None
        self._shown_at = 0.0
        self.reviewed: list[tuple[ReviewFeedback, ReviewCard]] = []

    def due(self) -> list[ReviewCard]:
        found = due_cards(self.store, self.profile, self._now(), self.activity)
        if self.why is None:
            return found
        tagged = {
            (e.dataset, e.item_key)
            for e in entries(self.store, self.profile)
            if e.reason == self.why
        }
        return [c for c in found if (c.dataset, c.item_key) in tagged]

    def next_card(self) -> Shown | None:
        """The card to answer now (the same one until it is rated), or None when nothing is
        due or the limit is reached."""
        if self.shown is not None:
            return self.shown
        if self.limit is not None and len(self.reviewed) >= self.limit:
            return None
        due = self.due()
        if not due:
            return None
        asked = {fb.key for fb, _ in self.reviewed}
        # Cards not asked yet first; a card missed in this session comes back after them.
        card = next((c for c in due if f"{c.dataset}#{c.item_key}" not in asked), due[0])
        item = items_of(self.store, [card])[(card.dataset, card.item_key)]
        self.shown = Shown(card, face(card.activity, item), len(self.reviewed) + 1, len(due))
        self.feedback = None
        self._shown_at = self._clock()
        return self.shown

    def answer(self, response: str | Iterable[str] | None) -> ReviewFeedback:
        """Grade the answer to the card shown (None or "" skips it: wrong)."""
        if self.shown is None:
            raise ReviewError("no card is shown")
        if self.feedback is not None:
            raise ReviewError("this card is answered: rate it")
        f = self.shown.face
        chosen = _letters(response, f)
        correct = chosen == f.gold
        seconds = round(self._clock() - self._shown_at, 3)
        card = self.shown.card
        self.feedback = ReviewFeedback(
            f"{card.dataset}#{card.item_key}",
            card.activity,
            chosen,
            f.gold,
            correct,
            f.explanation,
            seconds,
            suggest_rating(correct, seconds).name.lower(),
        )
        return self.feedback

    def rate(self, rating: Rating | int | str | None = None) -> ReviewCard:
        """Schedule the answered card with ``rating`` (default: the suggested one) and return
        it with its next due time."""
        if self.shown is None or self.feedback is None:
            raise ReviewError("answer the card before rating it")
        fb = self.feedback
        card = review(
            self.store,
            self.shown.card,
            rating if rating is not None else fb.suggested,
            correct=fb.correct,
            seconds=fb.seconds,
            suggested=Rating[fb.suggested.capitalize()],
            now=self._now(),
        )
        self.reviewed.append((fb, card))
        self.shown = None
        self.feedback = None
        return card

    def intervals(self) -> dict[str, str]:
        """After an answer, how long the card would wait after each rating, in Anki's short
        words ("10m", "3d"): what the rating buttons show."""
        if self.shown is None or self.feedback is None:
            raise ReviewError("answer the card before rating it")
        waits = next_intervals(self.shown.card, self._now())
        return {name: short_interval(wait) for name, wait in waits.items()}

    def summary(self) -> SessionSummary:
        """``{profile, reviewed, correct, again, due_left}``."""
        return {
            "profile": self.profile,
            "reviewed": len(self.reviewed),
            "correct": sum(fb.correct for fb, _ in self.reviewed),
            "again": sum(c.last_rating == int(Rating.Again) for _, c in self.reviewed),
            "due_left": len(self.due()),
        }
