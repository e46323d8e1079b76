"""A person is a solver: a person's exam and consultation runs are stored like a model's,
scored by the activity's scorers, and `rescore` gives their own summaries again (the French
run's test is in test_french_practice_leak.py)."""

from __future__ import annotations

from click.testing import CliRunner

from engine.cli import cli
from engine.core.scoring import rescore
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_persons_exam_runs_are_rescored_to_their_own_summaries(store):
    dataset = ensure_sample(store)
    clock = Clock()
    whole = ExamSitting(store, dataset, limit=3, clock=clock)
    for reply in ("answer", "wrong", None):
        item = whole.next_question()
        clock.now += 4
        wrong = next(x for x in "ABCDE" if x != item["answer"])
        whole.answer({"answer": item["answer"], "wrong": wrong, None: None}[reply])
    quit_early = ExamSitting(store, dataset, limit=3, clock=clock)
    quit_early.answer(quit_early.next_question()["answer"])
    timed = ExamSitting(store, dataset, limit=3, time_limit_s=60, clock=clock)
    timed.answer(timed.next_question()["answer"])
    for session in (whole, quit_early, timed):
        clock.now += 30
        result = session.finish()
        stored = store.run(session.run_id)["summary"]
        assert stored["score"] == result.score and stored["seconds"] == result.seconds
        again = rescore(store, session.run_id, force=True)
        assert again.summary == stored
        assert again.scored == {"exam.letter": result.answered}  # no ROUGE of a letter
    assert store.run(quit_early.run_id)["summary"]["score"] == 100.0  # of the answered
    assert store.run(timed.run_id)["summary"]["score"] == 33.3  # the rest count wrong
    shown = CliRunner().invoke(cli, ["--db", str(store.path), "rescore", str(timed.run_id)])
    assert shown.exit_code == 0, shown.output


def test_a_persons_consultation_is_scored_by_the_scorers_and_rescored(store):
    from engine.consult.cases.cases import ensure_sample as cases_sample
    from engine.consult.cases.cases import get_case
    from engine.consult.doctor.person import (
        abandon_person_consultation,
        finish_person_consultation,
        start_person_consultation,
    )
    from engine.consult.settings import ConsultSettings
    from engine.models.scripted import ScriptedModel

    dataset = cases_sample(store)
    case = get_case(store, dataset, "sample-01")
    patient = ScriptedModel("patient", replies="I am 22 years old.")
    c = start_person_consultation(store, dataset, case, patient)
    assert c.max_turns == ConsultSettings.max_turns  # the one declared budget
    c.ask("What is your age?")
    result = finish_person_consultation(c, case.task.answer.lower())
    assert result.correct and result.metrics["turns"] == 1
    stored = store.run(c.run_id)
    assert stored["status"] == "finished" and stored["summary"]["accuracy"] == 100.0
    names = {s["scorer"] for s in store.run_scorers(c.run_id)}
    assert {"consult.task", "consult.dialogue"} <= names  # no raw scores kept as "recorded"
    again = rescore(store, c.run_id, force=True)
    assert again.summary == stored["summary"]
    left = start_person_consultation(store, dataset, case, patient, max_turns=2)
    abandon_person_consultation(left)
    assert store.run(left.run_id)["status"] == "cancelled"
    assert store.run(left.run_id)["summary"]["answered"] == 0
