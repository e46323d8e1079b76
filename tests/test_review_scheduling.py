"""Scheduling with FSRS on a fixed clock: what a wrong, a slow and a right answer do to a
card, how intervals grow, what is due, a review session, and the statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Rating

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.french.dataset import ensure_sample as ensure_french
from engine.review import ReviewError, ReviewSession, due_cards, due_summary, record_answer, stats
from engine.review.cards import load_card
from engine.review.scheduling import make_scheduler, review, suggest_rating

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def bank(store):
    name = ensure_sample(store)
    return name, store.items(name)


def test_the_suggested_rating():
    assert suggest_rating(False, 3.0) == Rating.Again
    assert suggest_rating(True, 300.0) == Rating.Hard
    assert suggest_rating(True, 20.0) == Rating.Good
    assert suggest_rating(True) == Rating.Good  # no time measured


def test_a_wrong_answer_is_due_sooner_than_a_right_one(store, bank):
    dataset, items = bank
    wrong = record_answer(store, "exam", dataset, items[0], False, seconds=10, now=T0)
    slow = record_answer(store, "exam", dataset, items[1], True, seconds=200, now=T0)
    right = record_answer(store, "exam", dataset, items[2], True, seconds=10, now=T0)
    assert wrong.due == T0 + timedelta(minutes=1) and wrong.state == "learning"
    assert wrong.due < slow.due < right.due
    assert right.state == "review" and right.due - T0 >= timedelta(days=1)
    assert [c.last_rating for c in (wrong, slow, right)] == [1, 2, 3]
    # Due now: the missed and the slow one (within the learn-ahead time), not the right one.
    assert [c.item_key for c in due_cards(store, now=T0)] == [items[0]["id"], items[1]["id"]]
    assert len(due_cards(store, now=right.due)) == 3


def test_intervals_grow_on_success(store, bank):
    dataset, items = bank
    scheduler = make_scheduler(fuzz=False)
    card = record_answer(store, "exam", dataset, items[0], True, seconds=5, now=T0)
    intervals, when = [card.due - T0], card.due
    for _ in range(4):
        card = review(store, card, Rating.Good, correct=True, now=when, scheduler=scheduler)
        intervals.append(card.due - when)
        when = card.due
    assert all(b > a for a, b in zip(intervals, intervals[1:], strict=False)), intervals
    assert card.reps == 5 and card.lapses == 0
    # A lapse: relearning, 10 minutes, counted.
    card = review(store, card, Rating.Again, correct=False, now=when, scheduler=scheduler)
    assert card.state == "relearning" and card.lapses == 1
    assert card.due == when + timedelta(minutes=10)
    stored = load_card(store, "default", dataset, items[0]["id"])
    assert stored is not None and stored.due == card.due and stored.lapses == 1


def test_every_answer_of_a_session_reviews_its_card(store, bank):
    dataset, items = bank
    session = ExamSitting(store, dataset, limit=3)
    for i in range(3):
        q = session.next_question()
        session.answer(q["answer"] if i == 1 else None)  # skip, right, skip
    session.finish()
    due = due_summary(store)
    assert [c["key"] for c in due["cards"]] == [items[0]["id"], items[2]["id"]]
    assert due["count"] == 2 and due["by_activity"]["exam"]["count"] == 2
    assert store.run(session.run_id)["settings"]["profile"] == "default"


def test_a_review_session_with_a_fixed_clock(store, bank):
    dataset, items = bank
    for item in items[:2]:
        record_answer(store, "exam", dataset, item, False, seconds=5, now=T0)
    ticks = iter([0.0, 4.0, 10.0, 200.0, 300.0, 305.0, 400.0])
    session = ReviewSession(store, now=lambda: T0, clock=lambda: next(ticks))
    shown = session.next_card()
    assert shown is not None and shown.card.item_key == items[0]["id"] and shown.due_left == 2
    with pytest.raises(ReviewError, match="answer with one of A, B, C, D, E"):
        session.answer("A + B")
    fb = session.answer(items[0]["answer"].lower())
    assert fb.correct and fb.seconds == 4.0 and fb.suggested == "good"
    assert fb.explanation == items[0]["explanation"]
    card = session.rate("easy")  # the person's rating wins
    assert card.last_rating == 4 and card.state == "review"
    shown = session.next_card()
    assert shown.card.item_key == items[1]["id"]
    fb = session.answer(items[1]["answer"])
    assert fb.correct and fb.suggested == "hard"  # 190 s: slow
    card = session.rate()
    assert card.state == "learning"  # Hard repeats the learning step: back in 1.5 minutes
    shown = session.next_card()
    assert shown.card.item_key == items[1]["id"] and shown.position == 3
    assert session.answer(items[1]["answer"]).suggested == "good"
    assert session.rate().state == "review"
    assert session.next_card() is None
    summary = session.summary()
    assert (summary["reviewed"], summary["correct"], summary["due_left"]) == (3, 3, 0)


def test_french_cards_take_several_letters(store):
    dataset = ensure_french(store)["dataset"]
    item = store.items(dataset)[0]  # gold: a, b, c
    record_answer(store, "french", dataset, item, False, now=T0)
    session = ReviewSession(store, now=lambda: T0)
    shown = session.next_card()
    assert shown.face.multi and shown.face.gold == ["A", "B", "C"]
    fb = session.answer("a + b")
    assert not fb.correct and fb.suggested == "again"
    card = session.rate()
    assert card.state == "learning"
    # Missed again: it comes back in the same session.
    shown = session.next_card()
    assert shown.card.item_key == item["id"] and shown.position == 2
    assert session.answer("A, B et C").correct


def test_statistics_on_a_fixed_clock(store, bank):
    dataset, items = bank
    scheduler = make_scheduler(fuzz=False)
    right = record_answer(store, "exam", dataset, items[0], True, seconds=5, now=T0)
    record_answer(store, "exam", dataset, items[1], False, seconds=5, now=T0)
    s = stats(store, now=T0)
    assert (s["cards"], s["learned"], s["due_now"], s["reviews"]) == (2, 1, 1, 2)
    assert s["retention"] is None and s["accuracy"] == 50.0
    days = s["due_per_day"]
    assert len(days) == 14 and days[0] == {"date": "2026-03-02", "due": 1}
    offset = (right.due.date() - T0.date()).days
    assert days[offset]["due"] == 1 and sum(d["due"] for d in days) == 2
    # A review after an interval counts for retention.
    review(store, right, Rating.Again, correct=False, now=right.due, scheduler=scheduler)
    s = stats(store, now=right.due)
    assert s["retention"] == 0.0 and s["retention_n"] == 1 and s["learned"] == 0
    type3 = s["mastery"]["exam"]["type3"]
    assert {v["n"] for v in type3.values()} == {1}
    assert all(v["mastery"] == 0.0 for v in type3.values())


def test_a_card_due_now_just_before_midnight_is_due_today(store, bank):
    """A card missed at 23:59:30 is back a minute later, after midnight: due now (within the
    learning-ahead minutes), so it is today's, as ``due_now`` says, not tomorrow's."""
    dataset, items = bank
    late = datetime(2026, 3, 2, 23, 59, 30, tzinfo=UTC)
    card = record_answer(store, "exam", dataset, items[0], False, seconds=5, now=late)
    assert card.due.date() == late.date() + timedelta(days=1)
    s = stats(store, now=late + timedelta(seconds=10))
    assert s["due_now"] == 1
    assert s["due_per_day"][0] == {"date": "2026-03-02", "due": 1}
    assert sum(d["due"] for d in s["due_per_day"]) == 1


def test_next_intervals_in_ankis_short_words():
    from engine.review.scheduling import short_interval

    words = [short_interval(timedelta(seconds=s)) for s in (20, 60, 600, 5 * 3600, 3 * 86400)]
    assert words == ["<1m", "1m", "10m", "5h", "3d"]
    assert short_interval(timedelta(days=64)) == "2.1mo"
    assert short_interval(timedelta(days=365)) == "1y"


def test_next_intervals_grow_with_the_rating(store, bank):
    from engine.review.scheduling import next_intervals

    dataset, items = bank
    card = record_answer(store, "exam", dataset, items[0], True, seconds=5.0, now=T0)
    later = card.due
    waits = next_intervals(card, later)
    assert waits["again"] < waits["hard"] <= waits["good"] <= waits["easy"]
    reviewed = review(store, card, "good", correct=True, now=later, scheduler=make_scheduler(False))
    assert reviewed.due - later == waits["good"]  # what the button said is what happens


def test_easy_waits_longer_than_good_while_a_card_is_learned(store):
    from engine.review.scheduling import next_intervals, short_interval

    dataset = ensure_sample(store)
    item = store.items(dataset)[0]
    now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    card = record_answer(store, "exam", dataset, item, correct=False, now=now)  # learning
    later = now + timedelta(minutes=2)
    waits = next_intervals(card, later)
    assert waits["good"] == timedelta(days=1)  # FSRS's first interval, for both
    assert waits["easy"] > waits["good"]
    assert [short_interval(waits[k]) for k in ("good", "easy")] == ["1d", "2d"]
    easy = review(store, card, "easy", correct=True, now=later)
    assert easy.due - later >= timedelta(days=2) - timedelta(seconds=1)  # as the button said
