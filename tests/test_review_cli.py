"""``medexam review`` as a student uses it: after an exam taken in the terminal with some
wrong answers, the due list holds exactly those, a review session schedules them, and the
Anki export holds them."""

from __future__ import annotations

import json
import sqlite3
import zipfile

from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import SAMPLE_NAME
from engine.french.dataset import SAMPLE_DATASET
from engine.store.store import Store


def medexam(db_path: str, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", db_path, *args], input=input)


def items(db_path: str, dataset: str) -> list[dict]:
    store = Store(db_path)
    try:
        return store.items(dataset)
    finally:
        store.close()


def wrong_letter(item: dict) -> str:
    return next(letter for letter in "ABCDE" if letter != item["answer"])


def apkg_notes(path) -> list[tuple[str, list[str], str]]:
    """``(guid, fields, tags)`` of every note of an Anki package."""
    with zipfile.ZipFile(path) as z:
        assert "collection.anki2" in z.namelist()
        data = z.read("collection.anki2")
    db_file = path.with_suffix(".anki2")
    db_file.write_bytes(data)
    con = sqlite3.connect(db_file)
    try:
        rows = con.execute("SELECT guid, flds, tags FROM notes ORDER BY sfld").fetchall()
    finally:
        con.close()
    return [(g, f.split("\x1f"), t.strip()) for g, f, t in rows]


def test_after_an_exam_the_missed_questions_are_due_reviewed_and_exported(db_path, tmp_path):
    assert medexam(db_path, "exam", "sample").exit_code == 0
    qs = items(db_path, SAMPLE_NAME)[:4]
    answers = [qs[0]["answer"], wrong_letter(qs[1]), qs[2]["answer"].lower(), "s"]
    typed = "\n".join(answers) + "\n"
    took = medexam(db_path, "exam", "take", "--limit", "4", "--in-order", input=typed)
    assert took.exit_code == 0, took.output
    missed = [qs[1]["id"], qs[3]["id"]]
    assert f"missed: {', '.join(missed)}" in took.output

    due = medexam(db_path, "review", "due", "--json")
    assert due.exit_code == 0, due.output
    listed = json.loads(due.output)
    assert [c["key"] for c in listed["cards"]] == missed
    assert listed["count"] == 2 and listed["by_activity"]["exam"]["count"] == 2
    assert listed["cards"][0]["question"] == qs[1]["question"]
    text = medexam(db_path, "review", "due")
    assert text.output.startswith("2 due now (profile default)")

    # The review: a bad key, then the right answer kept as Good; the second one wrong,
    # rated Hard instead of the suggested Again; then q ends the session.
    script = f"z\n{qs[1]['answer']}\n\n{wrong_letter(qs[3])}\n2\nq\n"
    session = medexam(db_path, "review", input=script)
    assert session.exit_code == 0, session.output
    out = session.output
    assert "please type one of A, B, C, D, E, s or q" in out
    assert "right (" in out and f"wrong, the answer is {qs[3]['answer']}" in out
    assert "解析：" + qs[1]["explanation"] in out
    assert "(Enter: good)" in out and "(Enter: again)" in out
    assert "good: next review in " in out and "hard: next review in " in out
    assert "reviewed 2 (right 1)" in out

    left = json.loads(medexam(db_path, "review", "due", "--json").output)
    assert [c["key"] for c in left["cards"]] == [qs[3]["id"]]  # Hard: back in minutes
    stats = json.loads(medexam(db_path, "review", "stats", "--json").output)
    assert stats["cards"] == 4 and stats["due_now"] == 1 and stats["due_per_day"][0]["due"] == 1
    assert list(stats) == [
        "profile", "cards", "learned", "due_now", "reviews", "accuracy", "retention",
        "retention_n", "due_per_day", "by_activity", "mastery",
    ]  # fmt: skip
    said = medexam(db_path, "review", "stats").output
    assert "profile default: 4 cards, " in said and "reviews 6, right 50.0%, retention —" in said

    out_file = tmp_path / "missed.apkg"
    exported = medexam(
        db_path, "review", "export-anki", "--only-missed", "--out", str(out_file), "--json"
    )
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.output)["notes"] == 1
    notes = apkg_notes(out_file)
    assert [n[1][0] for n in notes] == [qs[3]["question"]]
    everything = medexam(db_path, "review", "export-anki", "--out", str(tmp_path / "all.apkg"))
    assert everything.exit_code == 0, everything.output
    assert "wrote 4 notes" in everything.output and "medexam::Exam 4" in everything.output
    held = {n[1][0]: n[2].split() for n in apkg_notes(tmp_path / "all.apkg")}
    assert {qs[1]["question"], qs[3]["question"]} <= set(held)
    assert "missed" in held[qs[3]["question"]] and "missed" not in held[qs[1]["question"]]


def test_french_questions_are_reviewed_with_several_letters(db_path):
    assert medexam(db_path, "french", "sample").exit_code == 0
    qs = items(db_path, SAMPLE_DATASET)[:2]
    took = medexam(
        db_path,
        "french",
        "take",
        "--dataset",
        SAMPLE_DATASET,
        "--limit",
        "2",
        "--in-order",
        input="A\nB\n",
    )
    assert took.exit_code == 0, took.output
    missed = [q["id"] for q, a in zip(qs, ["a", "b"], strict=True) if q["correct_answers"] != [a]]
    due = json.loads(medexam(db_path, "review", "due", "--json").output)
    assert [c["key"] for c in due["cards"]] == missed
    gold = " + ".join(qs[0]["correct_answers"]).upper()
    session = medexam(db_path, "review", "--activity", "french", input=f"{gold}\n\n")
    assert session.exit_code == 0, session.output
    assert "letters, e.g. A + D" in session.output and "right (" in session.output
    assert "reviewed 1 (right 1)" in session.output


def test_bad_input_is_one_clear_line(db_path, tmp_path):
    nothing = medexam(db_path, "review", "export-anki", "--out", str(tmp_path / "x.apkg"))
    assert nothing.exit_code == 1
    assert nothing.output.strip() == "Error: no cards to export in profile 'default'"
    not_apkg = medexam(db_path, "review", "export-anki", "--out", str(tmp_path / "x.txt"))
    assert not_apkg.output.strip().startswith("Error: the Anki package must be a .apkg file")
    unknown = medexam(db_path, "review", "stats", "--profile", "nobody")
    assert unknown.exit_code == 1
    assert unknown.output.strip() == "Error: no profile named 'nobody' (profiles: default)"
    empty = medexam(db_path, "review")
    assert empty.exit_code == 0 and "nothing is due now in profile 'default'" in empty.output
