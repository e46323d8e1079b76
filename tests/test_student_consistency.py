"""What a student reads agrees with itself: a score and its interval in one precision, the
wordings of an English report in English, a session ended early called so in Past sessions
as in Results."""

from __future__ import annotations

import pytest

from engine.core.scoring import Scored
from engine.exam.dataset import ensure_sample
from engine.exam.runner import run_exam
from engine.exam.settings import ExamSettings
from engine.reports import build_report, render
from engine.reports.render import fmt_cell


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ({"value": 4.9, "low": 0.1, "high": 35.8}, "4.9 [0.1, 35.8]"),
        ({"value": 0.45, "low": 0.3, "high": 0.6}, "0.450 [0.300, 0.600]"),
        ({"value": 0.95, "low": 0.9, "high": 1.0}, "0.950 [0.900, 1.000]"),
        ({"value": 45.2, "low": 38.1, "high": 52.4, "n": 3}, "45.2 [38.1, 52.4] (3)"),
        ({"value": 12.0, "low": 0.0, "high": 40.25}, "12.0 [0.0, 40.2]"),
    ],
)
def test_a_score_and_its_interval_in_one_precision(cell, said):
    assert fmt_cell(cell) == said


def test_a_score_of_zero_is_written_as_the_scores_beside_it(store):
    """A by-type table's 0% reads "0.0 (1)" beside "100.0 (1)", as the accuracy table's
    "0.0 [0.0, 79.3]" and ``experiment show``'s "0.0", never a bare "0"."""
    assert [fmt_cell({"value": v, "n": 1}) for v in (0.0, 100.0)] == ["0.0 (1)", "100.0 (1)"]
    assert fmt_cell({"value": 0.0, "low": 0.0, "high": 79.3}) == "0.0 [0.0, 79.3]"
    dataset = ensure_sample(store)
    run_id = store.start_run("exam", dataset, "m", {"method": "generate"})
    key = str(store.items(dataset)[0]["id"])
    scored = [Scored("exam.letter", 1, {"correct": False})]
    store.add_answer(run_id, key, response="答案：E", chosen="E", gold="A", scores=scored)
    store.finish_run(run_id, {"accuracy": 0.0, "n": 1})
    text = render(build_report(store, [run_id]), "text")
    assert "0.0 (1)" in text and " 0 (1)" not in text


def test_an_english_report_words_the_wordings_in_english(store, scripted_pool):
    dataset = ensure_sample(store)
    done = run_exam(store, dataset, ExamSettings(method="logprob", limit=8), pool=scripted_pool())
    text = render(build_report(store, [done["run_id"]]), "md")
    wording = text[text.index("Accuracy by wording") :].split("\n\n")[1]
    assert "choose the true (正向)" in wording or "choose the false (反向)" in wording
    head = wording.splitlines()[0]
    assert "| 正向 |" not in head and "| 反向 |" not in head


def test_a_card_is_charted_under_the_topic_it_is_labelled_with(store):
    from engine.review import record_answer, stats
    from engine.review.cards import load_card
    from gui.widgets.qt_review import mastery_rows

    dataset = ensure_sample(store)
    item = next(i for i in store.items(dataset) if i["type2"] == "数学计算题")  # type3: 其他
    record_answer(store, "exam", dataset, item, False)
    card = load_card(store, "default", dataset, item["id"])
    assert card.topic == "数学计算题"
    rows = mastery_rows(stats(store)["mastery"])
    assert [label for label, _pct, _n in rows] == ["Exam · 数学计算题"]


def test_where_i_stand_counts_a_card_answered_on_the_review_screen(store):
    from engine.bank.pools import pool_keys
    from engine.bank.standing import standing
    from engine.exam.person import ExamSitting
    from engine.review import ReviewSession

    dataset = ensure_sample(store)
    session = ExamSitting(store, dataset, limit=1)
    q = session.next_question()
    session.answer(next(x for x in "ABCDE" if x != q["answer"]))  # missed
    session.finish()

    def subject():
        return next(s for s in standing(store, "default", "exam").subjects if s.field == "type3")

    assert subject().score == 0.0
    assert pool_keys(store, "exam", dataset, "default", "incorrect") == [q["id"]]
    review = ReviewSession(store)
    shown = review.next_card()
    assert shown.card.item_key == q["id"]
    assert review.answer(q["answer"]).correct
    review.rate()
    assert subject().score == 100.0  # by the latest answer: the review's
    assert pool_keys(store, "exam", dataset, "default", "correct") == [q["id"]]
