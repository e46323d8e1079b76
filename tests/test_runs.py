"""Every way a run can end, through the one run loop: finished, Stop, Ctrl-C, a model
crash, a data set of the wrong kind, kill -9 then resume; a person's session and settings
that differ are refused on resume. No path leaves a run "running".

The loop's own behaviour is tested with scripted models (:mod:`engine.models.scripted`):
in this process through ``scripted_pool``, on the command line through a catalog of its own
that names them. Ctrl-C of a command-line run is tested on the real embedded model too."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.core.runs import RunError, run
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel
from engine.store.store import Store

MEDEXAM = [str(Path(sys.executable).with_name("medexam"))]
Env = dict[str, str] | None


def medexam(db: str, *args: str, env: Env = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEDEXAM, "--db", db, *args], capture_output=True, text=True, timeout=600, env=env
    )


def start(db: str, *args: str, env: Env = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*MEDEXAM, "--db", db, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def scripted_home(home: Path, **scripts: dict) -> dict[str, str]:
    """The environment of a command line whose catalog holds the scripted models
    ``scripts`` (name → script in JSON), in a user data folder of its own."""
    home.mkdir(exist_ok=True)
    entries = {name: {"backend": "scripted", **script} for name, script in scripts.items()}
    (home / "models.json").write_text(json.dumps(entries))
    return {**os.environ, "MEDEXAM_HOME": str(home)}


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


def test_a_wrong_kind_of_data_set_is_refused_before_any_run(store, scripted_pool):
    from engine.french.dataset import SAMPLE_DATASET as french
    from engine.french.dataset import ensure_sample as french_sample

    french_sample(store)
    exam = ensure_sample(store)
    model = ScriptedModel()
    pool = scripted_pool(model)
    with pytest.raises(RunError, match="holds French QA items, not Exam items"):
        run(store, "exam", french, {"method": "logprob"}, pool=pool)
    with pytest.raises(RunError, match="holds Exam items"):
        run(store, "french", exam, {}, pool=pool)
    with pytest.raises(RunError, match="not Consultation items"):
        run(store, "consult", exam, {"doctor": "upper"}, pool=pool)
    assert store.runs() == [] and model.requests == []


def test_wrong_kind_from_the_command_line_is_one_line(db_path):
    assert medexam(db_path, "exam", "sample").returncode == 0
    out = medexam(db_path, "french", "run", "--dataset", "explaincpe-sample")
    assert out.returncode == 1
    assert out.stderr.strip().startswith("Error: data set 'explaincpe-sample' holds Exam items")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not Store(db_path).runs()


def test_resume_refuses_a_person_session_and_other_settings(store, scripted_pool):
    pool = scripted_pool()
    dataset = ensure_sample(store)
    person = store.start_run("exam", dataset, "person", {}, runner="person", n_total=3)
    store.finish_run(person, {}, "cancelled")
    with pytest.raises(RunError, match="a person's session; a model cannot resume it"):
        run(store, "exam", resume=person, pool=pool)
    settings = {"model": "scripted", "method": "logprob", "limit": 1}
    done = run(store, "exam", dataset, settings, pool=pool)
    with pytest.raises(RunError, match="other settings: shots 4 \\(the run has 0\\)"):
        run(store, "exam", resume=done["run_id"], settings={"shots": 4}, pool=pool)
    with pytest.raises(RunError, match="not a French QA run"):
        run(store, "french", resume=done["run_id"], pool=pool)
    again = run(store, "exam", resume=done["run_id"], settings={"method": "logprob"}, pool=pool)
    assert again["status"] == "finished" and again["run_id"] == done["run_id"]


@pytest.mark.slow
def test_ctrl_c_cancels_a_real_model_run_with_no_traceback(db_path):
    # two at once: the first answer comes after two generations' steps, not eight
    proc = start(db_path, "exam", "run", "--limit", "14", "--max-tokens", "160", "--concurrency", "2")  # fmt: skip
    run_id = wait_for_answers(db_path, 1, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "leaked" not in err
    assert f"run {run_id} cancelled; resume it with --resume {run_id}" in err
    assert Store(db_path).run(run_id)["status"] == "cancelled"


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_kill_cancels_the_run_with_no_traceback(db_path, tmp_path, sent, code):
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：A", "delay": 0.3})
    proc = start(db_path, "exam", "run", "--model", "slow", "--limit", "14", env=env)
    run_id = wait_for_answers(db_path, 1, proc)
    proc.send_signal(sent)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert f"run {run_id} cancelled; resume it with --resume {run_id}" in err
    row = Store(db_path).run(run_id)
    assert row["status"] == "cancelled" and row["n_done"] < 14


def test_kill_9_reads_as_interrupted_and_resumes(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", slow={"replies": "B", "delay": 0.3})
    proc = start(db_path, "exam", "run", "--model", "slow", "--limit", "4", "--method",
                 "logprob", env=env)  # fmt: skip
    run_id = wait_for_answers(db_path, 1, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert Store(db_path).run(run_id)["status"] == "interrupted"
    listed = medexam(db_path, "runs", "list", env=env)
    assert "interrupted" in listed.stdout
    resumed = medexam(db_path, "exam", "run", "--resume", str(run_id), "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    run_row = Store(db_path).run(run_id)
    assert run_row["status"] == "finished" and run_row["n_done"] == 4
    assert {a["chosen"] for a in Store(db_path).answers(run_id)} == {"B"}


def _letter_of(prompt: str) -> str:
    """A letter that depends on the question in ``prompt``: a mixed-up answer would show."""
    return "ABCDE"[hashlib.sha256(prompt.encode()).digest()[0] % 5]


def test_concurrent_items_store_the_same_answers(store, scripted_pool):
    active, most = [0], [0]
    lock = threading.Lock()

    def delay(request) -> float:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return 0.0

    model = ScriptedModel(replies=lambda r: _letter_of(r.prompt), delay=delay)
    pool = scripted_pool(model)
    dataset = ensure_sample(store)
    settings = {"method": "logprob", "limit": 6}
    one = run(store, "exam", dataset, settings, pool=pool)
    assert most[0] == 1  # one item at a time by default: the model takes one well
    seen: list[int] = []
    two = run(store, "exam", dataset, settings, concurrency=3, pool=pool,
              progress=lambda p: seen.append(p.done))  # fmt: skip
    assert two["status"] == "finished" and two["answered"] == 6
    assert most[0] >= 2  # items were in flight at once
    assert store.run(two["run_id"])["settings"]["concurrency"] == 3
    letters = [{a["item_key"]: a["chosen"] for a in store.answers(r["run_id"])} for r in (one, two)]
    assert letters[0] == letters[1] and len(set(letters[0].values())) > 1
    assert seen[-1] == 6
    with pytest.raises(RunError, match="concurrency must be at least 1"):
        run(store, "exam", dataset, settings, concurrency=0, pool=pool)


def test_consultation_with_different_doctor_patient_and_solver_models(store, scripted_pool):
    from engine.consult.cases.cases import ensure_sample as cases_sample

    doctor = ScriptedModel("doc", replies="Where does it hurt?", concurrency=8)
    patient = ScriptedModel("pat", replies="In my chest, since yesterday.")
    solver = ScriptedModel("sol", replies="B", concurrency=8)
    pool = scripted_pool(doctor, patient, solver)
    roles = {"doctor": "doc", "patient": "pat", "solver": "sol"}
    summary = run(store, "consult", cases_sample(store), {**roles, "limit": 1, "max_turns": 1},
                  pool=pool)  # fmt: skip
    assert summary["status"] == "finished", summary.get("error")
    row = store.run(summary["run_id"])
    assert {k: row["settings"][k] for k in roles} == roles
    assert row["settings"]["concurrency"] == 1  # the patient takes one request at a time
    turns = store.turns(row["id"])
    replies = [t["text"] for t in turns if t["role"] == "patient"]
    assert len(replies) == 2 and replies[-1] == "In my chest, since yesterday."
    assert [t["text"] for t in turns if t["role"] == "doctor"][0] == "Where does it hurt?"
    assert store.answers(row["id"])[0]["chosen"] == "B"
    assert doctor.requests and patient.requests and solver.requests
    assert {r.kind for r in solver.requests} == {"logprobs"}
    exam = run(store, "exam", ensure_sample(store), {"model": "sol", "limit": 1}, pool=pool)
    assert store.run(exam["run_id"])["settings"]["concurrency"] == 8  # the solver takes 8
