"""A model doctor that asks nothing and answers at once: the progress, the run's summary,
`runs show`, `consult run` and the report say so ("the doctor asked no question (it answered
at once)") instead of leaving rows of 0.00 and a blank question diversity unexplained."""

from __future__ import annotations

from click.testing import CliRunner
from test_runs import medexam, scripted_home

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.consult.cli import _note
from engine.consult.scoring.metrics import ASKED_NOTHING
from engine.core.runs import run
from engine.models.scripted import ScriptedModel
from engine.reports import build_report, render

ROLES = {"doctor": "model", "patient": "patient", "solver": "solver", "limit": 2}


def pool_of(scripted_pool, doctor_says: str):
    return scripted_pool(
        ScriptedModel("doctor", replies=doctor_says),
        ScriptedModel("patient", replies="For three days, doctor."),
        ScriptedModel("solver", replies="B"),
    )


def test_a_doctor_that_answers_at_once_is_said_to_have_asked_nothing(store, scripted_pool):
    cases = ensure_sample(store)
    seen = []
    pool = pool_of(scripted_pool, "It is a migraine.")
    summary = run(store, "consult", cases, ROLES, pool=pool, progress=seen.append)
    assert summary["status"] == "finished" and summary["avg_turns"] == 0
    assert summary["asked_nothing"] == 2
    shown = [_note(p) for p in seen if p.info.get("correct") is not None]
    assert len(shown) == 2 and all(line.endswith(ASKED_NOTHING) for line in shown), shown
    assert "0 turns" not in " ".join(shown)

    out = CliRunner().invoke(cli, ["--db", store.path, "runs", "show", str(summary["run_id"])])
    assert "Cases where the doctor asked no question (it answered at once)" in out.output
    report = render(build_report(store, [summary["run_id"]]), "text")
    assert f"2 of 2 cases: {ASKED_NOTHING}" in report


def test_a_doctor_that_asks_is_not(store, scripted_pool):
    cases = ensure_sample(store)
    seen = []
    pool = pool_of(scripted_pool, "How long has this lasted?")
    summary = run(store, "consult", cases, {**ROLES, "max_turns": 1}, pool=pool,
                  progress=seen.append)  # fmt: skip
    assert summary["avg_turns"] == 1 and "asked_nothing" not in summary
    assert [_note(p) for p in seen if p.info.get("correct") is not None][0].endswith("1 turns")
    assert ASKED_NOTHING not in render(build_report(store, [summary["run_id"]]), "text")


def test_consult_run_says_it_on_the_command_line(db_path, tmp_path):
    env = scripted_home(
        tmp_path / "home",
        quiet={"replies": "It is a migraine."},
        patient={"replies": "For three days, doctor."},
        solver={"replies": "B"},
    )
    args = ["--doctor", "quiet", "--patient", "patient", "--solver", "solver", "--limit", "2"]
    out = medexam(db_path, "consult", "run", *args, "--answer-method", "generate", env=env)
    assert out.returncode == 0, out.stderr
    assert f"2 of 2 cases: {ASKED_NOTHING}, so the dialogue scores are 0" in out.stdout
