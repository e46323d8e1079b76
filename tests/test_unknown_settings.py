"""A setting misspelt is refused in one line naming it and the nearest known one, on every
path settings take: an experiment file's ``[settings]``, ``[grid]`` and ``model_setting``, a
run's settings given in Python, the command line, a stored run's settings (resumed, reused)
and medexam's own settings. Such a name was dropped: a plan's runs labelled gemma3-270m
played the default model, and its "trials" ran greedy while saying temperature 0.7. The
model is scripted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_runs import medexam, scripted_home

from engine.core.progress import Cancel
from engine.core.runs import RunError, run
from engine.exam.dataset import ensure_sample
from engine.exam.runner import run_exam
from engine.experiments.plan import PlanError, make_plan
from engine.french.dataset import ensure_sample as ensure_french_sample
from engine.models.scripted import ScriptedModel
from engine.store.store import Store

GRID = 'activity = "exam"\nmodels = ["scripted", "other"]\nlimit = 2\n'


@pytest.fixture
def catalog(home: Path) -> Path:
    """A catalog naming two scripted models, so that plans know them."""
    scripts = {"scripted": {"backend": "scripted"}, "other": {"backend": "scripted"}}
    (home / "models.json").write_text(json.dumps(scripts))
    return home


@pytest.mark.parametrize(
    ("text", "where", "name", "near"),
    [
        (GRID + 'model_setting = "modle"\n', "model_setting", "modle", "model"),
        (GRID + "trials = 3\n[settings]\ntemprature = 0.7\n", "[settings]", "temprature", "temperature"),
        (GRID + "[grid]\nshot = [0, 1]\n", "[grid]", "shot", "shots"),
        (GRID + '[settings]\nmethod = "logprob"\n[grid]\nlangs = ["zh"]\n', "[grid]", "langs", "lang"),
    ],
    ids=["model_setting", "settings", "grid", "grid-beside-settings"],
)  # fmt: skip
def test_a_misspelt_name_in_an_experiment_file_is_refused_naming_the_nearest_setting(
    store, catalog, tmp_path, text, where, name, near
):
    dataset = ensure_sample(store)
    path = tmp_path / "grid.toml"
    path.write_text(text)

    with pytest.raises(PlanError) as refused:
        make_plan(store, str(path), None, dataset)

    assert (
        str(refused.value) == f"{path}: {where}: unknown setting {name!r} (did you mean {near!r}?)"
    )
    assert store.runs() == []


def test_a_setting_of_another_activity_is_no_setting_of_this_one(store, catalog, tmp_path):
    dataset = ensure_sample(store)
    path = tmp_path / "grid.toml"
    path.write_text(GRID + "[settings]\ndoctor_max_tokens = 64\n")  # a consultation's

    with pytest.raises(PlanError, match=r"\[settings\]: unknown setting 'doctor_max_tokens' \("):
        make_plan(store, str(path), None, dataset)


def test_a_run_given_a_misspelt_setting_is_refused_before_it_starts(store, scripted_pool):
    dataset = ensure_sample(store)
    french = ensure_french_sample(store)["dataset"]
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    given = {"model": "scripted", "limit": 1, "temprature": 0.7}

    with pytest.raises(
        RunError, match=r"^unknown setting 'temprature' \(did you mean 'temperature'\?\)$"
    ):
        run(store, "exam", dataset, given, pool=pool)
    with pytest.raises(RunError, match=r"^unknown setting 'shot' \(did you mean 'shots'\?\)$"):
        run_exam(store, dataset, shot=2, model="scripted", pool=pool)  # was a TypeError
    with pytest.raises(RunError, match=r"'treshold' \(did you mean 'threshold'\?\)$"):
        run(store, "french", french, {"model": "scripted", "treshold": 0.5}, pool=pool)
    assert store.runs() == []  # nothing started
    assert run(store, "exam", dataset, {"model": "scripted", "limit": 1}, pool=pool)["n"] == 1


def test_a_stored_run_holding_a_setting_this_medexam_does_not_know_is_neither_resumed_nor_reused(
    store, scripted_pool, catalog, tmp_path
):
    dataset = ensure_sample(store)
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    settings = {"model": "scripted", "limit": 2}
    done = run(store, "exam", dataset, settings, pool=pool)["run_id"]
    stopped = Cancel()
    stopped.set()
    cut = run(store, "exam", dataset, {**settings, "shots": 1}, pool=pool, cancel=stopped)
    path = tmp_path / "grid.toml"
    path.write_text('activity = "exam"\nmodels = ["scripted"]\nlimit = 2\n')
    assert make_plan(store, str(path), None, dataset).cells[0].reuse == done
    for run_id in (done, cut["run_id"]):  # as another version of medexam may store them
        found = store.run(run_id)["settings"]
        store.update_run(run_id, settings={**found, "temprature": 0.7})

    with pytest.raises(RunError) as refused:
        run(store, "exam", None, {}, resume=cut["run_id"], pool=pool)

    assert str(refused.value) == (
        f"run {cut['run_id']} holds an unknown setting 'temprature' (did you mean 'temperature'?)"
    )
    assert make_plan(store, str(path), None, dataset).cells[0].reuse is None


def test_the_command_line_refuses_a_misspelt_setting_in_one_line(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", scripted={"replies": "答案：B"})
    store = Store(db_path)
    ensure_sample(store)
    store.close()
    path = tmp_path / "sampled.toml"
    path.write_text(
        'activity = "exam"\nmodels = ["scripted"]\ndataset = "explaincpe-sample"\n'
        '[settings]\nmethod = "generate"\ntemprature = 0.7\n'
    )

    planned = medexam(db_path, "experiment", "run", str(path), "--trials", "3", env=env)
    typed = medexam(db_path, "exam", "run", "--model", "scripted", "--temprature", "0.7", env=env)

    assert planned.returncode != 0 and "Traceback" not in planned.stderr
    assert planned.stderr.strip().splitlines() == [
        f"Error: {path}: [settings]: unknown setting 'temprature' (did you mean 'temperature'?)"
    ]
    assert typed.returncode == 2 and "--temperature" in typed.stderr
    assert "Traceback" not in typed.stderr


def test_the_app_s_own_settings_name_the_nearest_one(home):
    from engine import settings

    with pytest.raises(
        settings.SettingsError, match=r"^unknown setting 'solvr' \(did you mean 'solver'\?\)$"
    ):
        settings.get("solvr")
    with pytest.raises(
        settings.SettingsError, match=r"'flash-attn' \(did you mean 'flash_attn'\?\)$"
    ):
        settings.set("flash-attn", "on")
    assert settings.get("flash_attn") == "off"
