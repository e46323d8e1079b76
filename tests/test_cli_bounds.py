"""Absurd numbers typed on the command line are refused in one line before anything runs
(--turns, --max-turns, --limit, any whole-number setting), and `consult budget` ends on
Ctrl-C like every run command: the run cancelled and said so, exit 130."""

from __future__ import annotations

import signal

import pytest
from click.testing import CliRunner
from test_runs import scripted_home, start, wait_for_answers

from engine.cli import cli
from engine.consult.settings import ConsultSettings
from engine.fields import INT_MAX, describe
from engine.store.store import Store

HUGE = str(10**20)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["consult", "budget", "--turns", f"1,{HUGE}"], "a budget is at most 100 questions"),
        (["consult", "run", "--max-turns", HUGE], "--max-turns"),
        (["consult", "run", "--limit", HUGE], "--limit"),
        (["consult", "run", "--seed", HUGE], "--seed"),
        (["consult", "run", "--trials", "1000"], "--trials"),
        (["consult", "run", "--concurrency", "100000"], "--concurrency"),
        (["consult", "chat", "--case", "x", "--max-turns", HUGE], "--max-turns"),
        (["exam", "run", "--limit", HUGE], "--limit"),
        (["exam", "run", "--max-tokens", HUGE], "--max-tokens"),
        (["exam", "run", "--shots", "1000"], "--shots"),
        (["runs", "list", "--limit", HUGE], "--limit"),
        (["exam", "run", "--n-ctx", HUGE], "--n-ctx"),
        (["exam", "run", "--gpu-layers", HUGE], "--gpu-layers"),
        (["french", "search", "--index", "x", "--query", "y", "-k", HUGE], "'-k'"),
        (["generate", "--prompt", "x", "--max-tokens", HUGE], "--max-tokens"),
    ],
)
def test_an_absurd_number_is_one_line_and_runs_nothing(db_path, args, said):
    out = CliRunner().invoke(cli, ["--db", db_path, *args])
    assert out.exit_code in (1, 2), out.output
    errors = [line for line in out.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and said in errors[0], out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert not Store(db_path).runs()


def test_the_settings_check_bounds_a_whole_number_like_the_command_line():
    turns = next(i for i in describe(ConsultSettings) if i.name == "max_turns")
    seed = next(i for i in describe(ConsultSettings) if i.name == "seed")
    assert turns.problem(100) is None and "at most 100" in turns.problem(101)
    assert seed.problem(INT_MAX) is None and f"at most {INT_MAX}" in seed.problem(10**20)
    with pytest.raises(ValueError, match="max_turns must be at most 100"):
        ConsultSettings(max_turns=10**20)


def test_ctrl_c_in_a_turn_budget_cancels_the_run_like_any_run(db_path, tmp_path):
    env = scripted_home(
        tmp_path / "home",
        slow={"replies": "Where does it hurt?", "delay": 0.3},
        patient={"replies": "Here, doctor."},
        solver={"replies": "B"},
    )
    roles = ["--doctor", "slow", "--patient", "patient", "--solver", "solver"]
    proc = start(db_path, "consult", "budget", *roles, "--answer-method", "generate",
                 "--turns", "2,3", "--limit", "8", env=env)  # fmt: skip
    run_id = wait_for_answers(db_path, 1, proc)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Aborted!" not in err and "Traceback" not in err
    assert f"run {run_id} cancelled (2 questions)" in err
    assert Store(db_path).run(run_id)["status"] == "cancelled"
