"""Experiments in the engine (:mod:`engine.experiments`): a preset's plan lists its runs and
reuses finished ones with the same settings, one job plays every cell through the run loop,
a stopped experiment goes on with nothing asked twice, an experiment file is a grid, and the
report draws ExplainCPE's Table 8, Table 3 and Figure 3. The model is scripted
(:mod:`engine.models.scripted`), named in a catalog of the test's own so that plans know it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.progress import Cancel
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.experiments import records
from engine.experiments.plan import PlanError, make_plan, read_file
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import ScriptedModel


@pytest.fixture
def catalog(home: Path) -> Path:
    """A catalog naming the scripted model "scripted" (the pool's is the one that answers)."""
    (home / "models.json").write_text(json.dumps({"scripted": {"backend": "scripted"}}))
    return home


def test_plan_lists_the_eight_runs_and_reuses_only_a_finished_run_of_the_same_settings(
    store, scripted_pool, catalog
):
    dataset = ensure_sample(store)
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B", delay=0.05))
    same = {"model": "scripted", "shots": 4, "instruction": True, "limit": 2}
    done = run(store, "exam", dataset, same, pool=pool)["run_id"]
    run(store, "exam", dataset, {**same, "limit": 3}, pool=pool)  # another limit
    stopped = Cancel()
    stopped.set()
    other = {**same, "instruction": False}
    assert run(store, "exam", dataset, other, pool=pool, cancel=stopped)["status"] == "cancelled"

    plan = make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=2)

    assert [c.cell.label for c in plan.cells][:4] == [
        "scripted · 0-shot w/ instruction",
        "scripted · 1-shot w/ instruction",
        "scripted · 4-shot w/ instruction",
        "scripted · 8-shot w/ instruction",
    ]
    assert len(plan.cells) == 8
    assert [c.reuse for c in plan.cells] == [None, None, done, None, None, None, None, None]
    found = plan.as_json()
    shared = [r["same_as"] for r in found["runs"] if r["same_as"] is not None]
    assert shared in ([], [1])  # 0 shots w/o instruction: the 0-shot prompt, when it is one
    assert found["to_play"] == 7 - len(shared) and found["reused"] == 1
    assert found["runs"][2]["reuses"] == done and found["runs"][0]["items"] == 2
    one_shot = found["runs"][1]  # no run with one example: timed by the model's other runs
    # (its seconds, to a tenth, may be 0.0: the scripted runs answer in hundredths)
    assert one_shot["rough"] and one_shot["paced_by"] is not None
    assert one_shot["seconds"] is not None
    assert "timed by their model's runs with other settings" in plan.time_text()


def test_one_job_fills_every_cell_and_running_it_again_asks_nothing(store, scripted_pool, catalog):
    dataset = ensure_sample(store)
    model = ScriptedModel("scripted", replies="答案：B")
    pool = scripted_pool(model)
    plan = make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=2)
    experiment_id, new = open_experiment(store, plan)
    seen = []

    result = run_experiment(store, experiment_id, pool=pool, progress=seen.append)

    assert new and result["status"] == "finished" and len(result["played"]) == 8
    found = records.get(store, experiment_id)
    assert found["status"] == "finished"
    assert [len(store.answers(c["run_id"])) for c in found["cells"]] == [2] * 8
    assert [store.run(c["run_id"])["settings"]["shots"] for c in found["cells"]] == [0, 1, 4, 8] * 2
    runs = {c["run_id"] for c in found["cells"]}
    assert len(runs) == len(store.runs())  # 0 shots with and without: one prompt, one run
    assert len(model.requests) == 2 * len(runs)
    last = seen[-1]
    assert last.done == last.total == 2 * len(runs) and last.info["cell"] == 8
    assert last.info["left_s"] == 0

    again_id, new = open_experiment(
        store, make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=2)
    )
    assert (again_id, new) == (experiment_id, False)
    assert run_experiment(store, experiment_id, pool=pool)["played"] == []
    assert len(model.requests) == 2 * len(runs)


def test_a_stopped_experiment_goes_on_where_it_stopped_with_nothing_asked_twice(
    store, scripted_pool, catalog
):
    dataset = ensure_sample(store)
    model = ScriptedModel("scripted", replies="答案：B")
    pool = scripted_pool(model)
    experiment_id, _ = open_experiment(
        store, make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=3)
    )
    cancel = Cancel()

    def stop_midway(p):
        if p.done >= 7:  # the third run, one question in
            cancel.set()

    stopped = run_experiment(store, experiment_id, pool=pool, progress=stop_midway, cancel=cancel)

    assert stopped["status"] == "cancelled"
    cells = records.get(store, experiment_id)["cells"]
    assert [c["status"] for c in cells[:4]] == ["finished", "finished", "cancelled", "not started"]
    kept = {a["item_key"]: a["id"] for a in store.answers(cells[2]["run_id"])}
    assert len(kept) == 1

    result = run_experiment(store, experiment_id, pool=pool)

    assert result["status"] == "finished"
    cells = records.get(store, experiment_id)["cells"]
    assert [len(store.answers(c["run_id"])) for c in cells] == [3] * 8
    resumed = {a["item_key"]: a["id"] for a in store.answers(cells[2]["run_id"])}
    assert {k: resumed[k] for k in kept} == kept  # the answer stored before the stop is kept
    runs = {c["run_id"] for c in cells}
    assert len(model.requests) == 3 * len(runs) == 3 * len(store.runs())  # none asked twice


def test_an_experiment_file_is_a_grid_over_the_models(store, scripted_pool, catalog, tmp_path):
    dataset = ensure_sample(store)
    path = tmp_path / "grid.toml"
    path.write_text(
        'title = "Letters"\nactivity = "exam"\nmodels = ["scripted"]\nlimit = 2\n'
        '[settings]\nmethod = "logprob"\n[grid]\nshots = [0, 1]\nlang = ["zh", "en"]\n'
    )

    plan = make_plan(store, str(path), None, dataset)

    assert plan.title == "Letters" and len(plan.cells) == 4
    assert plan.cells[3].cell.settings == {
        "method": "logprob", "model": "scripted", "limit": 2, "shots": 1, "lang": "en"
    }  # fmt: skip
    pool = scripted_pool(ScriptedModel("scripted", replies="B"))
    experiment_id, _ = open_experiment(store, plan)
    assert run_experiment(store, experiment_id, pool=pool)["status"] == "finished"

    path.write_text('activity = "exam"\nmodels = ["scripted"]\nshots = 3\n')
    with pytest.raises(PlanError, match="unknown key\\(s\\) shots"):
        make_plan(store, str(path), None, dataset)
    path.write_text("activity = [")
    with pytest.raises(PlanError, match="is not an experiment file"):
        make_plan(store, str(path), None, dataset)
    path.write_text('activity = "exam"\n[grid]\nshots = [3]\n')
    with pytest.raises(PlanError, match="shots must be one of"):
        make_plan(store, str(path), ["scripted"], dataset)


def test_the_report_has_table_8_table_3_and_figure_3_and_joins_only_runs_that_differ_in_shots(
    store, scripted_pool, catalog
):
    from engine.exam.figures import _runs, figure3
    from engine.reports import render
    from engine.reports.experiment import experiment_report

    dataset = ensure_sample(store)
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    ids = []
    for limit in (2, 3):
        experiment_id, _ = open_experiment(
            store, make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=limit)
        )
        run_experiment(store, experiment_id, pool=pool)
        ids.append(experiment_id)

    report = experiment_report(store, ids[0])

    section = report["sections"][0]
    titles = [t["title"] for t in section["tables"]]
    assert titles[1].startswith("ExplainCPE Table 8") and titles[2].startswith("ExplainCPE Table 3")
    assert len(section["tables"][1]["rows"]) == 8 and len(section["tables"][2]["rows"]) == 1
    best = section["tables"][2]["rows"][0]  # every run scored the same: they all tie
    runs = {c["run_id"] for c in records.get(store, ids[0])["cells"]}
    assert best[5] == len(runs) and best[1].endswith(f"(tied with {len(runs) - 1} others)")
    chart = section["charts"][0]
    assert chart["kind"] == "lines" and chart["title"].startswith("ExplainCPE Figure 3")
    assert sorted(s["name"] for s in chart["series"]) == [
        "scripted w/ instruction", "scripted w/o instruction"
    ]  # fmt: skip
    point = chart["series"][0]["points"][0]
    assert point["x"] == 0 and point["low"] < point["value"] < point["high"]
    page = render(report, "html")
    assert "ExplainCPE Table 8" in page and page.count("<svg") >= 2

    both = _runs(store, records.get(store, ids[0])) + _runs(store, records.get(store, ids[1]))
    lines = figure3(both)["series"]
    assert len(lines) == 4  # runs over 2 and over 3 questions are not one line
    assert all(len(s["points"]) == 4 for s in lines)


def test_consult_table2_plays_each_doctor_and_prompt_then_the_bounds_and_oracles(
    store, scripted_pool, home
):
    from engine.consult.cases.cases import ensure_sample as cases_sample
    from engine.reports.experiment import experiment_report

    (home / "models.json").write_text(json.dumps({"doc": {"backend": "scripted"}}))
    dataset = cases_sample(store)
    doctor = ScriptedModel("doc", replies=["Where does it hurt?", "I have enough."])
    pool = scripted_pool(ScriptedModel("smollm2", replies="It hurts here. B"), doctor)
    plan = make_plan(store, "consult-table2", ["doc"], dataset, limit=2)
    doctors = [(c.cell.settings["doctor"], c.cell.settings.get("style")) for c in plan.cells]
    assert doctors == [
        ("doc", "long"), ("doc", "short"), ("upper", None), ("oracle-direct", None),
        ("oracle-random", None), ("oracle-reverse", None), ("lower", None),
    ]  # fmt: skip
    experiment_id, _ = open_experiment(store, plan)

    assert run_experiment(store, experiment_id, pool=pool)["status"] == "finished"

    cells = records.get(store, experiment_id)["cells"]
    assert [store.run(c["run_id"])["runner"] for c in cells][:3] == ["model", "model", "upper"]
    assert all(len(store.answers(c["run_id"])) == 2 for c in cells)
    report = experiment_report(store, experiment_id)
    consult = next(s for s in report["sections"] if s["activity"] == "consult")
    assert "Table 2" in consult["tables"][0]["title"] and len(consult["tables"][0]["rows"]) >= 7


def test_compare_models_runs_the_same_items_through_each_model_and_compares_them(
    store, scripted_pool, home
):
    from engine.experiments.presets import compare_report, compare_summary

    scripts = {"qa": {"backend": "scripted"}, "qb": {"backend": "scripted"}}
    (home / "models.json").write_text(json.dumps(scripts))
    dataset = ensure_sample(store)
    pool = scripted_pool(
        ScriptedModel("qa", replies="答案：B"), ScriptedModel("qb", replies="答案：D")
    )
    plan = make_plan(store, "compare-models", ["qa", "qb"], dataset, limit=12)
    assert [c.cell.settings for c in plan.cells] == [
        {"model": "qa", "limit": 12}, {"model": "qb", "limit": 12}
    ]  # fmt: skip
    experiment_id, _ = open_experiment(store, plan)
    run_experiment(store, experiment_id, pool=pool)
    experiment = records.get(store, experiment_id)

    result, text = compare_summary(store, experiment)

    assert [r["model"] for r in result["rows"]] == ["qa", "qb"]
    assert result["items"]["shared"] == 12 and "Models compared" in text
    table = compare_report(store, experiment)["tables"][0]
    assert [row[1] for row in table["rows"]] == ["qa", "qb"]
    # Answering B to every question is guessing: neither model is above chance, none is best.
    assert result["best"] is None and result["chance"] == 20.0
    assert all(not r["best"] and not r["chance"]["above"] for r in result["rows"])
    assert "No model is above chance" in text
    assert table["rows"][0][table["columns"].index("vs chance")] == "not above"


def test_frenchmedmcqa_table2_reads_with_no_passage_when_no_index_is_built(
    store, scripted_pool, catalog
):
    from engine.french.dataset import ensure_sample as french_sample

    dataset = french_sample(store)["dataset"]
    plan = make_plan(store, "frenchmedmcqa-table2", ["scripted"], dataset, limit=2)
    assert [c.cell.label for c in plan.cells][:1] == ["scripted · no passage"]
    assert plan.cells[0].full["index"] is None and plan.cells[0].full["k"] == 0


def test_each_model_plays_its_runs_in_turn_and_the_models_play_at_once(store, scripted_pool, home):
    import threading
    import time

    scripts = {"qa": {"backend": "scripted"}, "qb": {"backend": "scripted"}}
    (home / "models.json").write_text(json.dumps(scripts))
    dataset = ensure_sample(store)
    busy: dict[str, list[tuple[float, float]]] = {"qa": [], "qb": []}
    lock = threading.Lock()

    def answering(name):
        def reply(_request):
            started = time.monotonic()
            time.sleep(0.2)
            with lock:
                busy[name].append((started, time.monotonic()))
            return "答案：B"

        return reply

    pool = scripted_pool(ScriptedModel("qa", replies=answering("qa")),
                         ScriptedModel("qb", replies=answering("qb")))  # fmt: skip
    plan = make_plan(store, "explaincpe-table8", ["qa", "qb"], dataset, limit=2)
    experiment_id, _ = open_experiment(store, plan)

    result = run_experiment(store, experiment_id, pool=pool)

    assert result["status"] == "finished"
    cells = records.get(store, experiment_id)["cells"]
    for model in ("qa", "qb"):  # one model's runs one after the other, in the plan's order
        ids = list(dict.fromkeys(c["run_id"] for c in cells if c["coords"]["model"] == model))
        assert ids == sorted(ids) and len(busy[model]) == 2 * len(ids)
        assert all(store.run(i)["model"] == model for i in ids)
    overlapping = [
        (a, b) for a in busy["qa"] for b in busy["qb"] if a[0] < b[1] and b[0] < a[1]
    ]  # fmt: skip
    assert overlapping  # the two models answered at the same time


def test_a_cell_whose_run_cannot_start_says_why_and_the_others_are_played(
    store, scripted_pool, home
):
    scripts = {"qa": {"backend": "scripted"}, "qb": {"backend": "scripted"}}
    (home / "models.json").write_text(json.dumps(scripts))
    dataset = ensure_sample(store)
    plan = make_plan(store, "compare-models", ["qb", "qa"], dataset, limit=2)
    experiment_id, _ = open_experiment(store, plan)
    only_a = scripted_pool(ScriptedModel("qa", replies="答案：B"))  # qb cannot be loaded

    result = run_experiment(store, experiment_id, pool=only_a)

    assert result["status"] == "failed" and len(result["played"]) == 1
    assert result["failed"][0]["label"] == "qb" and result["failed"][0]["run_id"] is None
    cells = records.get(store, experiment_id)["cells"]
    assert [c["status"] for c in cells] == ["could not start", "finished"]
    assert cells[0]["error"] == result["failed"][0]["error"] and cells[0]["error"]

    both = scripted_pool(ScriptedModel("qa"), ScriptedModel("qb", replies="答案：D"))
    assert run_experiment(store, experiment_id, pool=both)["status"] == "finished"
    assert records.get(store, experiment_id)["cells"][0]["error"] is None


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("temperature = 0.5", "unknown key(s) temperature (a run's settings go under [settings];"),
        ("temprature = 0.5", "unknown key(s) temprature (a run's settings go under [settings];"),
        ('modles = ["smollm2"]', "unknown key(s) modles (did you mean 'models'?;"),
        ("limt = 3", "unknown key(s) limt (did you mean 'limit'?;"),
    ],
)
def test_an_unknown_top_level_key_says_where_it_belongs(tmp_path, line, said):
    path = tmp_path / "grid.toml"
    path.write_text(f'activity = "exam"\n{line}\n')
    with pytest.raises(PlanError) as found:
        read_file(path)
    assert said in str(found.value) and "\n" not in str(found.value)


@pytest.mark.parametrize("value", ["true", '"3"', "0", "2.5"])
def test_a_limit_that_is_not_a_whole_number_is_refused_naming_it(store, tmp_path, value):
    path = tmp_path / "grid.toml"
    path.write_text(f'activity = "exam"\nmodels = ["smollm2"]\ndataset = "d"\nlimit = {value}\n')
    with pytest.raises(PlanError, match=r"limit must be a whole number of at least 1 \(got "):
        make_plan(store, str(path), None, None)


@pytest.mark.parametrize(("limit", "said"), [(1, "; the first item"), (3, "; the first 3 items")])
def test_the_experiments_runs_table_counts_its_items_in_words(limit, said):
    from engine.reports.experiment import grid_table

    spec = {"dataset": "d", "models": ["m"], "limit": limit}
    found = grid_table({"id": 1, "status": "finished", "cells": [], "spec": spec})
    assert found["notes"] == [f"Data set d; models m{said}"]
