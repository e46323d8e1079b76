"""``medexam experiment`` on the command line: a kill -9 in the middle of an experiment, then
``experiment run`` again finishes it with nothing lost or asked twice; ``experiment show
--json`` lists each experiment's id, runs and status; ``report --experiment`` draws Table 8
and Figure 3; bad input is one line. The loop's model is scripted, in a catalog of the test's
own (:func:`tests.test_runs.scripted_home`); one test runs the real embedded model."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from test_runs import medexam, scripted_home, start

from engine.store.store import Store

TABLE8 = ["experiment", "run", "explaincpe-table8", "--dataset", "explaincpe-sample"]


def _answers_by_run(db: str) -> dict[int, list[tuple[str, int]]]:
    store = Store(db)
    try:
        return {
            int(r["id"]): sorted((a["item_key"], int(a["id"])) for a in store.answers(r["id"]))
            for r in store.runs()
        }
    finally:
        store.close()


def _wait_for_run(db: str, proc, runs: int, answers: int) -> None:
    """Wait until the experiment has ``runs`` runs and the newest ``answers`` answers."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if Path(db).exists():
            found = _answers_by_run(db)
            if len(found) >= runs and len(found[max(found)]) >= answers:
                return
        time.sleep(0.1)
    raise AssertionError("the experiment did not get that far")


def test_kill_9_mid_experiment_then_run_again_finishes_with_nothing_lost_or_repeated(
    db_path, tmp_path
):
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：B", "delay": 0.4})
    assert medexam(db_path, "exam", "sample", env=env).returncode == 0
    args = [*TABLE8, "--models", "slow", "--limit", "3"]
    proc = start(db_path, *args, env=env)
    _wait_for_run(db_path, proc, runs=3, answers=1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    before = _answers_by_run(db_path)
    shown = json.loads(medexam(db_path, "experiment", "show", "1", "--json", env=env).stdout)
    assert shown["status"] == "interrupted"
    assert "interrupted" in [r["status"] for r in shown["runs"]]
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：B"})  # no need to wait now

    again = medexam(db_path, *args, env=env)

    assert again.returncode == 0, again.stderr
    assert "experiment 1 goes on" in again.stderr and "Traceback" not in again.stderr
    after = _answers_by_run(db_path)
    assert set(before) <= set(after)  # the killed run was resumed, not started again
    for run_id, answers in before.items():
        assert set(answers) <= set(after[run_id])  # nothing lost: the same answers, same ids
    assert all(len(a) == 3 for a in after.values())  # nothing asked twice
    shown = json.loads(medexam(db_path, "experiment", "show", "--json", env=env).stdout)
    assert [e["id"] for e in shown] == [1] and shown[0]["status"] == "finished"
    runs = shown[0]["runs"]
    assert len(runs) == 8 and {r["status"] for r in runs} == {"finished"}
    assert {r["run_id"] for r in runs} == set(after)
    assert all({"run_id", "label", "status", "done", "total"} <= set(r) for r in runs)


def test_ctrl_c_cancels_the_run_being_played_and_experiment_run_id_goes_on(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：B", "delay": 0.6})
    assert medexam(db_path, "exam", "sample", env=env).returncode == 0
    proc = start(db_path, *TABLE8, "--models", "slow", "--limit", "3", env=env)
    _wait_for_run(db_path, proc, runs=1, answers=1)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "experiment 1 cancelled; go on with: medexam experiment run 1" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    shown = json.loads(medexam(db_path, "experiment", "show", "1", "--json", env=env).stdout)
    assert shown["status"] == "cancelled" and shown["runs"][0]["status"] == "cancelled"
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：B"})  # no need to wait now

    again = medexam(db_path, "experiment", "run", "1", env=env)

    assert again.returncode == 0, again.stderr
    assert all(len(a) == 3 for a in _answers_by_run(db_path).values())


def test_report_of_an_experiment_has_table_8_and_figure_3(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", quick={"replies": "答案：B"})
    assert medexam(db_path, "exam", "sample", env=env).returncode == 0
    out = medexam(db_path, *TABLE8, "--models", "quick", "--limit", "2", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "finished"
    page, figures = tmp_path / "table8.html", tmp_path / "figures"

    made = medexam(db_path, "report", "--experiment", "1", "--out", str(page),
                   "--figures", str(figures), env=env)  # fmt: skip

    assert made.returncode == 0, made.stderr
    html = page.read_text(encoding="utf-8")
    assert "ExplainCPE Table 8" in html and "ExplainCPE Table 3" in html
    assert "ExplainCPE Figure 3" in html and "<svg" in html
    assert html.count("0-shot w/o instruction") >= 1
    names = sorted(p.suffix for p in figures.iterdir() if "figure-3" in p.name)
    assert names == [".png", ".svg"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["experiment", "plan", "table99", "--models", "smollm2"], "Error: no preset 'table99'"),
        (
            ["experiment", "plan", "explaincpe-table8", "--dataset", "explaincpe-sample"],
            "Error: no models given (--models A,B)",
        ),
        (
            ["experiment", "run", "explaincpe-table8", "--models", "smollm2", "--dataset", "x"],
            "Error: no data set named 'x'",
        ),
        (
            [
                "experiment",
                "plan",
                "explaincpe-table8",
                "--models",
                "nope",
                "--dataset",
                "explaincpe-sample",
            ],
            "Error: no model named 'nope'",
        ),  # fmt: skip
        (["experiment", "show", "7"], "Error: no experiment with id 7"),
        (["report", "--experiment", "7"], "Error: no experiment with id 7"),
    ],
)
def test_bad_input_is_one_line(db_path, args, said):
    assert medexam(db_path, "exam", "sample").returncode == 0
    out = medexam(db_path, *args)
    assert out.returncode == 1 and out.stderr.startswith(said), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_file_that_is_not_an_experiment_is_one_line(db_path, tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text("activity = [")
    out = medexam(db_path, "experiment", "plan", str(path), "--models", "smollm2")
    assert out.returncode == 1 and "is not an experiment file (TOML)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_real_model_plays_a_grid_and_the_plan_then_reuses_it(db_path, tmp_path):
    path = tmp_path / "letters.toml"
    path.write_text('activity = "exam"\n[settings]\nmethod = "logprob"\n[grid]\nshots = [0, 1]\n')
    assert medexam(db_path, "exam", "sample").returncode == 0
    given = [str(path), "--models", "smollm2", "--dataset", "explaincpe-sample", "--limit", "2"]

    out = medexam(db_path, "experiment", "run", *given, "--json")

    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["status"] == "finished" and [r["done"] for r in found["runs"]] == [2, 2]
    plan = json.loads(medexam(db_path, "experiment", "plan", *given, "--json").stdout)
    assert plan["experiment_id"] == found["id"] and plan["to_play"] == 0
    assert [r["status"] for r in plan["runs"]] == ["finished", "finished"]


@pytest.mark.parametrize("command", ["run", "plan"])
def test_help_names_only_what_its_usage_shows(command):
    from click.testing import CliRunner

    from engine.cli.experiment import experiment

    out = CliRunner().invoke(experiment, [command, "--help"])
    assert out.exit_code == 0 and "PRESET|FILE" in out.output
    assert "WHAT" not in out.output, out.output


def test_an_experiments_progress_line_says_the_time_left_once():
    from engine.cli.experiment import _note
    from engine.core.progress import Progress, TenthLines

    lines: list[str] = []
    tenths = TenthLines("experiment 1", lines.append, _note, clock=iter(range(0, 99, 13)).__next__)
    info = {"cell": 2, "cells": 8, "label": "smollm2 · 1-shot w/ instruction", "left_s": 120.0}
    tenths(Progress(2, 7, "", info))
    assert lines == [
        "experiment 1: 29% (2/7 items) · 0:13 elapsed · 0:32 left · run 2/8 · smollm2 · "
        "1-shot w/ instruction"
    ]
