"""A person's exam killed with kill -9 midway is resumed where it stopped: ``medexam exam take
--resume ID`` asks only the questions left, and the run ends with every answer once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.runs import RunError
from engine.store import Store

MEDEXAM = [sys.executable, "-c", "from engine.entry import main; main()"]


def _wait_for(store: Store, run_id: int, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(store.answers(run_id)) < n:
        assert time.monotonic() < deadline, "the answer was never stored"
        time.sleep(0.05)


def _run_id(store: Store) -> int:
    deadline = time.monotonic() + 30
    while not store.runs("exam"):
        assert time.monotonic() < deadline, "no run was started"
        time.sleep(0.05)
    return int(store.runs("exam")[0]["id"])


def test_exam_take_killed_midway_resumes_where_it_stopped(store: Store) -> None:
    dataset = ensure_sample(store)
    items = store.items(dataset)[:4]
    db = ["--db", str(store.path)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    child = subprocess.Popen(
        [*MEDEXAM, *db, "exam", "take", "--limit", "4", "--in-order"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert child.stdin is not None
    run_id = _run_id(store)
    for n, item in enumerate(items[:2], 1):  # the first right, the second wrong
        letter = item["answer"] if n == 1 else next(x for x in "ABCDE" if x != item["answer"])
        child.stdin.write(f"{letter}\n")
        child.stdin.flush()
        _wait_for(store, run_id, n)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    killed = store.run(run_id)
    assert killed["status"] == "interrupted" and len(store.answers(run_id)) == 2

    rest = "".join(f"{i['answer']}\n" for i in items[2:])
    resumed = subprocess.run(
        [*MEDEXAM, *db, "exam", "take", "--resume", str(run_id)],
        input=rest,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
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
