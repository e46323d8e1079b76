"""Published responses stored as an exam run (``medexam import responses``): the run's summary
gives exactly what ``exam score`` gives for the same file and field, a rescore changes
nothing, and bad input is refused in one line with no run left behind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.runs import RunError
from engine.core.scoring import rescore
from engine.errors import DatasetError
from engine.exam.dataset import import_file, load_file
from engine.exam.metrics import score_responses
from engine.exam.person import ExamSitting
from engine.exam.responses import import_responses
from engine.store.store import Store

NUMBERS = ("n", "accuracy", "rouge1", "rouge2", "rougeL", "by_type", "consistency")
PUBLISHED = "chatgpt_test_responses.json"


def medexam(store: Store, *args: str):
    return CliRunner().invoke(cli, ["--db", store.path, *args])


@pytest.fixture
def explaincpe(shared_data: Path, store: Store) -> Path:
    """The ExplainCPE test questions imported as ``explaincpe-test``; the folder they are in."""
    folder = shared_data / "explaincpe"
    import_file(store, folder / "test.json", "explaincpe", "explaincpe-test")
    return folder


def exam_score(folder: Path, field: str) -> dict:
    """What ``medexam exam score`` computes for ``field`` of the published file."""
    gold = load_file(folder / "test.json", "mcq")
    responses = json.loads((folder / PUBLISHED).read_text(encoding="utf-8"))
    return score_responses(gold, responses, field)


@pytest.mark.parametrize(
    ("given", "field"),
    [("one_without", "one_without_response"), ("four_with_response", "four_with_response")],
)
def test_a_stored_run_gives_the_numbers_exam_score_gives(store, explaincpe, given, field):
    run_id = import_responses(store, explaincpe / PUBLISHED, "explaincpe-test", "gpt-3.5", given)
    run = store.run(run_id)
    expected = exam_score(explaincpe, field)
    summary = run["summary"]
    assert {k: summary[k] for k in NUMBERS} == {k: expected[k] for k in NUMBERS}
    for key in ("accuracy_extracted", "judge_agreement"):
        assert summary[key] == expected[key]
    assert summary["answered"] == summary["n"] == 189 and summary["status"] == "finished"
    assert (run["status"], run["runner"], run["model"]) == ("finished", "model", "gpt-3.5")
    settings = run["settings"]
    assert settings["method"] == "generate" and settings["source"] == "published"
    assert (settings["field"], settings["file"], settings["judged"]) == (field, PUBLISHED, True)
    # ExplainCPE's 190 test questions: the responses answer the first 189.
    assert settings["limit"] == run["n_total"] == 189
    answers = store.answers(run_id)
    extracted = {str(i["id"]): i["extracted"] for i in expected["items"]}
    assert {a["item_key"]: a["chosen"] for a in answers} == extracted
    # The release also judges a few responses "检测失败" (check failed): wrong, as exam score
    # has it.
    judgements = {a["extra"]["judgement"]: a["correct"] for a in answers}
    assert judgements["正确"] == 1 and judgements["错误"] == judgements.get("检测失败", 0) == 0
    assert all(a["response"] and a["gold"] for a in answers)
    by_scorer = {r["scorer"] for r in store.run_scorers(run_id)}
    assert by_scorer == {"exam.published", "exam.rouge"}


def test_rescoring_a_published_run_changes_no_number(store, explaincpe):
    run_id = import_responses(store, explaincpe / PUBLISHED, "explaincpe-test", "gpt", "one_with")
    before = store.run(run_id)["summary"]
    skipped = rescore(store, run_id)
    assert skipped.scored == {"exam.published": 0, "exam.rouge": 0}
    assert skipped.summary == before
    forced = rescore(store, run_id, force=True)
    assert forced.scored == {"exam.published": 189, "exam.rouge": 189}
    assert forced.summary == before == store.run(run_id)["summary"]


def test_the_command_stores_shows_and_rescores_the_run(store, shared_data):
    folder = shared_data / "explaincpe"
    made = medexam(store, "import", "explaincpe", str(folder / "test.json"), "--name", "cpe")
    assert made.exit_code == 0, made.output
    args = ["import", "responses", str(folder / PUBLISHED), "--dataset", "cpe"]
    first = medexam(store, *args, "--model", "gpt-3.5-turbo", "--field", "one_with")
    assert first.exit_code == 0, first.output
    assert re.fullmatch(
        r"stored run (\d+): gpt-3\.5-turbo · one_with · 189 answers · accuracy 53\.4%\n",
        first.output,
    ), first.output
    run_id = int(first.output.split()[2].rstrip(":"))
    before = store.run(run_id)["summary"]
    second = medexam(store, *args, "--model", "gpt-3.5-turbo", "--field", "eight_with", "--json")
    assert second.exit_code == 0, second.output
    stored = json.loads(second.output)
    assert stored["summary"]["accuracy"] == 50.3 and stored["summary"]["rougeL"] == 0.230
    assert stored["settings"]["setting"] == "eight_with" and stored["id"] != run_id
    shown = medexam(store, "runs", "show", str(run_id))
    assert shown.exit_code == 0, shown.output
    assert "exam.published v1 (189)" in shown.output and "source=published" in shown.output
    again = medexam(store, "rescore", str(run_id), "--force", "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["summary"] == before == store.run(run_id)["summary"]


# -- small files ------------------------------------------------------------------------


QUESTIONS = [
    {
        "id": i,
        "question": f"问题{i}",
        "options": ["甲", "乙", "丙", "丁", "戊"],
        "answer": "ABCD"[i % 4],
        "explanation": f"本题考查药物{i}的作用。",
        "type1": "正向" if i % 2 else "反向",
    }
    for i in range(4)
]


@pytest.fixture
def quiz(store: Store, tmp_path: Path) -> str:
    path = tmp_path / "quiz.json"
    path.write_text(json.dumps(QUESTIONS, ensure_ascii=False), encoding="utf-8")
    return import_file(store, path, "explaincpe", "quiz")["name"]


def write(tmp_path: Path, data: object, name: str = "responses.json") -> Path:
    path = tmp_path / name
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path


def test_without_judgements_the_letters_score_and_missing_questions_count_wrong(
    store, quiz, tmp_path
):
    responses = [
        {"id": 0, "r": "答案：A\n解析：本题考查药物0的作用。"},
        {"id": 2, "r": "答案：B"},
        {"id": 9, "r": "答案：C"},  # no such question
    ]
    run_id = import_responses(store, write(tmp_path, responses), quiz, "m", "r")
    run = store.run(run_id)
    summary, settings = run["summary"], run["settings"]
    assert settings["judged"] is False and "limit" not in settings and "shots" not in settings
    assert {r["scorer"] for r in store.run_scorers(run_id)} == {"exam.letter", "exam.rouge"}
    expected = score_responses(QUESTIONS, responses, "r")
    # Questions 1 and 3 have no response: unanswered, they count wrong as in any run.
    assert (summary["n"], summary["answered"], summary["accuracy"]) == (4, 2, 25.0)
    assert summary["accuracy_answered"] == expected["accuracy"] == 50.0
    assert summary["rouge1"] == expected["rouge1"] and summary["unmatched_responses"] == 1
    assert rescore(store, run_id, force=True).summary == summary


def test_responses_to_the_first_questions_make_a_run_of_those(store, quiz, tmp_path):
    responses = [{"id": 1, "r": "答案：B", "r_judge": "正确"}, {"id": 0, "r": "A"}]
    run_id = import_responses(store, write(tmp_path, responses), quiz, "m", "r")
    run = store.run(run_id)
    assert run["settings"]["limit"] == run["n_total"] == 2
    assert run["settings"]["judged"] is False  # one response has no judgement
    assert [a["item_key"] for a in store.answers(run_id)] == ["0", "1"]
    assert (run["summary"]["n"], run["summary"]["accuracy"]) == (2, 100.0)


def test_a_persons_answer_is_still_scored_by_the_letter_scorer(store, quiz):
    sitting = ExamSitting(store, quiz, limit=1)
    item = sitting.next_question()
    assert sitting.answer(item["answer"]).correct
    sitting.finish()
    assert [r["scorer"] for r in store.run_scorers(sitting.run_id)] == ["exam.letter"]


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("{not json", {}, ": line 1: not valid JSON"),
        ({"id": 0}, {}, "must be a JSON list of objects"),
        ([1, 2], {}, "must be a JSON list of objects"),
        ([], {}, "holds no responses"),
        ([{"id": 0, "r": "A"}], {"field": "nine"}, "no response has a field 'nine' (fields: r)"),
        ([{"id": 0, "r": "A"}, {"id": 1}], {}, "response 1 has no field 'r'"),
        ([{"id": 7, "r": "A"}, {"id": 8, "r": "B"}], {}, "none of the 2 responses has the id"),
        ([{"id": 0, "r": "A"}, {"id": "0", "r": "B"}], {}, "question '0' has more than one"),
        (
            [{"id": 0, "r": "A", "question": "问题0"}, {"id": 1, "r": "A", "question": "别的"}],
            {},
            "1 of the 2 responses matched by id quote another question than data set 'quiz'",
        ),
        ([{"id": 0, "r": "A"}], {"dataset": "nowhere"}, "no data set named 'nowhere'"),
        ([{"id": 0, "r": "A"}], {"dataset": "fr"}, "holds French QA items, not Exam items"),
        ([{"id": 0, "r": "A"}], {"model": " "}, "give the name of the model"),
        ([{"id": 0, "r": {"text": "A"}}], {}, "response 0: field 'r' holds an object, not"),
        ([{"id": 0, "r": ["A"]}], {}, "response 0: field 'r' holds a list, not"),
        ([{"id": 0, "r": "A", "r_judge": "maybe"}], {}, "response 0: r_judge is 'maybe', not a"),
        ([{"id": 1, "r": "B", "r_judge": 2}], {}, "response 1: r_judge is 2, not a judgement"),
        ([{"id": 2, "r": "A", "r_judge": 1.0}], {}, "response 2: r_judge is 1.0, not a"),
        ([{"id": 3, "r": "A", "r_judge": ["正确"]}], {}, "response 3: r_judge is ['正确']"),
        ([{"id": 0, "r": "A", "r_judge": "正确的"}], {}, "response 0: r_judge is '正确的', not"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_run(store, quiz, tmp_path, content, args, message):
    store.add_dataset("fr", "french", [{"id": "f1", "question": "q"}])
    path = write(tmp_path, content)
    given = {"dataset": quiz, "model": "m", "field": "r", **args}
    with pytest.raises((DatasetError, RunError), match=re.escape(message)):
        import_responses(store, path, given["dataset"], given["model"], given["field"])
    options = [f"--{k}={v}" for k, v in given.items()]
    result = medexam(store, "import", "responses", str(path), *options)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1, result.output
    assert message in result.output and "Traceback" not in result.output
    assert store.runs() == []


@pytest.mark.parametrize(
    ("right", "wrong"),
    [(True, False), (1, 0), ("1", "0"), ("correct", "Incorrect"), ("正确 ", " 错误"),
     ("对", "错"), ("RIGHT", "wrong"), (" True", "检测失败")],
)  # fmt: skip
def test_judgements_that_clearly_say_right_or_wrong_count_so(store, quiz, tmp_path, right, wrong):
    # Every letter is right; the published judgements say right, wrong, right, right.
    responses = [
        {"id": i, "r": "答案：" + q["answer"], "r_judge": wrong if i == 1 else right}
        for i, q in enumerate(QUESTIONS)
    ]
    run_id = import_responses(store, write(tmp_path, responses), quiz, "m", "r")
    run = store.run(run_id)
    assert run["settings"]["judged"] is True
    assert (run["summary"]["accuracy"], run["summary"]["accuracy_extracted"]) == (75.0, 100.0)
    assert score_responses(QUESTIONS, responses, "r")["accuracy"] == 75.0
    extra = {a["item_key"]: a["extra"] for a in store.answers(run_id)}
    assert extra["0"]["judgement"] == "正确" and extra["1"]["judgement"] in ("错误", "检测失败")
    assert extra["0"].get("judgement_given", "正确") == right  # as published, when it differs
    assert rescore(store, run_id, force=True).summary["accuracy"] == 75.0


def test_exam_score_takes_the_field_names_import_takes(store, quiz, tmp_path):
    gold = write(tmp_path, QUESTIONS, "gold.json")
    responses = [{"id": i, "zero_with_response": "答案：A"} for i in range(4)]
    path = write(tmp_path, responses)
    for field in ("zero_with", "zero_with_response", " zero_with "):
        out = CliRunner().invoke(cli, ["exam", "score", "--gold", str(gold), "--responses",
                                       str(path), "--field", field, "--json"])  # fmt: skip
        assert out.exit_code == 0, out.output
        assert json.loads(out.output)["field"] == "zero_with_response"
        assert json.loads(out.output)["accuracy"] == 25.0
    bad = CliRunner().invoke(cli, ["exam", "score", "--gold", str(gold), "--responses",
                                   str(path), "--field", "zero_without"])  # fmt: skip
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    known = "(fields: zero_with_response)"
    assert bad.output == f"Error: no response has a field 'zero_without' {known}\n"


def test_the_same_responses_are_not_stored_twice_unless_asked(store, quiz, tmp_path):
    responses = [{"id": i, "r": f"答案：{'ABCD'[i]}", "r_judge": "正确"} for i in range(4)]
    first = medexam(store, "import", "responses", str(write(tmp_path, responses)),
                    "--dataset", quiz, "--model", "gpt", "--field", "r")  # fmt: skip
    assert first.exit_code == 0, first.output
    [run] = store.runs()
    # The same responses in another order and file, under another model name: refused.
    again = write(tmp_path, json.dumps(responses[::-1], indent=1), "copy.json")
    args = ["import", "responses", str(again), "--dataset", quiz, "--field", " r"]
    second = medexam(store, *args, "--model", "chatgpt")
    assert second.exit_code == 1 and second.output.count("\n") == 1, second.output
    assert second.output == (
        f"Error: these responses are already stored as run {run['id']} (gpt, r, from "
        "responses.json): give --again to store them once more\n"
    )
    assert len(store.runs()) == 1
    third = medexam(store, *args, "--model", "chatgpt", "--again")
    assert third.exit_code == 0, third.output
    assert len(store.runs()) == 2
    # Other texts or other judgements are other responses.
    responses[0]["r_judge"] = "错误"
    assert import_responses(store, write(tmp_path, responses), quiz, "gpt", "r")
    responses[1]["r"] += "。"
    assert import_responses(store, write(tmp_path, responses), quiz, "gpt", "r")
    assert len(store.runs()) == 4
