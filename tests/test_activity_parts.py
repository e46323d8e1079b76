"""What shared code reads from an activity rather than naming it: the share right is one of
its scorers' metrics (not a count every summary adds), a metric's short header heads its
column in a trials table, a run's scores by category come from its descriptor's
``breakdown``, and the explanation scorers fit the activities whose answers are explained."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.activities import Activity, activities
from engine.core.scoring import Metric, counts, percent, right_key
from engine.core.trials import header, short_headers, table_keys
from engine.ratings.scorers import ACTIVITIES
from engine.registry import FUNCTION, Lazy, entries, get, register, unregister
from engine.reports.results import category_scores

BY_PARITY = ("Right by parity", [("even", 50.0, 2), ("odd", 100.0, 1)])


def parity(summary: dict) -> tuple[str, list[tuple[str, float, int]]] | None:
    """The test activity's breakdown: what its summary says, whatever the items."""
    return BY_PARITY if summary.get("by_parity") else None


@pytest.fixture
def tally() -> Iterator[Activity]:
    found = register(
        "activity",
        Activity("tally", "Tally", "right", "tally", breakdown=Lazy(__name__, "parity", FUNCTION)),
    )
    yield found
    unregister("activity", "tally")


@pytest.fixture
def brief() -> Iterator[str]:
    name = "exam.brief"
    register(
        "scorer",
        name=name,
        activities=("exam",),
        keys=("brief",),
        metrics={"brief_replies": Metric("brief", percent(1), "Brief replies (%)", short="Brief")},
    )(lambda answer, item, context: {"brief": True})
    yield "brief_replies"
    unregister("scorer", name)


def test_the_share_right_is_a_metric_of_each_activitys_scorers() -> None:
    answers = [{"correct": True}, {"correct": False, "extra": {"error": "timed out"}}]
    assert counts(answers, 3) == {"n": 3, "answered": 1, "failed": 1}
    for activity_id in activities():
        if activity_id in ("exam", "consult", "french"):
            assert right_key(activity_id) == "accuracy"
    assert right_key("no such activity") is None


def test_a_metrics_short_header_heads_its_trials_column(brief: str) -> None:
    assert list(short_headers(["exam"])) == ["accuracy", brief]
    assert table_keys(["exam"])[brief] == "Brief"
    assert table_keys(["exam"])["rouge1"] == "ROUGE-1"  # no short header: its label
    assert header(brief) == header(brief, "exam") == "Brief"
    assert header("turns", "consult") == "Turns"  # the metric of each case's turns
    assert list(short_headers(["french"])) == ["accuracy", "hamming", "emr"]


def test_a_runs_scores_by_category_come_from_its_activitys_breakdown(tally) -> None:
    run = {"activity": "tally", "summary": {"by_parity": True}}
    assert category_scores(run) == BY_PARITY
    assert category_scores({**run, "summary": {}}) == ("", [])


def test_explanations_are_rated_for_the_activities_that_explain_their_answers() -> None:
    explained = [a for a, found in activities().items() if found.explained]
    assert set(ACTIVITIES) == set(explained)
    for name in ("explanation-rating", "explanation-judge"):
        assert set(get("scorer", name).activities) == set(explained)


def test_a_chart_kind_is_drawn_by_what_registered_it() -> None:
    import engine.exam.section  # noqa: F401 - the exam's sections draw its reliability diagram
    from engine.reports.charts import chart_figure, chart_svg, figure

    assert {"interval", "lines", "reliability"} <= set(entries("chart"))

    def dots(chart):
        fig = figure(2)
        fig.add_subplot().set_title(f"{len(chart['series'])} dots")
        return fig

    register("chart", name="dots")(dots)
    try:
        drawn = chart_figure({"kind": "dots", "title": "Dots", "series": [{}, {}]})
        assert drawn is not None and drawn.axes[0].get_title() == "2 dots"
        assert chart_svg({"kind": "dots", "title": "Dots", "series": [{}]}).startswith("<svg")
    finally:
        unregister("chart", "dots")
    with pytest.raises(ValueError, match="unknown chart kind 'dots'"):
        chart_svg({"kind": "dots", "title": "Dots", "series": [{}]})


def test_threads_asking_for_the_activities_at_once_all_find_them() -> None:
    """The first call imports the activity packages; threads asking meanwhile (an
    experiment's lanes, runs played at once) wait for them rather than find none."""
    import json
    import subprocess
    import sys

    script = (
        "import threading\n"
        "from engine.activities import activities\n"
        "barrier, found = threading.Barrier(8), []\n"
        "def ask():\n"
        "    barrier.wait()\n"
        "    found.append(list(activities()))\n"
        "threads = [threading.Thread(target=ask) for _ in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "import json; print(json.dumps(found))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert len(found) == 8 and found[0][:3] == ["exam", "consult", "french"]
    assert all(f == found[0] for f in found)
