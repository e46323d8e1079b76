"""A person's exam, French practice or consultation killed with kill -9 midway is resumed
where it stopped: ``medexam exam take --resume ID`` (``french take``, ``consult chat``) asks
only what is left, and the run ends with every answer (every turn) once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.consult.cases.cases import ensure_sample as ensure_cases
from engine.core.runs import RunError
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.french.dataset import ensure_sample as ensure_french
from engine.store.store import Store

MEDEXAM = [sys.executable, "-c", "from engine.entry import main; main()"]


def _wait_for(run_id: int, n: int, stored: Callable[[int], int]) -> None:
    deadline = time.monotonic() + 30
    while stored(run_id) < n:
        assert time.monotonic() < deadline, "the answer was never stored"
        time.sleep(0.05)


def _run_id(store: Store, activity: str) -> int:
    deadline = time.monotonic() + 30
    while not store.runs(activity):
        assert time.monotonic() < deadline, "no run was started"
        time.sleep(0.05)
    return int(store.runs(activity)[0]["id"])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def _killed_after(
    store: Store,
    activity: str,
    args: list[str],
    replies: list[str],
    stored: Callable[[int], int] | None = None,
    command: str = "take",
) -> int:
    """Start ``medexam <activity> take ARGS``, type ``replies`` one by one (each stored before
    the next is typed: ``stored(run_id)`` counts them, default its answers), then kill -9 it;
    return its run's id."""
    child = subprocess.Popen(
        [*MEDEXAM, "--db", str(store.path), activity, command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert child.stdin is not None
    run_id = _run_id(store, activity)
    for n, reply in enumerate(replies, 1):
        child.stdin.write(f"{reply}\n")
        child.stdin.flush()
        _wait_for(run_id, n, stored or (lambda r: len(store.answers(r))))
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    assert store.run(run_id)["status"] == "interrupted"
    return run_id


def _resumed(
    store: Store, activity: str, run_id: int, replies: list[str], command: str = "take"
) -> str:
    """What ``medexam <activity> take --resume RUN_ID`` shows, typed ``replies``."""
    resumed = subprocess.run(
        [*MEDEXAM, "--db", str(store.path), activity, command, "--resume", str(run_id)],
        input="".join(f"{r}\n" for r in replies),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    return resumed.stdout


def test_exam_take_killed_midway_resumes_where_it_stopped(store: Store) -> None:
    dataset = ensure_sample(store)
    items = store.items(dataset)[:4]
    wrong = next(x for x in "ABCDE" if x != items[1]["answer"])  # the first right, then wrong
    args = ["--limit", "4", "--in-order"]
    run_id = _killed_after(store, "exam", args, [items[0]["answer"], wrong])
    out = _resumed(store, "exam", run_id, [i["answer"] for i in items[2:]])
    assert "2 answered before" in out and "(3/4)" in out and "(4/4)" in out
    assert "(1/4)" not in out and "(2/4)" not in out  # nothing asked again
    assert re.search(r"score 75\.0% \(3/4", out), out
    answers = store.answers(run_id)
    assert [a["item_key"] for a in answers] == [str(i["id"]) for i in items]  # each once
    assert [a["position"] for a in answers] == [0, 1, 2, 3]
    run = store.run(run_id)
    assert run["status"] == "finished" and run["summary"]["answered"] == 4
    assert run["summary"]["missed"] == [str(items[1]["id"])]


def test_a_sitting_resumes_in_process_and_refuses_what_it_cannot(store: Store) -> None:
    dataset = ensure_sample(store)
    first = ExamSitting(store, dataset, limit=3, seed=7)
    asked = first.next_question()
    first.answer(asked["answer"])
    first.finish()  # quit after one: cancelled, kept
    again = ExamSitting(store, resume=first.run_id)
    assert again.index == 1 and again.seed == 7 and again.questions == first.questions
    assert again.next_question()["id"] == first.questions[1]["id"]
    again.answer(None)
    again.answer(again.next_question()["answer"])
    result = again.finish()
    assert result.status == "finished" and (result.answered, result.correct) == (3, 2)
    assert len(result.feedback) == 3
    with pytest.raises(RunError, match="finished"):
        ExamSitting(store, resume=first.run_id)


def test_french_take_killed_midway_resumes_where_it_stopped(store: Store) -> None:
    dataset = ensure_french(store)["dataset"]
    items = store.items(dataset)[:3]
    gold = [" + ".join(sorted(i["correct_answers"])) for i in items]
    args = ["--dataset", dataset, "--limit", "3", "--in-order"]
    run_id = _killed_after(store, "french", args, [gold[0]])
    out = _resumed(store, "french", run_id, gold[1:])
    assert "1 answered before" in out and "Question 2/3" in out and "Question 3/3" in out
    assert "Question 1/3" not in out  # nothing asked again
    assert f"run {run_id}: 3/3 answered" in out
    answers = store.answers(run_id)
    assert [a["item_key"] for a in answers] == [str(i["id"]) for i in items]
    assert all(a["correct"] for a in answers)
    run = store.run(run_id)
    assert run["status"] == "finished" and run["summary"]["emr"] == 100.0


@pytest.mark.slow  # the patient's fact matching loads its models in each process
def test_consult_chat_killed_midway_resumes_where_it_stopped(store: Store, home: Path) -> None:
    patient = {"backend": "scripted", "replies": "I am 22 years old."}
    (home / "models.json").write_text(json.dumps({"pat": patient}))
    dataset = ensure_cases(store)
    args = ["--case", "sample-01", "--patient", "pat"]

    def turns(run_id: int) -> int:  # the questions answered by the patient
        return sum(t["role"] == "patient" for t in store.turns(run_id, "sample-01")) - 1

    run_id = _killed_after(store, "consult", args, ["What is your age?"], turns, "chat")
    assert store.answers(run_id) == []
    out = _resumed(store, "consult", run_id, ["Any allergies?", "", "B"], "chat")
    assert "Doctor: What is your age?" in out  # the dialogue so far, shown again
    assert "correct: the answer is B" in out
    stored = store.turns(run_id, "sample-01")
    assert [(t["turn"], t["role"]) for t in stored] == [
        (0, "patient"), (1, "doctor"), (1, "patient"), (2, "doctor"), (2, "patient"),
    ]  # fmt: skip
    (answer,) = store.answers(run_id)
    assert answer["chosen"] == "B" and answer["correct"] == 1
    run = store.run(run_id)
    assert run["status"] == "finished" and run["dataset"] == dataset
    assert run["summary"]["n"] == 1


def test_a_timed_exam_goes_on_with_the_time_it_had_left(store: Store) -> None:
    dataset = ensure_sample(store)
    now = [1000.0]
    first = ExamSitting(store, dataset, limit=3, time_limit_s=60, clock=lambda: now[0])
    asked = first.next_question()
    now[0] += 20
    first.answer(asked["answer"])
    first.finish()  # handed in early: cancelled, the rest left
    again = ExamSitting(store, resume=first.run_id, clock=lambda: now[0])
    assert again.mode == "timed" and again.time_left() == 40
    again.next_question()
    now[0] += 45  # past the limit: the rest count wrong
    assert again.next_question() is None
    result = again.finish()
    assert result.status == "finished" and (result.answered, result.correct, result.n) == (1, 1, 3)
    assert store.run(first.run_id)["summary"]["seconds"] == 65
