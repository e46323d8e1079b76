"""A measure added with one scorer and no other edit: the scorer registered here (and
removed after each test) names one metric with its label, and the metric is found in a run's
summary and its rescore, in the HTML report's exam table, the exam run's lines, the models
compared, a trials table, the SQL view of run metrics and the app's Results."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.runs import run
from engine.core.scoring import Context, Metric, Scorer, percent, rescore
from engine.core.trials import run_trials, trial_tables
from engine.exam.cli import _summary_lines
from engine.exam.dataset import ensure_sample
from engine.experiments.compare import metrics_of
from engine.models.scripted import ScriptedModel
from engine.registry import entries, register, unregister
from engine.reports import build_report
from engine.reports.render import to_html
from engine.types import Item, Row

NAME = "exam.brevity"
KEY = "short_reply"
METRIC = "short_replies"
LABEL = "Replies under 40 characters (%)"


def brevity(answer: Row, item: Item, context: Context) -> dict[str, bool]:
    """Whether the reply is under 40 characters."""
    return {KEY: len(str(answer.get("response") or "")) < 40}


def replies(request) -> str:
    """A short reply, then a long one, in turn."""
    if request.number % 2:
        return "答案：B"
    return "答案：C\n解析：本题考查药物的作用与不良反应，故本题选C，其余选项均不符合题意。"


@pytest.fixture
def added() -> Iterator[Scorer]:
    register(
        "scorer",
        name=NAME,
        activities=("exam",),
        keys=(KEY,),
        metrics={METRIC: Metric(KEY, percent(1), LABEL)},
    )(brevity)
    yield entries("scorer")[NAME]
    unregister("scorer", NAME)


def exam_run(store, scripted_pool, **settings) -> dict:
    pool = scripted_pool(ScriptedModel("teacher", replies=replies))
    given = {"model": "teacher", "limit": 4, **settings}
    return run(store, "exam", ensure_sample(store), given, pool=pool)


def expected(store, run_id: int) -> float:
    """The share of short replies among the run's stored answers, as the metric gives it."""
    answers = store.answers(run_id)
    return round(100 * sum(len(a["response"]) < 40 for a in answers) / len(answers), 1)


def test_the_added_metric_is_in_the_summary_report_tables_and_view(
    store, scripted_pool, added, capsys
):
    summary = exam_run(store, scripted_pool)
    run_id = summary["run_id"]
    value = expected(store, run_id)
    assert 0 < value < 100
    assert summary[METRIC] == value
    assert summary["accuracy"] is not None and summary["rouge1"] is not None  # still there
    assert {r["scorer"] for r in store.run_scorers(run_id)} >= {"exam.letter", NAME}
    assert rescore(store, run_id, force=True).summary[METRIC] == value
    said = CliRunner().invoke(cli, ["--db", store.path, "rescore", str(run_id), "--force"])
    assert said.exit_code == 0 and LABEL in said.output, said.output

    report = build_report(store, [run_id])
    exam_table = report["sections"][0]["tables"][0]
    column = exam_table["columns"].index(LABEL)
    assert exam_table["rows"][0][column] == value
    page = to_html(report)
    assert LABEL in page and f"{value:.1f}" in page

    _summary_lines(summary)
    assert f"{LABEL}" in capsys.readouterr().out

    assert METRIC in [m.key for m in metrics_of("exam")]

    view = store.db.execute(
        "SELECT value FROM v_run_metrics WHERE run_id = ? AND key = ?", [run_id, METRIC]
    ).fetchall()
    assert view == [(value,)]


def test_a_trials_table_reports_the_added_metric(store, scripted_pool, added):
    pool = scripted_pool(ScriptedModel("teacher", replies=replies))
    settings = {"model": "teacher", "limit": 4, "temperature": 0.7}
    found = run_trials(store, "exam", ensure_sample(store), settings, 2, pool=pool)
    table = trial_tables(store, found.run_ids)[0]
    column = table["columns"].index(LABEL)
    assert table["rows"][0][column].startswith(f"{expected(store, found.run_ids[0]):.2f}")


def test_consult_table_has_a_column_for_an_added_consultation_measure(store):
    from engine.consult.report.tables import paper_table, render_table

    name, label = "consult.brevity", "Short questions (%)"
    metric = Metric("short_question", percent(1), label)
    register(
        "scorer",
        name=name,
        activities=("consult",),
        keys=("short_question",),
        metrics={"short": metric},
    )(brevity)
    try:
        run_id = store.start_run("consult", "cases", "doctor", {}, runner="model", n_total=1)
        store.finish_run(run_id, {"accuracy": 0.0, "n": 1, "short": 25.0})
        table = paper_table(store, [run_id], bounds=False)
        assert table["rows"][0]["short"] == 25.0
        text = render_table(table)
        assert label in text.splitlines()[0] and "25.00" in text.splitlines()[1]
    finally:
        unregister("scorer", name)


def test_without_the_scorer_there_is_no_such_metric(store, scripted_pool):
    summary = exam_run(store, scripted_pool)
    assert NAME not in entries("scorer") and METRIC not in summary
    assert METRIC not in [m.key for m in metrics_of("exam")]


@pytest.mark.gui
def test_the_apps_results_show_the_added_metric(qtbot, window, scripted_pool, added):
    store = window.ctx.store
    run_id = exam_run(store, scripted_pool)["run_id"]
    r = window.go("results")
    r.reload()
    r.select_runs([run_id])
    shown = r.summary.toPlainText()
    assert LABEL in shown and f"{expected(store, run_id):.1f}" in shown
