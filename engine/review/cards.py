"""Cards: one per profile and question answered, holding its FSRS memory state, and the
log of every review. What a card shows (question, options, answer, explanation, topics) is
read from the question as stored in its data set.

Times are stored as ISO 8601 text in UTC (``2026-11-30T06:30:00+00:00``), so they sort as
text; a card whose data set was deleted is left out of every listing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fsrs import Card, State

from engine.store.store import Store

if TYPE_CHECKING:
    from engine.types import Face, Item, JSONDict, Row, Scalar


def topic_fields(activity: str) -> tuple[str, ...]:
    """Item fields that name a question's topic, most specific first (``Activity.topic_fields``)."""
    from engine.activities import activities

    found = activities().get(activity)
    return found.topic_fields if found is not None else ()


def mastery_fields(activity: str) -> tuple[str, ...]:
    """Item fields mastery is reported by: question type, category (``Activity.mastery_fields``)."""
    from engine.activities import activities

    found = activities().get(activity)
    return found.mastery_fields if found is not None else ()


def iso(when: datetime) -> str:
    """``when`` as stored: ISO text in UTC, to the second."""
    return when.astimezone(UTC).isoformat(timespec="seconds")


def from_iso(text: str | None) -> datetime | None:
    return None if not text else datetime.fromisoformat(text).astimezone(UTC)


@dataclass
class ReviewCard:
    """A question's card in one profile: where it is in FSRS and how it was last answered."""

    profile: str
    activity: str
    dataset: str
    item_key: str
    topic: str | None
    memory: Card
    id: int | None = None
    reps: int = 0
    lapses: int = 0
    last_rating: int | None = None
    last_correct: bool | None = None
    suspended: bool = False  # never due until unsuspended (:mod:`engine.review.browse`)

    @property
    def due(self) -> datetime:
        return self.memory.due

    @property
    def state(self) -> str:
        """``learning``, ``review`` or ``relearning``."""
        return self.memory.state.name.lower()

    def as_dict(self) -> JSONDict:
        return {
            "id": self.id,
            "profile": self.profile,
            "activity": self.activity,
            "dataset": self.dataset,
            "key": self.item_key,
            "topic": self.topic,
            "state": self.state,
            "due": iso(self.due),
            "stability": self.memory.stability,
            "difficulty": self.memory.difficulty,
            "reps": self.reps,
            "lapses": self.lapses,
            "last_rating": self.last_rating,
            "last_correct": self.last_correct,
            "suspended": self.suspended,
        }


def topics(activity: str, item: Item) -> dict[str, str]:
    """The item's mastery fields that are set (``{"type2": "常识题", …}``)."""
    out = {}
    for name in mastery_fields(activity):
        value = item.get(name)
        if value not in (None, ""):
            out[name] = str(value)
    return out


#: Field values that name no topic ("other"): the next field is used instead.
NO_TOPIC = {"其他", "其它", "other", "others", "autre", "autres", "divers"}


def topic_of(activity: str, item: Row) -> str | None:
    """The item's topic: its most specific topic field that names one."""
    for name in topic_fields(activity) or ("category",):
        value = item.get(name)
        if value not in (None, "") and str(value).strip().lower() not in NO_TOPIC:
            return str(value)
    return None


def face(activity: str, item: Item) -> Face:
    """The front and back of ``item``'s card, as its activity draws it (``Activity.card``)."""
    from engine.activities import get_activity

    found = get_activity(activity)
    if not found.card:
        raise ValueError(f"{found.name} items have no review cards")
    return found.card.load()(item)


# -- storage ---------------------------------------------------------------------------------

COLUMNS = (
    "id, profile, activity, dataset, item_key, topic, state, step, stability, difficulty, "
    "due, last_review, reps, lapses, last_rating, last_correct, suspended"
)


def _card(row: Row) -> ReviewCard:
    memory = Card(
        card_id=int(row["id"]),
        state=State(int(row["state"])),
        step=row["step"],
        stability=row["stability"],
        difficulty=row["difficulty"],
        due=from_iso(row["due"]),
        last_review=from_iso(row["last_review"]),
    )
    correct = row["last_correct"]
    return ReviewCard(
        row["profile"],
        row["activity"],
        row["dataset"],
        row["item_key"],
        row["topic"],
        memory,
        id=int(row["id"]),
        reps=int(row["reps"] or 0),
        lapses=int(row["lapses"] or 0),
        last_rating=row["last_rating"],
        last_correct=None if correct is None else bool(correct),
        suspended=bool(row["suspended"]),
    )


def new_card(profile: str, activity: str, dataset: str, item: Row, when: datetime) -> ReviewCard:
    """A card never reviewed yet, due ``when``."""
    memory = Card(card_id=0, due=when)
    return ReviewCard(profile, activity, dataset, str(item["id"]), topic_of(activity, item), memory)


def card_for(
    store: Store, profile: str, activity: str, dataset: str, item: Row, when: datetime
) -> ReviewCard:
    """``item``'s card in ``profile``: the stored one, else a new one due ``when``. Call it
    inside the transaction that saves the card (taking the write lock first), so that two
    sessions answering the same question at once review one card in turn."""
    card = load_card(store, profile, dataset, str(item["id"]))
    return card if card is not None else new_card(profile, activity, dataset, item, when)


def load_card(store: Store, profile: str, dataset: str, key: str) -> ReviewCard | None:
    rows = list(
        store.db.query(
            f"SELECT {COLUMNS} FROM cards WHERE profile = ? AND dataset = ? AND item_key = ?",
            [profile, dataset, str(key)],
        )
    )
    return _card(rows[0]) if rows else None


def save_card(store: Store, card: ReviewCard) -> ReviewCard:
    """Insert or update ``card`` (its ``id`` is set on insert); call inside a transaction.

    A new card whose question got a card from another session meanwhile updates that one:
    a profile has one card per question, whoever writes it first."""
    m = card.memory
    values = {
        "profile": card.profile,
        "activity": card.activity,
        "dataset": card.dataset,
        "item_key": card.item_key,
        "topic": card.topic,
        "state": int(m.state),
        "step": m.step,
        "stability": m.stability,
        "difficulty": m.difficulty,
        "due": iso(m.due),
        "last_review": iso(m.last_review) if m.last_review else None,
        "reps": card.reps,
        "lapses": card.lapses,
        "last_rating": card.last_rating,
        "last_correct": None if card.last_correct is None else int(card.last_correct),
        "updated": iso(datetime.now(UTC)),
    }
    if card.id is None:
        values["created"] = values["updated"]
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        updates = ", ".join(f"{k} = excluded.{k}" for k in values if k != "created")
        store.db.execute(
            f"INSERT INTO cards ({names}) VALUES ({marks}) "
            f"ON CONFLICT (profile, dataset, item_key) DO UPDATE SET {updates}",
            list(values.values()),
        )
        found = store.db.execute(
            "SELECT id FROM cards WHERE profile = ? AND dataset = ? AND item_key = ?",
            [card.profile, card.dataset, card.item_key],
        ).fetchone()
        card.id = int(found[0])
    else:
        sets = ", ".join(f"{k} = ?" for k in values)
        store.db.execute(f"UPDATE cards SET {sets} WHERE id = ?", [*values.values(), card.id])
    card.memory.card_id = card.id
    return card


def log_review(store: Store, card: ReviewCard, **fields: Scalar) -> None:
    """Append one review of ``card`` to its log (rating, suggested, correct, seconds, source,
    run_id, state_before, reviewed); call inside a transaction."""
    values = {"card_id": card.id, "due": iso(card.due), **fields}
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    store.db.execute(f"INSERT INTO card_reviews ({names}) VALUES ({marks})", list(values.values()))


def cards(
    store: Store,
    profile: str,
    *,
    activity: str | None = None,
    due_by: datetime | None = None,
    only_missed: bool = False,
) -> list[ReviewCard]:
    """The profile's cards whose data set still exists, soonest due first; ``due_by``
    keeps those due by then (a suspended card never is), ``only_missed`` those whose latest
    answer was wrong."""
    where = ["c.profile = ?"]
    args: list[Scalar] = [profile]
    if activity is not None:
        where.append("c.activity = ?")
        args.append(activity)
    if due_by is not None:
        where.append("c.due <= ? AND c.suspended = 0")
        args.append(iso(due_by))
    if only_missed:
        where.append("c.last_correct = 0")
    cols = ", ".join(f"c.{c.strip()}" for c in COLUMNS.split(","))
    rows = store.db.query(
        f"SELECT {cols} FROM cards c JOIN datasets d ON d.name = c.dataset "
        f"JOIN items i ON i.dataset_id = d.id AND i.key = c.item_key "
        f"WHERE {' AND '.join(where)} ORDER BY c.due, c.id",
        args,
    )
    return [_card(r) for r in rows]


def reviews(store: Store, profile: str) -> list[Row]:
    """Every review of the profile's cards, oldest first."""
    return list(
        store.db.query(
            "SELECT r.*, c.activity, c.dataset, c.item_key FROM card_reviews r "
            "JOIN cards c ON c.id = r.card_id WHERE c.profile = ? ORDER BY r.id",
            [profile],
        )
    )


def items_of(store: Store, wanted: Iterable[ReviewCard]) -> dict[tuple[str, str], Item]:
    """The stored questions of ``wanted`` cards, by ``(dataset, key)``."""
    by_dataset: dict[str, set[str]] = {}
    for card in wanted:
        by_dataset.setdefault(card.dataset, set()).add(card.item_key)
    out: dict[tuple[str, str], Item] = {}
    for dataset, keys in by_dataset.items():
        ordered = sorted(keys)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = store.db.query(
                f"SELECT i.key, i.data FROM items i JOIN datasets d ON d.id = i.dataset_id "
                f"WHERE d.name = ? AND i.key IN ({marks})",
                [dataset, *chunk],
            )
            for row in rows:
                out[(dataset, row["key"])] = json.loads(row["data"])
    return out
