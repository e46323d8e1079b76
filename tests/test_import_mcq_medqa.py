"""``medexam import mcq`` reads MedQA's own JSONL (options as an object of letters,
``answer_idx``, ``meta_info``, no id) and questions of up to ten options, and the letters
F–J then reach every reader of answers: the exam's extraction and the consultation solver."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import validate_case
from engine.consult.doctor.final_task import task_result
from engine.exam.extract import extract_answer
from engine.store.store import Store

SIX = {"A": "Asthma", "B": "Pneumonia", "C": "Bronchitis", "D": "Influenza",
       "E": "Tuberculosis", "F": "Pertussis"}  # fmt: skip


def record(question: str, options: dict[str, str], idx: str) -> dict:
    return {"question": question, "answer": options[idx], "options": options,
            "meta_info": "step2&3", "answer_idx": idx}  # fmt: skip


def write(path: Path, rows: list[dict]) -> str:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)


def invoke(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def test_medqa_jsonl_with_six_options_imports(db_path: str, tmp_path: Path) -> None:
    rows = [record("A 4-year-old boy has a whooping cough. Most likely?", SIX, "F"),
            record("A 60-year-old man has a fever and a cough. Most likely?", SIX, "B")]  # fmt: skip
    result = invoke(db_path, "import", "mcq", write(tmp_path / "medqa.jsonl", rows))
    assert result.exit_code == 0, result.output
    store = Store(db_path)
    items = store.items("medqa")
    assert [i["id"] for i in items] == [1, 2]  # a record's number when it has no id
    assert items[0]["options"] == list(SIX.values()) and items[0]["answer"] == "F"
    assert items[0]["meta_info"] == "step2&3"
    assert store.dataset("medqa")["meta"]["n_options"] == [6]
    store.close()


def test_ten_options_import_and_eleven_are_refused_naming_the_record(db_path, tmp_path) -> None:
    ten = {chr(65 + i): f"option {i}" for i in range(10)}
    ok = invoke(db_path, "import", "mcq", write(tmp_path / "ten.jsonl", [record("Q?", ten, "J")]))
    assert ok.exit_code == 0, ok.output
    eleven = [record("Q?", SIX, "A"), {"id": 7, "question": "Q?", "answer": "A",
                                       "options": [f"o{i}" for i in range(11)]}]  # fmt: skip
    bad = invoke(db_path, "import", "mcq", write(tmp_path / "eleven.jsonl", eleven))
    assert bad.exit_code != 0
    assert "record 2" in bad.output and "2 to 10" in bad.output
    assert "Traceback" not in bad.output


def test_an_answer_that_is_not_the_answer_idx_option_is_refused(db_path, tmp_path) -> None:
    rows = [record("Q?", SIX, "A"), {**record("Q?", SIX, "B"), "answer": "Asthma"}]
    bad = invoke(db_path, "import", "mcq", write(tmp_path / "mismatch.jsonl", rows))
    assert bad.exit_code != 0
    assert "record 2" in bad.output and "'Asthma' is not option B" in bad.output
    gap = [{**record("Q?", SIX, "A"), "options": {"A": "x", "C": "y"}}]
    bad = invoke(db_path, "import", "mcq", write(tmp_path / "gap.jsonl", gap))
    assert "record 1" in bad.output and "letters must run A, B, C" in bad.output


def test_letters_past_e_are_read_from_replies() -> None:
    seven = "ABCDEFG"
    assert extract_answer("The correct answer is G.", letters=seven) == "G"
    assert extract_answer("F. Pertussis", letters=seven) == "F"
    assert extract_answer("The answer is F", letters="ABCDE") is None  # five options: no F
    nine = "ABCDEFGHI"
    assert extract_answer("I think the answer is C.", letters=nine) == "C"
    assert extract_answer("I'm not sure.", letters=nine) is None  # the pronoun, not option I
    assert extract_answer("Answer: I", letters=nine) == "I"


def test_a_consultation_task_of_six_options_scores_option_f() -> None:
    case = validate_case({"id": "c", "facts": [{"key": "Age", "value": "4 years"}],
                          "initial_request": "My son coughs.",
                          "task": {"question": "Most likely?", "options": SIX, "answer": "F"}})  # fmt: skip
    assert task_result(case.task, "The most likely answer is F. Pertussis").correct
    assert task_result(case.task, "F").chosen == "F"


def test_a_question_of_six_options_shows_all_six_on_its_card_and_in_the_app() -> None:
    from engine.exam.card import exam_face
    from gui.widgets.question import item_html

    item = {"id": 1, "question": "Q?", "options": list(SIX.values()), "answer": "F"}
    assert [letter for letter, _text in exam_face(item).options] == list("ABCDEF")
    assert "F. Pertussis" in item_html(item)


def test_exam_take_accepts_option_f(db_path: str, tmp_path: Path) -> None:
    rows = [record("A 4-year-old boy has a whooping cough. Most likely?", SIX, "F")]
    invoke(db_path, "import", "mcq", write(tmp_path / "medqa.jsonl", rows))
    done = CliRunner().invoke(cli, ["--db", db_path, "exam", "take", "--dataset", "medqa",
                                    "--in-order"], input="F\n")  # fmt: skip
    assert "answer (A-F" in done.output and "score 100.0% (1/1" in done.output, done.output
