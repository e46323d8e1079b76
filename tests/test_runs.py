"""Every way a run can end, through the one run loop: finished, Stop, Ctrl-C, a model
crash, a data set of the wrong kind, kill -9 then resume; a person's session and settings
that differ are refused on resume. No path leaves a run "running"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.exam.dataset import ensure_sample
from engine.runs import RunError, run
from engine.store import Store

pytestmark = pytest.mark.slow
MEDEXAM = [str(Path(sys.executable).with_name("medexam"))]


def medexam(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEDEXAM, "--db", db, *args], capture_output=True, text=True, timeout=600
    )


def start(db: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*MEDEXAM, "--db", db, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_answers(db: str, n: int, proc: subprocess.Popen[str]) -> int:
    """Wait until the newest run has ``n`` answers; its id."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if Path(db).exists():
            store = Store(db)
            runs = store.runs()
            store.close()
            if runs and runs[0]["n_done"] >= n:
                return int(runs[0]["id"])
        time.sleep(0.2)
    raise AssertionError("no answers came")


def test_a_wrong_kind_of_data_set_is_refused_before_any_run(store, chat_model):
    from engine.french.dataset import SAMPLE_DATASET as french
    from engine.french.dataset import ensure_sample as french_sample

    french_sample(store)
    exam = ensure_sample(store)
    with pytest.raises(RunError, match="holds French QA items, not Exam items"):
        run(store, "exam", french, {"model": "smollm2", "method": "logprob"})
    with pytest.raises(RunError, match="holds Exam items"):
        run(store, "french", exam, {"model": "smollm2"})
    with pytest.raises(RunError, match="not Consultation items"):
        run(store, "consult", exam, {"doctor": "upper"})
    assert store.runs() == []


def test_wrong_kind_from_the_command_line_is_one_line(db_path):
    assert medexam(db_path, "exam", "sample").returncode == 0
    out = medexam(db_path, "french", "run", "--dataset", "explaincpe-sample")
    assert out.returncode == 1
    assert out.stderr.strip().startswith("Error: data set 'explaincpe-sample' holds Exam items")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not Store(db_path).runs()


def test_resume_refuses_a_person_session_and_other_settings(store, chat_model):
    dataset = ensure_sample(store)
    person = store.start_run("exam", dataset, "person", {}, runner="person", n_total=3)
    store.finish_run(person, {}, "cancelled")
    with pytest.raises(RunError, match="a person's session; a model cannot resume it"):
        run(store, "exam", resume=person)
    done = run(store, "exam", dataset, {"model": "smollm2", "method": "logprob", "limit": 1})
    with pytest.raises(RunError, match="other settings: shots 4 \\(the run has 0\\)"):
        run(store, "exam", resume=done["run_id"], settings={"shots": 4})
    with pytest.raises(RunError, match="not a French QA run"):
        run(store, "french", resume=done["run_id"])
    again = run(store, "exam", resume=done["run_id"], settings={"method": "logprob"})
    assert again["status"] == "finished" and again["run_id"] == done["run_id"]


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_kill_cancels_the_run_with_no_traceback(db_path, sent, code):
    proc = start(db_path, "exam", "run", "--limit", "14", "--max-tokens", "160")
    run_id = wait_for_answers(db_path, 1, proc)
    proc.send_signal(sent)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "leaked" not in err
    assert f"run {run_id} cancelled; resume it with --resume {run_id}" in err
    assert Store(db_path).run(run_id)["status"] == "cancelled"


def test_kill_9_reads_as_interrupted_and_resumes(db_path):
    proc = start(db_path, "exam", "run", "--limit", "4", "--method", "logprob")
    run_id = wait_for_answers(db_path, 1, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert Store(db_path).run(run_id)["status"] == "interrupted"
    listed = medexam(db_path, "runs", "list")
    assert "interrupted" in listed.stdout
    resumed = medexam(db_path, "exam", "run", "--resume", str(run_id), "--json")
    assert resumed.returncode == 0, resumed.stderr
    run_row = Store(db_path).run(run_id)
    assert run_row["status"] == "finished" and run_row["n_done"] == 4


def test_concurrent_items_store_the_same_answers(store, chat_model):
    dataset = ensure_sample(store)
    settings = {"model": "smollm2", "method": "logprob", "limit": 4}
    one = run(store, "exam", dataset, settings)
    seen: list[int] = []
    two = run(
        store, "exam", dataset, settings, concurrency=3, progress=lambda p: seen.append(p.done)
    )
    assert two["status"] == "finished" and two["answered"] == 4
    assert store.run(two["run_id"])["settings"]["concurrency"] == 3
    letters = [{a["item_key"]: a["chosen"] for a in store.answers(r["run_id"])} for r in (one, two)]
    assert letters[0] == letters[1]
    assert seen[-1] == 4
    with pytest.raises(RunError, match="concurrency must be at least 1"):
        run(store, "exam", dataset, settings, concurrency=0)


def test_consultation_with_different_doctor_patient_and_solver_models(db_path):
    out = medexam(
        db_path,
        "consult",
        "run",
        "--doctor",
        "smollm2",
        "--patient",
        "gemma3-270m",
        "--solver",
        "smollm2",
        "--limit",
        "1",
        "--max-turns",
        "1",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    store = Store(db_path)
    row = store.runs("consult")[0]
    assert row["status"] == "finished"
    assert (row["settings"]["doctor"], row["settings"]["patient"]) == ("smollm2", "gemma3-270m")
    replies = [t for t in store.turns(row["id"]) if t["role"] == "patient"]
    assert len(replies) >= 2  # the opening request and gemma3-270m's reply
