"""A person taking the sample exam: practice, timed, pass mark, review of missed questions."""

from __future__ import annotations

import json

import pytest

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting, SessionError, missed_items, session_result


class Clock:
    """A hand-driven clock, so timings are exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def test_practice_gives_feedback_after_each_question(store):
    dataset = ensure_sample(store)
    clock = Clock()
    session = ExamSitting(store, dataset, limit=3, clock=clock)
    assert session.mode == "practice" and session.time_left() is None
    first = session.next_question()
    clock.tick(12)
    fb = session.answer(first["answer"].lower())  # lower case is accepted
    assert fb.correct and fb.gold == first["answer"] and fb.seconds == 12
    assert fb.explanation == first["explanation"]
    second = session.next_question()
    wrong = next(letter for letter in "ABCDE" if letter != second["answer"])
    clock.tick(5)
    fb = session.answer(wrong)
    assert not fb.correct and fb.chosen == wrong
    with pytest.raises(SessionError, match="answer with one of"):
        session.answer("F")
    session.skip()
    assert session.next_question() is None
    result = session.finish()
    assert (result.n, result.answered, result.correct) == (3, 3, 1)
    assert result.score == pytest.approx(33.3) and not result.passed
    assert result.status == "finished"
    assert result.missed == [str(second["id"]), str(session.questions[2]["id"])]
    assert result.by_type["type1"]
    # Every answer was stored as it came, with its time.
    answers = store.answers(session.run_id)
    assert [a["latency_s"] for a in answers] == [12, 5, 0]
    run = store.run(session.run_id)
    assert run["runner"] == "person" and run["model"] == "person"
    assert run["summary"]["score"] == result.score


def test_timed_exam_withholds_feedback_and_stops_at_the_limit(store):
    dataset = ensure_sample(store)
    clock = Clock()
    session = ExamSitting(store, dataset, time_limit_s=60, limit=4, pass_mark=25, clock=clock)
    assert session.mode == "timed"
    q = session.next_question()
    clock.tick(20)
    assert session.answer(q["answer"]) is None  # no feedback during a timed exam
    assert session.time_left() == 40
    with pytest.raises(SessionError, match="after a timed exam"):
        next(session.stream_explanation(model=None))
    clock.tick(45)
    assert session.expired and session.next_question() is None
    with pytest.raises(SessionError, match="time is up"):
        session.answer("A")
    result = session.finish()
    assert result.status == "finished"
    assert (result.answered, result.correct, result.n) == (1, 1, 4)
    assert result.score == 25.0 and result.passed  # pass mark 25 %
    # Accuracy counts unanswered questions as wrong, as for a model; beside it, the answered.
    assert result.accuracy == 25.0 and result.accuracy_answered == 100.0
    assert len(result.feedback) == 1 and result.feedback[0].correct
    # The three questions time cut off are missed, to review.
    assert result.missed == [str(q["id"]) for q in session.questions[1:]]


def test_quitting_keeps_the_answers(store):
    dataset = ensure_sample(store)
    session = ExamSitting(store, dataset, limit=5)
    q = session.next_question()
    session.answer(q["answer"])
    result = session.finish()
    assert result.status == "cancelled" and result.answered == 1
    assert session_result(store, session.run_id).correct == 1


def test_a_session_quit_early_scores_what_was_answered_everywhere(store, db_path):
    from click.testing import CliRunner

    from engine.cli import cli
    from engine.exam.dataset import sample_path

    dataset = ensure_sample(store)
    session = ExamSitting(store, dataset, limit=2)
    session.answer(session.next_question()["answer"])
    result = session.finish()  # quit after 1 of 2
    assert result.status == "cancelled" and (result.answered, result.n) == (1, 2)
    assert result.score == result.accuracy == result.accuracy_answered == 100.0
    assert not result.passed  # a session quit is not an exam passed
    assert result.missed == []  # the question never asked is not missed
    kinds = [group for groups in result.by_type.values() for group in groups.values()]
    assert kinds and all(g["accuracy"] == result.score for g in kinds)  # tables agree
    assert session_result(store, session.run_id).score == 100.0  # read back the same
    assert store.run(session.run_id)["summary"]["score"] == 100.0
    timed = ExamSitting(store, dataset, limit=2, time_limit_s=600)
    timed.answer(timed.next_question()["answer"])
    handed_in = timed.finish()  # a timed exam handed in early: the question left is wrong
    assert handed_in.status == "cancelled" and handed_in.score == 50.0
    assert handed_in.missed == [str(timed.questions[1]["id"])]  # left in a timed exam: wrong

    first = json.loads(sample_path().read_text(encoding="utf-8"))[0]["answer"]
    out = CliRunner().invoke(
        cli, ["--db", db_path, "exam", "take", "--limit", "2", "--in-order"], input=f"{first}\nq\n"
    )
    assert out.exit_code == 0, out.output
    said = out.output.split("\nscore ", 1)[1]
    assert said.startswith("100.0% of the questions answered (1/1; 1 of 2 answered): quit")
    headings = [line for line in said.splitlines() if line.startswith("type")]
    assert headings and all(line.endswith("(1 of 2 answered):") for line in headings)
    assert "50.0%" not in said


def test_missed_questions_can_be_replayed(store):
    dataset = ensure_sample(store)
    first = ExamSitting(store, dataset, limit=4)
    for _ in range(4):
        q = first.next_question()
        first.answer(q["answer"] if q["id"] in ("sample-01", "sample-03") else None)
    first.finish()
    assert missed_items(store, dataset) == ["sample-02", "sample-04"]
    review = ExamSitting(store, dataset, keys=missed_items(store, dataset))
    assert [q["id"] for q in review.questions] == ["sample-02", "sample-04"]
    q = review.next_question()
    review.answer(q["answer"])  # sample-02 is right now
    review.skip()
    review.finish()
    assert missed_items(store, dataset) == ["sample-04"]
    # The review run remembers which questions it asked.
    assert session_result(store, review.run_id).n == 2


def test_session_settings_are_checked(store):
    dataset = ensure_sample(store)
    with pytest.raises(SessionError):
        ExamSitting(store, dataset, mode="race")
    with pytest.raises(SessionError):
        ExamSitting(store, dataset, pass_mark=120)
    with pytest.raises(SessionError, match="no questions"):
        ExamSitting(store, dataset, keys=[])


@pytest.mark.slow
def test_a_model_explains_a_question_in_practice(store, chat_model):
    dataset = ensure_sample(store)
    session = ExamSitting(store, dataset, limit=1)
    q = session.next_question()
    session.answer(q["answer"])
    pieces = list(session.stream_explanation(chat_model, max_tokens=12))
    assert pieces and "".join(pieces).strip()
    turns = store.turns(session.run_id, q["id"])
    assert len(turns) == 1 and turns[0]["text"] == "".join(pieces)
