"""The ``static-vs-consult`` preset (:mod:`engine.consult.static`): the drop from exam
questions to consultation on paired questions with Newcombe's interval, the preset's plan
(an exam run and a consultation run per model, paired by the question each case came from),
and a tiny real run of both embedded models on a MedQA-format file."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.consult.cases.convert import convert_dataset
from engine.consult.static import drop, static_consult_summary
from engine.exam.dataset import import_file
from engine.experiments import records
from engine.experiments.plan import PlanError, make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import Request, ScriptedModel

MEDQA = Path(__file__).parent / "data" / "medqa_vignettes.jsonl"


def test_drop_is_newcombes_worked_example_with_mcnemars_p() -> None:
    # Newcombe (1998), Table II: 36 right both ways, 12 on the exam only, 2 consulting only
    static = [True] * 36 + [True] * 12 + [False] * 2
    consultation = [True] * 36 + [False] * 12 + [True] * 2
    found = drop(static, consultation)
    assert (found["static"], found["consultation"]) == (96.0, 76.0)
    assert (found["drop"], found["low"], found["high"]) == (20.0, 5.7, 34.0)
    assert (found["lost"], found["gained"], found["method"]) == (12, 2, "newcombe")
    assert found["p"] == pytest.approx(0.01293, abs=1e-5)  # exact binomial, 2 of 14
    assert drop(consultation, static)["drop"] == -20.0  # a gain is a negative drop


def test_drop_needs_one_answer_each_way_per_question() -> None:
    with pytest.raises(ValueError):
        drop([True], [])
    assert drop([], [])["drop"] is None


def converter(request: Request) -> str:
    """A converter that writes the opening request and a fact of the question it reads."""
    text = request.messages[-1]["content"]
    if "Extract the facts" in text:
        age = text.split("-year-old")[0].rsplit(" ", 1)[-1]
        return f"Age: {age} years"
    return "Doctor, I have not been feeling well. Can you help me?"


@pytest.fixture
def converted(store, scripted_pool) -> tuple[str, str]:
    """The MedQA-format file imported as an exam data set and converted into cases."""
    import_file(store, MEDQA, "mcq", "medqa")
    pool = scripted_pool(ScriptedModel("conv", replies=converter))
    found = convert_dataset(store, "medqa", "medqa-cases", "conv", pool=pool)
    assert (found["questions"], found["converted"], found["filtered"]) == (4, 3, 1)
    return "medqa", "medqa-cases"


def test_the_plan_is_an_exam_run_and_a_consultation_per_model(store, converted) -> None:
    plan = make_plan(store, "static-vs-consult", ["smollm2", "gemma3-270m"], "medqa", limit=2)
    cells = [c.cell for c in plan.cells]
    assert [(c.activity, c.dataset, c.coords["way"]) for c in cells] == [
        ("exam", "medqa", "static"), ("consult", "medqa-cases", "consultation")
    ] * 2  # fmt: skip
    exam, consult = cells[0].settings, cells[1].settings
    # the first two cases came from questions 1 and 2: the exam run covers those
    assert (exam["model"], exam["method"], exam["lang"], exam["limit"]) == (
        "smollm2", "logprob", "en", 2
    )  # fmt: skip
    assert (consult["doctor"], consult["solver"], consult["patient_mode"]) == (
        "smollm2", "smollm2", "grounded"
    )  # fmt: skip
    assert consult["limit"] == 2
    # the third case came from question 4 (question 3 has no patient): 4 questions
    every = make_plan(store, "static-vs-consult", ["smollm2"], "medqa-cases")
    assert every.cells[0].cell.settings["limit"] == 4


def test_a_set_not_converted_is_refused_in_a_line(store) -> None:
    import_file(store, MEDQA, "mcq", "medqa")
    with pytest.raises(PlanError, match="consult convert --dataset medqa"):
        make_plan(store, "static-vs-consult", ["smollm2"], "medqa")


@pytest.mark.slow
def test_two_embedded_models_give_a_paired_drop(store, converted, monkeypatch) -> None:
    from engine.consult import static
    from engine.reports.experiment import experiment_report

    monkeypatch.setattr(static, "QUESTIONS", 1)  # one question per case: seconds on a CPU
    plan = make_plan(store, "static-vs-consult", ["smollm2", "gemma3-270m"], "medqa", limit=2)
    experiment_id, _ = open_experiment(store, plan)
    assert run_experiment(store, experiment_id)["status"] == "finished"

    experiment = records.get(store, experiment_id)
    found = static_consult_summary(store, experiment)
    assert found is not None
    result, text = found
    assert [r["model"] for r in result["models"]] == ["smollm2", "gemma3-270m"]
    for row in result["models"]:
        assert row["items"] == 2 and row["method"] == "newcombe"
        assert row["drop"] == pytest.approx(row["static"] - row["consultation"], abs=0.1)
        assert row["low"] <= row["drop"] <= row["high"]
        assert 0 <= row["patient_recall"] <= 100
    assert (result["converted"], result["filtered"]) == (3, 1)
    assert "Drop (points) [95% CI]" in text and "gemma3-270m" in text
    tables = experiment_report(store, experiment_id)["sections"][0]["tables"]
    drops = [t for t in tables if t["title"].startswith("Exam questions vs consultation")]
    assert [row[0] for row in drops[0]["rows"]] == ["smollm2", "gemma3-270m"]
    assert drops[0]["rows"][1][4]["value"] == result["models"][1]["drop"]
