"""The turn budget: the same settings at 1, 2 and 3 questions allowed (scripted doctor,
patient and solver: these tests are about the budget, not the models), finished runs reused,
the report's table and chart, bad budgets refused in one line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.consult.doctor.budget import BudgetError, parse_turns, turn_budget
from engine.consult.report.section import budget_tables
from engine.models.scripted import ScriptedModel
from engine.reports import build_report, render

ROLES = {
    "doctor": "model",
    "patient": "patient",
    "solver": "solver",
    "limit": 2,
    "answer_method": "generate",
}


@pytest.fixture
def pool(scripted_pool):
    return scripted_pool(
        ScriptedModel("doctor", replies=lambda r: f"Question number {r.number}?"),
        ScriptedModel("patient", replies="It started yesterday, doctor."),
        ScriptedModel("solver", replies="B"),
    )


def test_each_budget_is_played_once_and_reused_after(store, pool):
    cases = ensure_sample(store)
    rows = turn_budget(store, cases, ROLES, [1, 2, 3], pool=pool)
    assert [r["turns"] for r in rows] == [1, 2, 3] and not any(r["reused"] for r in rows)
    assert [r["avg_turns"] for r in rows] == [1.0, 2.0, 3.0]  # the doctor asks all it may
    assert [store.run(r["run_id"])["settings"]["max_turns"] for r in rows] == [1, 2, 3]
    again = turn_budget(store, cases, ROLES, [2, 3, 4], pool=pool)
    assert [r["reused"] for r in again] == [True, True, False]
    assert [r["run_id"] for r in again[:2]] == [rows[1]["run_id"], rows[2]["run_id"]]
    other = turn_budget(store, cases, {**ROLES, "style": "short"}, [1], pool=pool)
    assert not other[0]["reused"]  # other settings: another experiment


def test_the_report_draws_the_budget_curve(store, pool):
    cases = ensure_sample(store)
    rows = turn_budget(store, cases, ROLES, [1, 3], pool=pool)
    lone = turn_budget(store, cases, {**ROLES, "style": "short"}, [2], pool=pool)
    ids = [r["run_id"] for r in rows + lone]
    tables, charts = budget_tables([store.run(i) for i in ids])
    assert len(tables) == 1 and [row[1] for row in tables[0]["rows"]] == [1, 3]
    assert [p["name"] for p in charts[0]["points"]] == ["1 question", "3 questions"]
    html = render(build_report(store, ids), "html")
    assert "Turn budget" in html and "Accuracy against the questions allowed" in html


def test_bad_budgets_are_one_line():
    assert parse_turns("8, 2,4,2") == [2, 4, 8]
    for bad in ("", "0,2", "two"):
        with pytest.raises(BudgetError):
            parse_turns(bad)
    out = CliRunner().invoke(cli, ["consult", "budget", "--turns", "1,x"])
    assert out.exit_code == 1 and "whole numbers" in out.output and "Traceback" not in out.output
