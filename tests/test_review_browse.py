"""Browsing a profile's cards: search by the question's words, topic, data set or note; a
suspended card is never due until unsuspended; a reset card is new again and due now, its
past reviews kept in the log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.bank.notebook import set_note
from engine.exam.dataset import ensure_sample
from engine.review import due_cards, record_answer, stats
from engine.review.browse import browse, reset, suspend
from engine.review.cards import load_card, reviews

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def answered(store, n: int = 3) -> tuple[str, list[dict]]:
    dataset = ensure_sample(store)
    items = store.items(dataset)[:n]
    for i, item in enumerate(items):
        record_answer(store, "exam", dataset, item, i == 1, seconds=10, now=T0)
    return dataset, items


def test_search_by_question_words_topic_and_note(store):
    dataset, items = answered(store)
    assert [r.card.item_key for r in browse(store, "default")] == [
        str(i["id"])
        for i in (items[0], items[2], items[1])  # the missed ones due first
    ]
    words = items[2]["question"][:4]
    assert [r.card.item_key for r in browse(store, "default", words)] == [str(items[2]["id"])]
    assert browse(store, "default", items[0]["options"][1])[0].card.item_key == str(items[0]["id"])
    set_note(store, "default", "exam", dataset, str(items[1]["id"]), "Warfarin: vitamin K")
    found = browse(store, "default", "VITAMIN warfarin")
    assert [(r.card.item_key, r.note) for r in found] == [
        (str(items[1]["id"]), "Warfarin: vitamin K")
    ]
    assert browse(store, "default", "no such words anywhere") == []
    assert browse(store, "someone-else") == []


def test_a_suspended_card_is_never_due_until_unsuspended(store):
    dataset, items = answered(store)
    later = T0 + timedelta(days=400)
    assert len(due_cards(store, "default", later)) == 3
    card = browse(store, "default")[0].card
    suspend(store, card)
    assert card.suspended and load_card(store, "default", dataset, card.item_key).suspended
    assert card.item_key not in {c.item_key for c in due_cards(store, "default", later)}
    assert len(browse(store, "default")) == 3  # still listed
    assert stats(store, "default", later)["due_now"] == 2  # and not counted due
    record_answer(store, "exam", dataset, items[0], True, seconds=5, now=T0)  # answered again
    assert load_card(store, "default", dataset, str(items[0]["id"])).suspended
    suspend(store, card, False)
    assert len(due_cards(store, "default", later)) == 3


def test_reset_makes_a_card_new_and_due_now_keeping_its_reviews(store):
    dataset, items = answered(store)
    right = load_card(store, "default", dataset, str(items[1]["id"]))
    assert right.reps == 1 and right.due > T0 + timedelta(days=1)
    now = T0 + timedelta(hours=2)
    reset(store, right, now)
    again = load_card(store, "default", dataset, str(items[1]["id"]))
    assert again.state == "learning" and again.reps == 0 and again.due == now
    assert again.last_correct is None and again.memory.stability is None
    assert again.item_key in {c.item_key for c in due_cards(store, "default", now)}
    assert len([r for r in reviews(store, "default") if r["card_id"] == again.id]) == 1
