"""The solver's answers after each share of a consultation (``answer_at``, a run setting:
stored, scored, rescored, resumed, on the command line) and the consultation paper's
Table 3 and Figures 5, 6 and 7 drawn from a ``consult-table2`` experiment. The models are
scripted (:mod:`engine.models.scripted`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import ensure_sample
from engine.consult.doctor.runner import run_consult
from engine.consult.report.figures import fact_bins
from engine.consult.scoring.metrics import turn_analysis
from engine.consult.settings import ConsultSettings
from engine.core.progress import Cancel
from engine.core.scoring import rescore
from engine.experiments import records
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.fields import SettingError
from engine.models.scripted import ScriptedModel

#: Four questions, then the doctor's closing words.
QUESTIONS = ["Where does it hurt?", "Any fever?", "How long has it lasted?", "Any cough?",
             "I have enough information."]  # fmt: skip
ROLES = {"patient": "patient", "solver": "solver"}


def knows_of_fever(request) -> str:
    """The scripted solver: right (B, the sample cases' answer) once the dialogue it reads
    holds the question about fever, wrong before."""
    return "B" if "fever" in request.prompt else "A"


@pytest.fixture
def solver() -> ScriptedModel:
    return ScriptedModel("solver", replies=knows_of_fever)


@pytest.fixture
def pool(scripted_pool, solver):
    return scripted_pool(
        ScriptedModel("doctor", replies=QUESTIONS * 10),
        ScriptedModel("patient", replies="For three days, doctor."),
        solver,
    )


def test_the_solver_answers_after_each_share_and_each_share_is_scored(store, pool, solver):
    name = ensure_sample(store)
    summary = run_consult(store, name, "model", limit=1, answer_at="0.4, 0.2", pool=pool, **ROLES)

    run = store.run(summary["run_id"])
    assert run["settings"]["answer_at"] == "0.2,0.4,1"  # as stored: sorted, the whole added
    (answer,) = store.answers(summary["run_id"])
    along = answer["extra"]["answer_at"]
    # 20% of 4 questions keeps 1 (before the fever question), 40% keeps 2
    assert [(a["share"], a["questions"], a.get("chosen")) for a in along] == [
        (0.2, 1, "A"), (0.4, 2, "B"), (1.0, 4, None)
    ]  # fmt: skip
    assert along[-1]["whole"] and answer["correct"] == 1
    assert len(solver.requests) == 3  # the final answer and the two shares, nothing more
    scores = answer["scores"]
    assert [scores[f"correct_at_{p}"] for p in (20, 40, 100)] == [0, 1, 1]
    assert scores["doctor_recall_at_20"] <= scores["doctor_recall_at_40"]
    assert scores["doctor_recall_at_100"] == pytest.approx(scores["doctor_recall"])
    assert scores["patient_recall_at_100"] == pytest.approx(scores["patient_recall"])
    curve = summary["by_share"]
    assert [(row["share"], row["accuracy"], row["n"]) for row in curve] == [
        (0.2, 0.0, 1), (0.4, 100.0, 1), (1.0, 100.0, 1)
    ]  # fmt: skip

    rows = turn_analysis(store, summary["run_id"], fractions=(0.2, 0.4, 0.6, 1.0))
    assert [row["accuracy"] for row in rows] == [0.0, 100.0, None, 100.0]  # `consult show`

    rescored = rescore(store, summary["run_id"], ["consult.answer-at"], force=True)
    assert rescored.scored == {"consult.answer-at": 1}
    again = store.answers(summary["run_id"])[0]["scores"]
    assert {k: again[k] for k in scores if "_at_" in k} == {
        k: v for k, v in scores.items() if "_at_" in k
    }


def test_a_run_without_answer_at_asks_the_solver_once_a_case(store, pool, solver):
    summary = run_consult(store, ensure_sample(store), "model", limit=1, pool=pool, **ROLES)
    (answer,) = store.answers(summary["run_id"])
    assert "answer_at" not in answer["extra"] and "by_share" not in summary
    assert not any("_at_" in k for k in answer["scores"])
    assert len(solver.requests) == 1


def test_a_stopped_run_goes_on_with_the_shares_it_answered(store, pool, solver):
    name = ensure_sample(store)
    cancel = Cancel()

    def stop_after_first(p) -> None:
        if p.done >= 1:
            cancel.set()

    first = run_consult(store, name, "model", limit=2, answer_at="0.5", pool=pool,
                        progress=stop_after_first, cancel=cancel, **ROLES)  # fmt: skip
    assert first["status"] == "cancelled" and first["answered"] == 1
    asked = len(solver.requests)
    assert asked == 2  # case 1: its answer and its half

    again = run_consult(store, "", resume=first["run_id"], pool=pool)

    assert again["status"] == "finished" and again["answered"] == 2
    assert len(solver.requests) == asked + 2  # case 2 only
    for answer in store.answers(first["run_id"]):
        assert [a["share"] for a in answer["extra"]["answer_at"]] == [0.5, 1.0]
        assert answer["scores"]["correct_at_50"] is not None
    assert [row["n"] for row in again["by_share"]] == [2, 2]


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"answer_at": "0"}, "above 0 and at most 1"),
        ({"answer_at": "half"}, "shares such as"),
        ({"answer_at": "0.333"}, "hundredths"),
        ({"answer_at": ","}, "shares such as"),
        ({"answer_at": "0.5", "doctor": "upper"}, "needs a consultation"),
        ({"answer_at": "0.5", "format": "vignette"}, "the vignette format"),
    ],
)
def test_shares_that_cannot_be_answered_at_are_refused_in_one_line(given, words):
    with pytest.raises(SettingError, match=words):
        ConsultSettings.from_dict(given)


def test_consult_run_takes_answer_at_on_the_command_line(db_path, home):
    script = {"backend": "scripted", "replies": "B. Yes, for three days."}
    (home / "models.json").write_text(json.dumps({"quick": script}))
    from engine.store.store import Store

    store = Store(db_path)
    name = ensure_sample(store)
    store.close()
    args = ["--db", db_path, "consult", "run", "--cases", name, "--doctor", "oracle-direct",
            "--patient", "quick", "--solver", "quick", "--limit", "1"]  # fmt: skip

    result = CliRunner().invoke(cli, [*args, "--answer-at", "0.5", "--json"])

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert [row["share"] for row in summary["by_share"]] == [0.5, 1.0]
    bad = CliRunner().invoke(cli, [*args, "--answer-at", "1.5"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "answer_at: each share is above 0 and at most 1 (got '1.5')" in bad.output


def test_fact_bins_share_no_number_of_facts_between_two_bins():
    assert fact_bins([3, 4, 4, 5, 8, 9]) == [(3, 4), (5, 5), (6, 9)]
    assert fact_bins([4, 4, 4, 4, 9]) == [(4, 4), (5, 9)]
    assert fact_bins([7]) == [(7, 7)] and fact_bins([]) == []


def test_consult_table2_draws_table3_and_figures_5_6_7_a_line_per_run(
    store, scripted_pool, home, tmp_path: Path
):
    from engine.reports.experiment import experiment_report, write_figures

    (home / "models.json").write_text(json.dumps({"doc": {"backend": "scripted"}}))
    dataset = ensure_sample(store)
    doctor = ScriptedModel("doc", replies=["Where does it hurt?", "Any fever?", "I have enough."])
    pool = scripted_pool(ScriptedModel("smollm2", replies="It hurts here. B"), doctor)
    # a finished oracle run of the same settings but answer_at is not reused: it has no curve
    old = run_consult(store, dataset, "oracle-direct", limit=2, pool=pool)["run_id"]
    plan = make_plan(store, "consult-table2", ["doc"], dataset, limit=2)
    assert all(c.reuse != old for c in plan.cells)
    with_shares = [
        c.cell.settings["doctor"] for c in plan.cells if c.cell.settings.get("answer_at")
    ]
    assert with_shares == ["doc", "doc", "oracle-direct", "oracle-random", "oracle-reverse"]
    experiment_id, _ = open_experiment(store, plan)

    assert run_experiment(store, experiment_id, pool=pool)["status"] == "finished"

    section = experiment_report(store, experiment_id)["sections"][0]
    titles = [t["title"] for t in section["tables"]]
    assert titles[1] == "Consultation Table 3: question diversity by doctor setting"
    table3 = section["tables"][1]
    # the consultations, not the bounds, which ask nothing
    assert [row[0] for row in table3["rows"]] == [
        "doc · long prompt", "doc · short prompt", "oracle-direct", "oracle-random",
        "oracle-reverse",
    ]  # fmt: skip
    assert table3["rows"][0][4] == {"value": 0.0, "too_few": True}  # 2 cases: no interval
    charts = {c["title"].split(":")[0]: c for c in section["charts"]}
    assert list(charts) == [f"Consultation Figure {n}" for n in (5, 6, 7)]
    cells = records.get(store, experiment_id)["cells"]
    for chart in charts.values():
        for line in chart["series"]:  # a line is one run: never runs of different settings
            assert len({p["run_id"] for p in line["points"]}) == 1
    fig5, fig6, fig7 = charts.values()
    assert {s["name"] for s in fig5["series"]} == {"doc · long prompt", "doc · short prompt"}
    assert {s["panel"] for s in fig5["series"]} == {"Accuracy", "Patient recall", "Doctor recall"}
    assert [p["x"] for p in fig5["series"][0]["points"]] == [20, 40, 60, 80, 100]
    accuracy = next(s for s in fig5["series"] if s["panel"] == "Accuracy")
    assert all(p["low"] is not None for p in accuracy["points"])  # Wilson, from any number
    recall = next(s for s in fig5["series"] if s["panel"] == "Patient recall")
    assert all(p.get("too_few") and "low" not in p for p in recall["points"])
    assert {s["name"] for s in fig6["series"]} == {"oracle-direct", "oracle-random",
                                                   "oracle-reverse"}  # fmt: skip
    assert len({s["name"] for s in fig7["series"]}) == len(cells)  # bounds too
    assert fig7["x_labels"] and all("facts" in v for v in fig7["x_labels"].values())
    by_facts = section["tables"][titles.index(fig7["title"] + ": the points")]
    upper = next(row for row in by_facts["rows"] if row[0] == "upper")
    assert upper[4] is not None and upper[-1] is None  # a bound asks nothing: no doctor recall
    points = section["tables"][titles.index(fig5["title"] + ": the points")]
    assert len(points["rows"]) == 2 * 5 and points["rows"][0][2] == 20

    written = write_figures({"sections": [section]}, tmp_path / "figures")
    pngs = [Path(p) for p in written if p.endswith(".png")]
    assert len(pngs) == 3 and all(p.stat().st_size > 10_000 for p in pngs)
