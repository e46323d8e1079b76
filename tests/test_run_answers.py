"""Answers and passages as a person reads them: questions instead of hash ids, numbered from
1; passages named by their origin; ``runs show`` as a table that lines up, Chinese included."""

from __future__ import annotations

import json

import french_fixtures
from click.testing import CliRunner

from engine.cli import cli
from engine.core.scoring import Scored
from engine.french.corpus import add_corpus_from_dataset
from engine.french.dataset import SAMPLE_DATASET
from engine.french.index import build_index
from engine.french.passages import source_label
from engine.reports.answers import run_answers
from engine.store.store import Store
from engine.text.columns import align_rows, display_width

indexes = french_fixtures.indexes
sample_store = french_fixtures.sample_store

HASH = "3f" * 32
QUESTIONS = [
    {"id": HASH, "question": "华法林的作用机制是什么？", "options": list("ABCDE"), "answer": "B"},
    {
        "id": "q2",
        "question": "Which drug is an anticoagulant " + "really " * 20,
        "answer": "A",
        "options": list("ABCDE"),
    },
]


def letter_and_rouge(correct: bool, rouge1: float) -> list[Scored]:
    return [
        Scored("exam.letter", 1, {"correct": correct}),
        Scored("exam.rouge", 1, {"rouge1": rouge1}),
    ]


def _run(store: Store) -> int:
    store.add_dataset("cjk", "exam", QUESTIONS)
    run_id = store.start_run("exam", "cjk", "smollm2", {"method": "generate"}, n_total=2)
    store.add_answer(
        run_id, HASH, chosen="A", gold="B", position=0, scores=letter_and_rouge(False, 0.25)
    )
    store.add_answer(
        run_id, "q2", chosen="A", gold="A", position=1, scores=letter_and_rouge(True, 0.5)
    )
    store.finish_run(run_id, {"n": 2, "accuracy": 50.0, "rouge1": 0.375})
    return run_id


def test_run_answers_give_the_question_not_its_hash(store):
    run_id = _run(store)
    first, second = run_answers(store, run_id, width=30)
    assert (first["number"], first["question"]) == (1, "华法林的作用机制是什么？")
    assert first["item_key"] == HASH and first["chosen"] == "A"
    assert second["number"] == 2 and second["question"].endswith("…")
    assert display_width(second["question"]) <= 30
    assert second["question_full"].startswith("Which drug is an anticoagulant really")
    store.delete_dataset("cjk")
    assert run_answers(store, run_id)[0]["question"] == HASH  # the data set is gone


def test_runs_show_is_a_table_and_json_stays_raw(db_path):
    store = Store(db_path)
    run_id = _run(store)
    store.close()
    out = CliRunner().invoke(cli, ["--db", db_path, "runs", "show", str(run_id)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "Accuracy (%)" in out.output and "{" not in out.output
    table = lines[lines.index("Answers") + 1 :]
    assert table[0].split() == ["#", "Question", "Given", "Gold", "Correct", "ROUGE-1"]
    assert table[1].split()[:2] == ["1", "华法林的作用机制是什么？"]
    assert table[1].endswith(" 0.250") and table[2].endswith(" 0.500")
    assert display_width(table[1]) == display_width(table[2])  # columns line up
    raw = json.loads(
        CliRunner().invoke(cli, ["--db", db_path, "runs", "show", str(run_id), "--json"]).output
    )
    assert raw["answers"][0]["item_key"] == HASH and raw["answers"][0]["position"] == 0


def test_columns_count_wide_characters_twice():
    lines = align_rows(["Data set", "Acc"], [["药学", "50.0"], ["fr-dev", "100.0"]])
    assert lines == ["Data set    Acc", "药学       50.0", "fr-dev    100.0"]


def test_passages_made_from_questions_are_named_by_their_question(sample_store, indexes):
    add_corpus_from_dataset(sample_store, SAMPLE_DATASET, "from-questions")
    index = build_index(sample_store, "from-questions", "bm25")
    hit = index.search("warfarine anticoagulant", 1)[0]
    dataset, qid = hit.source.split("#")
    assert dataset == SAMPLE_DATASET
    assert hit.label == f"{SAMPLE_DATASET}, question {qid}"  # a short id is kept
    assert hit.as_dict()["label"] == hit.label
    assert source_label(
        f"train#{HASH}", "Parmi les propositions suivantes, une seule est vraie ici"
    ) == ("train: « Parmi les propositions suivantes, une seule est vraie … »")
    assert source_label("cours/foie.md", "…") == "foie.md"


def test_runs_show_names_a_person_once(db_path):
    store = Store(db_path)
    store.add_dataset("cjk", "exam", QUESTIONS)
    run_id = store.start_run("exam", "cjk", "person", {"mode": "practice"}, runner="person")
    store.finish_run(run_id, {"n": 0})
    store.close()
    out = CliRunner().invoke(cli, ["--db", db_path, "runs", "show", str(run_id)])
    assert out.exit_code == 0, out.output
    heading = out.output.splitlines()[0]
    assert heading == f"Run {run_id} · Exam · cjk · person · finished", heading
