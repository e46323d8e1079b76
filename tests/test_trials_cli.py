"""Trials of exam and French runs from the command line, with the real embedded model: a
generated answer sampled at a temperature, K runs with K seeds and their spread; methods and
readers that do not sample are refused in one line before any model is loaded."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.store.store import Store


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["exam", "run", "--method", "logprob", "--temperature", "0.7"], "does not sample"),
        (["exam", "run", "--method", "generate"], "temperature 0 would all be the same"),
        (
            ["french", "run", "--dataset", "x", "--method", "logprob", "--temperature", "1"],
            "does not sample",
        ),  # fmt: skip
    ],
)
def test_trials_that_would_all_be_the_same_are_refused(db_path, args, said):
    out = invoke(db_path, *args, "--trials", "3")
    assert out.exit_code == 1 and said in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1
    assert Store(db_path).runs() == []


@pytest.mark.slow
def test_exam_trials_sample_and_report_their_spread(db_path, chat_model):
    out = invoke(
        db_path, "exam", "run", "--method", "generate", "--temperature", "0.9", "--trials", "2",
        "--limit", "2", "--max-tokens", "12", "--seed", "7", "--lang", "en",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    last = json.loads(out.output.strip().splitlines()[-1])
    assert len(last["run_ids"]) == 2 and "accuracy" in last["spread"]
    assert "trial 1: run" in out.output and "trial 2: run" in out.output
    store = Store(db_path)
    runs = [store.run(r) for r in last["run_ids"]]
    assert [r["settings"]["seed"] for r in runs] == [7, 8]
    assert {r["settings"]["temperature"] for r in runs} == {0.9}
    assert {r["settings"]["trial_set"] for r in runs} == {last["trial_set"]}
    assert all(len(store.answers(r["id"])) == 2 for r in runs)


@pytest.mark.slow
def test_french_trials_sample_and_report_their_spread(db_path, chat_model):
    assert invoke(db_path, "french", "sample").exit_code == 0
    out = invoke(
        db_path, "french", "run", "--dataset", "frenchmedmcqa-sample", "--temperature", "0.8",
        "--trials", "2", "--limit", "2", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    last = json.loads(out.output.strip().splitlines()[-1])
    assert len(last["run_ids"]) == 2 and {"hamming", "emr"} <= last["spread"].keys()
    store = Store(db_path)
    assert [store.run(r)["settings"]["seed"] for r in last["run_ids"]] == [0, 1]


@pytest.mark.parametrize(
    ("activity", "said"), [("french", "hamming 55.5%"), ("exam", "accuracy 40.0%")]
)
def test_a_trial_line_gives_the_activitys_headline_score(db_path, capsys, activity, said):
    from engine.cli.common import AppContext
    from engine.cli.running import _trial_line

    app = AppContext(db_path)
    run_id = app.store.start_run(activity, "set", "smollm2", {"trial": 2}, n_total=3)
    summary = {"run_id": run_id, "status": "finished", "n": 3, "accuracy": 40.0, "hamming": 55.5}
    _trial_line(app, summary)
    assert capsys.readouterr().out == f"trial 2: run {run_id} (finished), 3 items, {said}\n"
