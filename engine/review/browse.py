"""Browsing a profile's cards, as Anki's browser does: search them by the words of their
question, topic or data set; suspend a card (never due until it is unsuspended); reset one
(a new card, due now: its past reviews stay in the log); its note is the Notebook's
(:func:`engine.bank.notebook.set_note`).

>>> # rows = browse(store, "default", "warfarin")
>>> # suspend(store, rows[0].card, True); reset(store, rows[1].card)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fsrs import Card

from engine.bank.notebook import by_item
from engine.review.cards import ReviewCard, cards, face, items_of, save_card
from engine.review.scheduling import utcnow
from engine.store.store import Store


@dataclass
class CardRow:
    """A card as the browser lists it: the card, its question's text and the note on it."""

    card: ReviewCard
    question: str
    note: str


def browse(store: Store, profile: str, search: str = "") -> list[CardRow]:
    """The profile's cards, soonest due first; with ``search``, those whose question,
    options, topic, data set or note hold every one of its words (any case)."""
    found = cards(store, profile)
    items = items_of(store, found)
    notes = {d: by_item(store, profile, d) for d in {c.dataset for c in found}}
    words = search.casefold().split()
    rows = []
    for card in found:
        shown = face(card.activity, items[(card.dataset, card.item_key)])
        entry = notes[card.dataset].get(card.item_key)
        note = entry.note if entry is not None else ""
        text = " ".join([shown.question, *(t for _, t in shown.options), card.topic or ""])
        haystack = f"{text} {card.dataset} {note}".casefold()
        if all(w in haystack for w in words):
            rows.append(CardRow(card, shown.question, note))
    return rows


def suspend(store: Store, card: ReviewCard, suspended: bool = True) -> ReviewCard:
    """Suspend ``card`` (it is not due, whatever its date) or take the suspension away."""
    with store.transaction():
        store.db.execute("UPDATE cards SET suspended = ? WHERE id = ?", [int(suspended), card.id])
    card.suspended = suspended
    return card


def reset(store: Store, card: ReviewCard, now: datetime | None = None) -> ReviewCard:
    """Make ``card`` new again, due ``now``: its scheduling is forgotten (its reviews stay in
    the log, and its suspension as it is)."""
    card.memory = Card(card_id=card.id, due=now or utcnow())
    card.reps = card.lapses = 0
    card.last_rating = card.last_correct = None
    with store.transaction():
        save_card(store, card)
    return card
