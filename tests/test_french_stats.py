"""``medexam french stats``: a French data set described as FrenchMedMCQA's §2.1 describes its
own (questions by number of right answers, lengths in words and characters, vocabulary), on
hand-counted questions and on the shipped sample."""

from __future__ import annotations

import json

import french_fixtures
from click.testing import CliRunner
from french_fixtures import sample_questions

from engine.cli import cli
from engine.french.dataset import SAMPLE_DATASET
from engine.french.stats import dataset_stats

sample_store = french_fixtures.sample_store


def question(text: str, right: str, *answers: str) -> dict:
    return {"question": text, "answers": dict(zip("abcde", answers, strict=True)),
            "correct_answers": list(right)}  # fmt: skip


def test_counts_lengths_and_vocabulary_by_hand() -> None:
    items = [
        question("L'aspirine est-elle un AINS ?", "a", "Oui", "Non", "oui", "Parfois", "Jamais"),
        question("Le foie :", "bce", "Filtre", "Stocke le glycogène", "Sécrète la bile", "x", "y"),
    ]
    found = dataset_stats(items)
    assert found["n"] == 2 and found["mean_answers"] == 2.0
    assert found["by_n_answers"]["1"] == {"n": 1, "share": 50.0}
    assert found["by_n_answers"]["3"] == {"n": 1, "share": 50.0}
    assert found["by_n_answers"]["2"] == {"n": 0, "share": 0.0}
    # "L", "aspirine", "est", "elle", "un", "AINS" (6 words) and "Le", "foie" (2)
    assert found["question"]["words"] == {"mean": 4.0, "median": 4.0, "min": 2, "max": 6}
    assert found["question"]["chars"]["max"] == len("L'aspirine est-elle un AINS ?")
    assert found["option"]["words"]["max"] == 3 and found["option"]["words"]["min"] == 1
    # "Oui"/"oui" once; "le" in "Le foie" and "Stocke le glycogène" once; accents kept
    every = {"l", "aspirine", "est", "elle", "un", "ains", "le", "foie", "oui", "non", "parfois",
             "jamais", "filtre", "stocke", "glycogène", "sécrète", "la", "bile", "x", "y"}  # fmt: skip
    assert found["vocabulary"] == len(every)


def test_stats_of_the_sample_on_the_command_line(sample_store) -> None:
    runner = CliRunner()
    got = runner.invoke(
        cli, ["--db", str(sample_store.path), "french", "stats", "--dataset", SAMPLE_DATASET, "--json"]
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    found = json.loads(got.output)
    questions = sample_questions()
    assert found["dataset"] == SAMPLE_DATASET and found["n"] == len(questions) == 15
    by_hand = {str(k): sum(len(q["correct_answers"]) == k for q in questions) for k in range(1, 6)}
    assert {k: v["n"] for k, v in found["by_n_answers"].items()} == by_hand
    longest = max(len(q["question"]) for q in questions)
    assert found["question"]["chars"]["max"] == longest
    assert 0 < found["vocabulary"] < found["tokens"]
    assert found["by_subject"] == {"pharmacie": 15}

    text = runner.invoke(
        cli, ["--db", str(sample_store.path), "french", "stats", "--dataset", SAMPLE_DATASET]
    )  # fmt: skip
    assert text.exit_code == 0, text.output
    assert "questions by number of right answers" in text.output
    assert f"vocabulary  {found['vocabulary']} distinct words" in text.output


def test_a_data_set_that_is_not_there_or_not_french(sample_store) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["--db", str(sample_store.path), "french", "stats", "--dataset", "nope"])  # fmt: skip
    assert missing.exit_code != 0 and missing.output.startswith("Error: ")
    assert "Traceback" not in missing.output
    runner.invoke(cli, ["--db", str(sample_store.path), "exam", "sample"])
    other = runner.invoke(cli, ["--db", str(sample_store.path), "french", "stats", "--dataset", "explaincpe-sample"])  # fmt: skip
    assert other.exit_code != 0 and other.output.startswith("Error: ")
    assert "holds Exam items, not French QA items" in other.output
