"""Converting a whole multiple-choice data set into draft cases as one resumable job
(:mod:`engine.consult.cases.convert`), on the scripted model: the paper's filter leaves out the
questions with no patient information (counted and listed), a stopped conversion goes on
where it stopped and asks the converter nothing twice, the converter's slots are used."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from engine.consult.cases.cases import load_cases
from engine.consult.cases.convert import FILTER_REASON, convert_dataset, left_out
from engine.consult.cases.draft import TOO_LONG
from engine.core.progress import Cancel, Cancelled
from engine.errors import UserError
from engine.exam.dataset import import_file
from engine.models.protocol import ModelError
from engine.models.scripted import Request, ScriptedModel

PATIENT = (
    "A {age}-year-old woman comes to the physician because of a cough for {days} days. Her "
    "temperature is 38.{days}°C. Which of the following is the most likely diagnosis?"
)
NO_PATIENT = [
    "Which of the following enzymes is inhibited by aspirin?",
    "Aspirin irreversibly acetylates an enzyme. Which of the following is that enzyme?",
]
OPTIONS = {"A": "Asthma", "B": "Pneumonia", "C": "Bronchitis", "D": "Influenza",
           "E": "Tuberculosis", "F": "Pertussis"}  # fmt: skip


def medqa_file(path: Path, n: int) -> Path:
    """MedQA's own JSONL: ``n`` vignettes with six options, then two questions of fact."""
    rows = [{"question": PATIENT.format(age=20 + i, days=i % 9 + 1), "answer": "Pneumonia",
             "options": OPTIONS, "meta_info": "step1", "answer_idx": "B"} for i in range(n)]  # fmt: skip
    rows += [{"question": q, "answer": "Asthma", "options": OPTIONS, "meta_info": "step1",
              "answer_idx": "A"} for q in NO_PATIENT]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def reply(request: Request) -> str:
    """A converter that writes an opening request or the facts of the question it reads."""
    text = request.messages[-1]["content"]
    if "Extract the facts" in text:
        age = text.split("-year-old")[0].rsplit(" ", 1)[-1]
        return f"Age: {age} years\nSex: woman\nChief complaint: cough"
    return "Doctor, I have had a bad cough for days. Can you help me?"


@pytest.fixture
def medqa(store, tmp_path) -> str:
    import_file(store, medqa_file(tmp_path / "medqa.jsonl", 8), "mcq", "medqa")
    return "medqa"


def asked(model: ScriptedModel) -> list[str]:
    """The questions' information the converter read, one per fact extraction."""
    return [r.messages[-1]["content"] for r in model.requests if "Extract" in str(r.messages)]


def test_the_filter_leaves_out_questions_with_no_patient_and_lists_them(
    store, medqa, scripted_pool
):
    model = ScriptedModel("conv", replies=reply)
    found = convert_dataset(store, medqa, "cases", "conv", pool=scripted_pool(model))

    assert (found["questions"], found["converted"], found["filtered"]) == (10, 8, 2)
    assert found["left_out"] == [{"item": "9", "reason": FILTER_REASON},
                                 {"item": "10", "reason": FILTER_REASON}]  # fmt: skip
    cases = load_cases(store, "cases")
    assert [c.id for c in cases] == [f"medqa-{i}" for i in range(1, 9)]
    first = cases[0]
    assert first.meta["draft"] is True and first.meta["model"] == "conv"
    assert len(first.task.options) == 6 and first.task.answer == "B"
    assert [(f.key, f.value) for f in first.facts][:2] == [("Age", "20 years"), ("Sex", "woman")]
    assert store.dataset("cases")["meta"]["converted_from"] == "medqa"
    assert len(asked(model)) == 8  # the questions of fact never reach the converter


def test_a_stopped_conversion_goes_on_where_it_stopped_and_converts_nothing_twice(
    store, medqa, scripted_pool
):
    model = ScriptedModel("conv", replies=reply)
    pool = scripted_pool(model)
    stop = Cancel()

    def progress(p) -> None:
        if p.done >= 3:
            stop.set()

    with pytest.raises(Cancelled):
        convert_dataset(store, medqa, "cases", "conv", pool=pool, progress=progress, cancel=stop)
    kept = [c.id for c in load_cases(store, "cases")]
    assert 3 <= len(kept) < 8  # what was done before the stop is stored

    found = convert_dataset(store, medqa, "cases", "conv", pool=pool)
    assert found["converted"] == 8 and found["filtered"] == 2 and found["new"] == 10 - len(kept)
    read = asked(model)
    assert len(read) == len(set(read)) == 8  # each question converted once
    again = convert_dataset(store, medqa, "cases", "conv", pool=pool)
    assert again["new"] == 0 and len(asked(model)) == 8


def test_the_converter_s_slots_are_filled(store, medqa, scripted_pool):
    lock, flying, most = threading.Lock(), [0], [0]

    def slow(request: Request) -> str:
        with lock:
            flying[0] += 1
            most[0] = max(most[0], flying[0])
        threading.Event().wait(0.05)
        with lock:
            flying[0] -= 1
        return reply(request)

    model = ScriptedModel("conv", replies=slow, concurrency=4)
    found = convert_dataset(store, medqa, "cases", "conv", pool=scripted_pool(model))
    assert found["converted"] == 8 and most[0] > 1


def test_another_converter_or_data_set_is_refused_in_one_line(
    store, medqa, scripted_pool, tmp_path
):
    pool = scripted_pool(
        ScriptedModel("conv", replies=reply), ScriptedModel("other", replies=reply)
    )
    convert_dataset(store, medqa, "cases", "conv", pool=pool, limit=2)
    with pytest.raises(UserError, match="being converted by 'conv'"):
        convert_dataset(store, medqa, "cases", "other", pool=pool)
    import_file(store, medqa_file(tmp_path / "more.jsonl", 1), "mcq", "more")
    with pytest.raises(UserError, match="not a conversion of 'more'"):
        convert_dataset(store, "more", "cases", "conv", pool=pool)
    found = convert_dataset(store, medqa, "cases", "other", pool=pool, replace=True, limit=1)
    assert found["converter"] == "other" and found["converted"] == 1


def test_the_filter_reads_a_patient_in_a_vignette_only() -> None:
    assert left_out({"question": NO_PATIENT[0], "options": OPTIONS}) == FILTER_REASON
    assert left_out({"question": NO_PATIENT[1], "options": OPTIONS}) == FILTER_REASON
    assert left_out({"question": PATIENT.format(age=30, days=2), "options": OPTIONS}) is None
    assert left_out({"question": "Un homme de 45 ans a de la fièvre. Quel est le diagnostic ?",
                     "options": OPTIONS}) is None  # fmt: skip


#: A sentence of the vignette, said again and again to make a question too long.
AGAIN = "She reports that her cough is worse at night. "
LONG = {
    # 5 MB, as in the report: its information is too long for the fact extraction
    "5 MB": "A 30-year-old woman comes to the physician because of a cough. "
    + AGAIN * 110_000
    + "Which of the following is the most likely diagnosis?",
    # one first sentence of 200 kB: the opening request's prompt is too long already
    "first sentence": "A 30-year-old woman comes to the physician because of a cough"
    + " and a fever" * 16_000
    + ". Her temperature is 38.5°C. Which of the following is the most likely diagnosis?",
    # just over a context of 4,096 tokens (four bytes a token)
    "just over": "A 30-year-old woman comes to the physician because of a cough. "
    + AGAIN * 340
    + "Which of the following is the most likely diagnosis?",
}


@pytest.mark.parametrize("long", LONG)
def test_a_question_too_long_for_the_converter_is_left_out_and_counted(
    store, tmp_path, scripted_pool, long
):
    path = medqa_file(tmp_path / "medqa.jsonl", 3)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows.insert(1, {**rows[0], "question": LONG[long]})
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    import_file(store, path, "mcq", "medqa")
    model = ScriptedModel("conv", replies=reply)
    pool = scripted_pool(model)

    found = convert_dataset(store, "medqa", "cases", "conv", pool=pool)
    assert (found["converted"], found["filtered"], found["refused"]) == (3, 2, 1)
    assert found["too_long"] == 1
    [out] = [x for x in found["left_out"] if x["item"] == "2"]
    assert out["reason"].startswith(f"{TOO_LONG}: its prompt takes ")
    assert out["reason"].endswith("more than the 4,096 of conv's context")
    assert all(len(r.prompt) < 4 * 4096 for r in model.requests)  # never put to it
    again = convert_dataset(store, "medqa", "cases", "conv", pool=pool)
    assert again["new"] == 0 and again["too_long"] == 1  # not tried again


def test_a_converter_error_ends_the_job_naming_the_question(store, medqa, scripted_pool):
    model = ScriptedModel("conv", replies=reply, errors={3: "the server refused the request"})
    with pytest.raises(ModelError, match="^question 2: the server refused the request$"):
        convert_dataset(store, medqa, "cases", "conv", pool=scripted_pool(model), concurrency=1)
    assert [c.id for c in load_cases(store, "cases")] == ["medqa-1"]  # what was done is kept
