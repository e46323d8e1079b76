"""Repeated consultation trials: K runs with K recorded seeds at a stated temperature, the same
transcripts when a set is played again with the same seed (the real embedded model), a set
stopped mid-way and gone on with losing and duplicating nothing, greedy trials refused, and
the spread: mean, between-trial SD and an interval clustered by case, checked against a plain
computation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.core.progress import Cancel
from engine.core.scoring import Scored
from engine.core.trials import (
    TrialError,
    clustered_interval,
    run_trials,
    spread,
    spread_text,
    trial_runs,
)
from engine.models.scripted import ScriptedModel

SCRIPTED = {"doctor": "doctor", "patient": "patient", "solver": "solver", "max_turns": 1}


def by_seed(request) -> str:
    """A doctor whose question depends on the seed it samples with."""
    return f"Question asked with seed {request.options.get('seed')}?"


def solver_by_seed(request) -> str:
    return "B" if (request.options.get("seed") or 0) % 2 else "A"


@pytest.fixture
def pool(scripted_pool):
    return scripted_pool(
        ScriptedModel("doctor", replies=by_seed),
        ScriptedModel("patient", replies="For three days, doctor."),
        ScriptedModel("solver", replies=solver_by_seed),
    )


def doctor_turns(store, run_id: int, case: str = "sample-01") -> list[str]:
    return [t["text"] for t in store.turns(run_id, case) if t["role"] == "doctor"]


def test_each_trial_is_a_run_with_its_own_recorded_seed(store, pool):
    cases = ensure_sample(store)
    settings = {
        **SCRIPTED,
        "doctor": "model",
        "temperature": 0.7,
        "seed": 10,
        "limit": 2,
        "answer_method": "generate",
    }
    found = run_trials(store, "consult", cases, settings, 3, pool=pool)
    assert len(found.run_ids) == 3 and all(s["status"] == "finished" for s in found.summaries)
    runs = [store.run(r) for r in found.run_ids]
    assert [r["settings"]["seed"] for r in runs] == [10, 11, 12]
    assert [r["settings"]["trial"] for r in runs] == [1, 2, 3]
    assert {r["settings"]["trial_set"] for r in runs} == {found.name}
    assert all(r["settings"]["temperature"] == 0.7 for r in runs)
    assert sorted(trial_runs(store, found.name)) == [1, 2, 3]


def test_a_stopped_set_goes_on_without_loss_or_duplicates(store, pool):
    cases = ensure_sample(store)
    settings = {**SCRIPTED, "doctor": "model", "temperature": 0.7, "limit": 2}
    cancel, seen = Cancel(), []

    def stop_in_the_second_trial(p) -> None:
        seen.append(p)
        if len([x for x in seen if x.info.get("item")]) == 3:  # trial 1 done, trial 2 at 1 of 2
            cancel.set()

    first = run_trials(
        store,
        "consult",
        cases,
        settings,
        3,
        pool=pool,
        progress=stop_in_the_second_trial,
        cancel=cancel,
    )
    assert [s["status"] for s in first.summaries] == ["finished", "cancelled"]
    again = run_trials(store, "consult", None, {}, 0, resume=first.name, pool=pool)
    assert again.name == first.name and again.run_ids[:2] == first.run_ids
    assert len(again.run_ids) == 3 and all(s["status"] == "finished" for s in again.summaries)
    for run_id in again.run_ids:
        answers = store.answers(run_id)
        assert sorted(a["item_key"] for a in answers) == ["sample-01", "sample-02"]
        assert len(doctor_turns(store, run_id)) == 1  # the resumed case was played once
    assert doctor_turns(store, again.run_ids[2]) == ["Question asked with seed 2?"]


def test_greedy_trials_are_refused_in_one_line(store):
    out = CliRunner().invoke(cli, ["--db", store.path, "consult", "run", "--trials", "3"])
    assert out.exit_code == 1 and "temperature 0 would all be the same" in out.output
    assert "Traceback" not in out.output and store.runs() == []
    with pytest.raises(TrialError, match="no trial set"):
        run_trials(store, "consult", None, {}, 1, resume="nothing")


def test_resume_trials_with_another_count_is_refused_naming_the_sets(store, pool):
    cases = ensure_sample(store)
    settings = {**SCRIPTED, "doctor": "model", "temperature": 0.7, "limit": 1}
    played = run_trials(store, "consult", cases, settings, 2, pool=pool)
    resume = ["--db", store.path, "consult", "run", "--resume-trials", played.name]
    out = CliRunner().invoke(cli, [*resume, "--trials", "3"])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.output.strip() == (
        f"Error: trial set {played.name} plays 2 trials, not 3: --resume-trials goes on with "
        "the set as it is (leave out --trials)"
    )
    assert len(store.runs()) == 2
    same = CliRunner().invoke(cli, [*resume, "--trials", "2"])  # the set's own count goes on
    assert "plays 2 trials" not in same.output  # (to its scripted models, not in the catalog)


def test_the_spread_and_its_interval_clustered_by_case(store, pool):
    cases = ensure_sample(store)
    settings = {
        **SCRIPTED,
        "doctor": "model",
        "temperature": 0.7,
        "limit": 2,
        "answer_method": "generate",
    }
    found = run_trials(store, "consult", cases, settings, 4, pool=pool)
    # solver: seed odd -> "B" (right: the samples' answer is B for sample-01), even -> "A"
    accuracy = [s["accuracy"] for s in found.summaries]
    got = spread(store, found.run_ids)["accuracy"]
    assert got["trials"] == accuracy and got["mean"] == pytest.approx(np.mean(accuracy))
    assert got["sd"] == pytest.approx(np.std(accuracy, ddof=1), abs=0.01)
    # two cases are too few to resample: no interval, said so (engine.reports.stats.MIN_ITEMS)
    assert got["cases"] == 2 and got["low"] is None and got["too_few"]
    assert spread_text(got).endswith("[too few items]")


def test_the_clustered_interval_against_a_plain_computation():
    per_case = {
        "a": [100.0, 0.0, 100.0],
        "b": [0.0, 0.0],
        "c": [100.0],
        "d": [100.0, 100.0, 0.0, 100.0],
        **{f"e{i}": [100.0 * (i % 2), 0.0] for i in range(6)},
    }
    low, high = clustered_interval(per_case, resamples=500, seed=3)
    rng = np.random.default_rng(3)
    groups = list(per_case.values())
    picks = rng.integers(0, len(groups), size=(500, len(groups)))
    means = []
    for row in picks:  # resample whole cases, each with every trial it has
        values = [v for i in row for v in groups[i]]
        means.append(sum(values) / len(values))
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert clustered_interval({"a": [1.0, 2.0]}) is None
    assert clustered_interval({k: per_case[k] for k in "abcd"}) is None  # too few cases
    assert clustered_interval({str(i): [0.0, 0.0] for i in range(12)}) is None  # no spread


@pytest.mark.slow
def test_trials_played_again_with_the_same_seed_give_the_same_transcripts(store, chat_model):
    cases = ensure_sample(store)
    settings = {
        "doctor": "model",
        "patient": "smollm2",
        "solver": "smollm2",
        "max_turns": 1,
        "limit": 1,
        "temperature": 0.9,
        "seed": 5,
        "doctor_max_tokens": 32,
    }
    # One request at a time: batched decoding (the model's slots) is not bitwise
    # batch-invariant, so only a set played one at a time replays exactly.
    one = run_trials(store, "consult", cases, settings, 3, concurrency=1)
    two = run_trials(store, "consult", cases, settings, 3, concurrency=1)
    first = [store.turns(r, "sample-01") for r in one.run_ids]
    second = [store.turns(r, "sample-01") for r in two.run_ids]
    assert [[t["text"] for t in ts] for ts in first] == [[t["text"] for t in ts] for ts in second]
    doctors = [doctor_turns(store, r) for r in one.run_ids]
    assert len({json.dumps(d) for d in doctors}) > 1  # sampled: the trials differ


def test_progress_counts_cases_times_trials_over_the_set(store, pool):
    cases = ensure_sample(store)
    settings = {**SCRIPTED, "doctor": "model", "temperature": 0.7, "limit": 2}
    seen = []
    run_trials(store, "consult", cases, settings, 3, pool=pool, progress=seen.append)
    counted = [p for p in seen if p.total]
    assert {p.total for p in counted} == {6}
    assert counted[-1].done == 6 and counted[-1].info["trial"] == 3
    assert [p.done for p in counted] == sorted(p.done for p in counted)  # never goes back
    assert {p.info["trials"] for p in counted} == {3}


def test_trials_played_at_once_are_the_trials_played_in_turn(store, pool):
    cases = ensure_sample(store)
    settings = {**SCRIPTED, "doctor": "model", "temperature": 0.7, "seed": 4, "limit": 2}
    in_turn = run_trials(store, "consult", cases, settings, 3, pool=pool)
    seen = []
    at_once = run_trials(
        store, "consult", cases, settings, 3, pool=pool, concurrency=3, progress=seen.append
    )
    assert all(s["status"] == "finished" for s in at_once.summaries)
    assert [store.run(r)["settings"]["seed"] for r in at_once.run_ids] == [4, 5, 6]
    for a, b in zip(in_turn.run_ids, at_once.run_ids, strict=True):
        assert doctor_turns(store, a) == doctor_turns(store, b)
        assert [x["chosen"] for x in store.answers(a)] == [x["chosen"] for x in store.answers(b)]
    assert max(p.done for p in seen if p.total) == 6


def _set(store, name: str, rights: list[list[bool]]) -> list[int]:
    """A stored trial set: ``rights[k][i]`` says whether trial k+1 got case i right."""
    cases = ensure_sample(store)
    ids = []
    for k, row in enumerate(rights, 1):
        tags = {"trial": k, "trials": len(rights), "trial_set": name, "temperature": 0.7}
        run_id = store.start_run("consult", cases, "m", tags, runner="model", n_total=len(row))
        for i, right in enumerate(row):
            store.add_answer(run_id, f"case-{i}", response="A", chosen="A", gold="A",
                             scores=[Scored("consult.task", 1, {"correct": right})], extra={})  # fmt: skip
        store.finish_run(run_id, {"accuracy": 100.0 * sum(row) / len(row)})
        ids.append(run_id)
    return ids


def _four_cases(store) -> tuple[list[int], list[int]]:
    """Two sets of four cases: too few for an interval or p."""
    a = _set(store, "cccc0000", [[True, False, False, False]])
    return a, _set(store, "dddd0000", [[True, True, True, True]])


def test_two_sets_are_compared_pair_by_case_and_trial(store):
    from engine.core.trials import paired_sets, trial_tables

    few = paired_sets(store, *_four_cases(store))
    assert few["too_few"] and few["low"] is None and few["p"] is None
    a = _set(store, "aaaa0000", [[True, False, False, False] * 3, [False, False, True, False] * 3])
    b = _set(store, "bbbb0000", [[True, True, True, False] * 3, [True, True, True, True] * 3])
    found = paired_sets(store, a, b)
    # pairs (trial, case): diffs 0,100,100,0 | 100,100,0,100 (three times) -> mean 62.5
    assert found["pairs"] == 24 and found["cases"] == 12 and found["trials"] == 2
    assert (found["only_a"], found["only_b"]) == (0, 15)
    assert found["diff"] == pytest.approx(62.5)
    assert 0 < found["low"] <= 62.5 <= found["high"] and found["p"] < 0.05
    same = paired_sets(store, a, a)
    assert same["diff"] == 0 and same["p"] == 1.0
    titles = [t["title"] for t in trial_tables(store, [*a, *b])]
    assert titles == [
        "Repeated trials: mean ± spread between trials",
        "Trial sets compared, paired by case and trial",
    ]


KILLED_SCRIPT = """
import sys, time
from engine.consult.cases.cases import ensure_sample
from engine.models.scripted import ScriptedModel, scripted_pool
from engine.store.store import Store
from engine.core.trials import run_trials

def slow(request):
    time.sleep(0.3)
    return "Question asked with seed %s?" % request.options.get("seed")

pool = scripted_pool(ScriptedModel("doctor", replies=slow),
                     ScriptedModel("patient", replies="For three days, doctor."),
                     ScriptedModel("solver", replies="B"))
store = Store(sys.argv[1])
settings = {"doctor": "model", "patient": "patient", "solver": "solver", "max_turns": 1,
            "temperature": 0.7, "limit": 2, "answer_method": "generate"}
found = run_trials(store, "consult", ensure_sample(store), settings, 3, name="killed00",
                   pool=pool, progress=lambda p: print("done", p.done, flush=True))
"""


@pytest.mark.slow
def test_a_set_killed_mid_way_goes_on_without_loss_or_duplicates(store, pool):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SCRIPT, store.path],
                            stdout=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    for line in proc.stdout:  # trial 1 done, trial 2 one case in
        if line.strip() == "done 3" or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = trial_runs(store, "killed00")
    assert sorted(before) == [1, 2] and before[1]["status"] == "finished"
    again = run_trials(store, "consult", None, {}, 0, resume="killed00", pool=pool)
    assert again.run_ids[:2] == [before[1]["id"], before[2]["id"]] and len(again.run_ids) == 3
    assert all(s["status"] == "finished" for s in again.summaries)
    for k, run_id in enumerate(again.run_ids):
        assert sorted(a["item_key"] for a in store.answers(run_id)) == ["sample-01", "sample-02"]
        for case in ("sample-01", "sample-02"):  # every consultation played once, kept whole
            assert doctor_turns(store, run_id, case) == [f"Question asked with seed {k}?"]
