"""Trials as an axis of an experiment (``trials = N`` in an experiment file, ``--trials N`` on
``experiment plan|run``): every cell is played N times with the seeds seed, seed + 1, …, as
a trial set of ordinary runs; plans count the trials and reuse them; ``experiment show``
gives the mean ± spread over each cell's trials; settings that do not sample are refused in
one line. The model is scripted, its answer following the seed of the request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_runs import medexam, scripted_home

from engine.exam.dataset import ensure_sample
from engine.experiments.plan import PlanError, make_plan
from engine.experiments.records import get
from engine.experiments.run import open_experiment, run_experiment, trial_spreads
from engine.models.scripted import ScriptedModel

GRID = (
    'activity = "exam"\nmodels = ["scripted"]\nlimit = 3\ntrials = 3\n'
    '[settings]\nmethod = "generate"\ntemperature = 0.7\n[grid]\nshots = [0, 1]\n'
)


def _by_seed(request) -> str:
    """Right (B) at even seeds, wrong (C) at odd ones: the trials' scores differ."""
    return "答案：B" if int(request.options.get("seed") or 0) % 2 == 0 else "答案：C"


@pytest.fixture
def grid(tmp_path: Path, home: Path) -> Path:
    (home / "models.json").write_text(json.dumps({"scripted": {"backend": "scripted"}}))
    path = tmp_path / "trials.toml"
    path.write_text(GRID)
    return path


def test_each_cell_is_played_as_a_trial_set_and_the_spread_is_over_its_trials(
    store, scripted_pool, grid
):
    dataset = ensure_sample(store)
    plan = make_plan(store, str(grid), None, dataset)

    assert len(plan.cells) == 6 and plan.spec["trials"] == 3
    first = [c.cell for c in plan.cells[:3]]
    assert [c.label for c in first] == [f"scripted · shots 0 · trial {k}" for k in (1, 2, 3)]
    assert [c.settings["seed"] for c in first] == [0, 1, 2]
    assert [c.coords["trial"] for c in first] == [1, 2, 3]
    assert plan.as_json()["to_play"] == 6  # the trials differ by their seed: none is shared

    pool = scripted_pool(ScriptedModel("scripted", replies=_by_seed))
    experiment_id, _ = open_experiment(store, plan)
    assert run_experiment(store, experiment_id, pool=pool)["status"] == "finished"

    experiment = get(store, experiment_id)
    runs = [store.run(c["run_id"]) for c in experiment["cells"]]
    assert [r["settings"]["trial"] for r in runs] == [1, 2, 3, 1, 2, 3]
    assert {r["settings"]["trials"] for r in runs} == {3}
    sets = [r["settings"]["trial_set"] for r in runs]
    assert len(set(sets[:3])) == 1 and len(set(sets[3:])) == 1 and sets[0] != sets[3]
    scores = [r["summary"]["accuracy"] for r in runs[:3]]
    assert scores[0] == scores[2] > 0 == scores[1]  # the seeds' answers: B, C, B

    spreads = trial_spreads(store, experiment)
    assert [s["label"] for s in spreads] == ["scripted · shots 0", "scripted · shots 1"]
    assert spreads[0]["runs"] == [r["id"] for r in runs[:3]] and spreads[0]["trials"] == 3
    accuracy = spreads[0]["spread"]["accuracy"]
    assert accuracy["trials"] == scores and accuracy["mean"] == round(2 * scores[0] / 3, 2)
    assert accuracy["sd"] > 0 and accuracy["too_few"]  # 3 items: no interval

    again = make_plan(store, str(grid), None, dataset)
    assert again.experiment_id == experiment_id and again.to_play() == []
    two = make_plan(store, str(grid), None, dataset, trials=2)  # the first two trials again
    assert [c.reuse for c in two.cells] == [r["id"] for r in runs if r["settings"]["trial"] < 3]


def test_trials_that_would_all_be_the_same_are_refused_in_one_line(store, grid):
    dataset = ensure_sample(store)
    grid.write_text(GRID.replace("temperature = 0.7", "temperature = 0.0"))
    with pytest.raises(PlanError, match="scripted · shots 0: 3 trials at temperature 0"):
        make_plan(store, str(grid), None, dataset)
    with pytest.raises(PlanError, match="0-shot w/ instruction: 2 trials at temperature 0"):
        make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=2, trials=2)
    grid.write_text(GRID.replace("trials = 3", "trials = 0"))
    with pytest.raises(PlanError, match="trials must be a whole number from 1 to 100"):
        make_plan(store, str(grid), None, dataset)
    grid.write_text(GRID)
    assert len(make_plan(store, str(grid), None, dataset, trials=1).cells) == 2  # --trials 1


def test_trials_on_the_command_line_plan_run_and_show_the_spread(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", scripted={"replies": "答案：B"})
    path = tmp_path / "grid.toml"
    path.write_text(GRID)
    assert medexam(db_path, "exam", "sample", env=env).returncode == 0
    args = [str(path), "--dataset", "explaincpe-sample", "--trials", "2"]

    planned = json.loads(medexam(db_path, "experiment", "plan", *args, "--json", env=env).stdout)
    assert planned["trials"] == 2 and len(planned["runs"]) == 4 and planned["to_play"] == 4

    played = medexam(db_path, "experiment", "run", *args, env=env)
    assert played.returncode == 0, played.stderr
    shown = medexam(db_path, "experiment", "show", "1", env=env)
    assert "over the trials: mean ± SD between trials [95% interval]" in shown.stdout
    assert "scripted · shots 0  2/2 trials" in shown.stdout
    found = json.loads(medexam(db_path, "experiment", "show", "1", "--json", env=env).stdout)
    assert [len(s["runs"]) for s in found["trials"]] == [2, 2]
    assert found["trials"][0]["spread"]["accuracy"]["sd"] == 0.0  # every trial answers B

    refused = medexam(db_path, "experiment", "plan", str(path), "--trials", "0", env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
