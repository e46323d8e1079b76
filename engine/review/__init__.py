"""Spaced-repetition review of what a person answered, per profile.

In pipeline order: :mod:`~engine.review.profiles` (who), :mod:`~engine.review.cards` (a card
per question answered, stored with its FSRS state), :mod:`~engine.review.scheduling` (ratings
and the FSRS scheduler; :func:`record_answer` is what the exam and French sessions call for
every answer), :mod:`~engine.review.queue` (what is due, a review session),
:mod:`~engine.review.stats` (retention, due per day, mastery) and :mod:`~engine.review.anki`
(Anki decks, imported only when used).
"""

from __future__ import annotations

from engine.review.cards import ReviewCard
from engine.review.profiles import (
    DEFAULT_PROFILE,
    ProfileError,
    add_profile,
    profiles,
    resolve,
    run_profile,
)
from engine.review.queue import ReviewError, ReviewSession, due_cards, due_summary
from engine.review.scheduling import record_answer, suggest_rating
from engine.review.stats import stats
from engine.types import Face

__all__ = [
    "DEFAULT_PROFILE",
    "Face",
    "ProfileError",
    "ReviewCard",
    "ReviewError",
    "ReviewSession",
    "add_profile",
    "due_cards",
    "due_summary",
    "profiles",
    "record_answer",
    "resolve",
    "run_profile",
    "stats",
    "suggest_rating",
]
