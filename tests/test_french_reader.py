"""The reader: answer letters read from French text, per-option probabilities, runs with and
without retrieved passages (a scripted model, :mod:`engine.models.scripted`), and real runs
of the embedded models: letter probabilities, a crash, a base model."""

from __future__ import annotations

import os
import signal

import french_fixtures
import pytest
from french_fixtures import sample_questions

from engine.core.progress import Cancel
from engine.french import prompts
from engine.french.dataset import SAMPLE_CORPUS, SAMPLE_DATASET
from engine.french.index import build_index
from engine.french.reader import (
    Reader,
    format_letters,
    match_option_texts,
    parse_letters,
    read_answer,
    select_options,
)
from engine.french.runner import run_french
from engine.models.pool import ModelPool
from engine.models.scripted import ScriptedModel

indexes = french_fixtures.indexes
sample_store = french_fixtures.sample_store


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("A + D", "ad"),
        ("A + D + E", "ade"),
        ("ad", "ad"),
        ("A,D", "ad"),
        ("a ; d", "ad"),
        ("(A) (C)", "ac"),
        ("B", "b"),
        ("e.", "e"),
        ("Réponses : B et C", "bc"),
        ("Réponse(s) : A + C", "ac"),
        ("La réponse est A", "a"),
        ("La bonne réponse est la proposition C, car l'acide…", "c"),
        ("Les réponses exactes sont A, C et E.", "ace"),
        ("réponses correctes : c, d, e", "cde"),
        ("D'après le document, la réponse est B.", "b"),
        ("B\n\nExplication : la warfarine est surveillée par l'INR.", "b"),
        ("Les propositions A et C sont exactes.", "ac"),
        ("**A**, **D**", "ad"),
        ("Réponse : a) Sont formées de noyaux d'hélium", "a"),
        ("Je ne sais pas.", ""),
        ("", ""),
    ],
)
def test_parse_letters(text, letters):
    assert parse_letters(text) == list(letters)


def test_option_texts_as_fallback_and_letter_format():
    item = sample_questions()[1]
    said = "Son efficacité est surveillée par l'INR (International Normalized Ratio)."
    assert match_option_texts(said, item) == ["b"]
    assert match_option_texts("Aucune idée", item) == []
    assert format_letters({"d", "a"}) == "A + D" and format_letters([]) == ""


def test_select_options_always_at_least_one():
    assert select_options({"a": 0.9, "b": 0.5, "c": 0.1, "d": 0.49, "e": 0.2}) == ["a", "b"]
    assert select_options({"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.2, "e": 0.1}) == ["c"]
    assert select_options({c: 0.8 for c in "abcde"}, threshold=0.9) == ["a"]


def test_prompts_hold_passages_question_and_options():
    item = sample_questions()[0]
    message = prompts.user_message(item, ["Un document de référence."])
    assert message.startswith("Documents :\n[1] Un document de référence.")
    assert "A. La toxicité est principalement hépatique" in message
    assert "E. Le risque" in message and prompts.INSTRUCTION in message
    assert "Documents" not in prompts.user_message(item, [])
    option = prompts.option_user_message(item, [], "c")
    assert "Proposition C : Le métabolite toxique" in option and prompts.OPTION_QUESTION in option


def test_reader_rejects_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        Reader(None, method="vote")


def test_generate_with_and_without_context(scripted_pool, sample_store, indexes):
    model = ScriptedModel("reader", replies="Réponses : A et B")
    pool = scripted_pool(model)
    index = build_index(sample_store, SAMPLE_CORPUS, "bm25")
    with_context = run_french(
        sample_store, SAMPLE_DATASET, "reader", index=index.name, k=1, limit=2, pool=pool
    )
    without = run_french(sample_store, SAMPLE_DATASET, "reader", limit=2, pool=pool)
    for summary in (with_context, without):
        assert summary["status"] == "finished" and summary["n"] == 2
        assert 0 <= summary["hamming"] <= 100 and 0 <= summary["emr"] <= summary["hamming"]
        assert set(summary["by_n_answers"]) <= {"1", "2", "3", "4", "5"}
    assert [r.kind for r in model.requests] == ["chat"] * 4
    assert all("Documents :" in r.prompt for r in model.requests[:2])
    assert not any("Documents :" in r.prompt for r in model.requests[2:])
    answers = sample_store.answers(with_context["run_id"])
    assert [a["item_key"] for a in answers] == ["sample-01", "sample-02"]
    assert answers[0]["gold"] == "A + B + C" and answers[0]["response"] == "Réponses : A et B"
    assert answers[0]["extra"]["pred"] == ["a", "b"]
    assert answers[0]["extra"]["passages"][0]["source"].startswith("sample-p")
    assert answers[0]["prompt_tokens"] > sample_store.answers(without["run_id"])[0]["prompt_tokens"]
    run = sample_store.run(with_context["run_id"])
    assert run["status"] == "finished" and run["settings"]["index"] == index.name
    assert run["summary"]["hamming"] == with_context["hamming"]
    assert with_context["recall_at_k"] is None  # the sample passages do not name questions


@pytest.mark.slow
def test_logprob_method_selects_options(chat_model, sample_store):
    summary = run_french(sample_store, SAMPLE_DATASET, "smollm2", method="logprob", limit=2)
    assert summary["status"] == "finished" and summary["n"] == 2
    for answer in sample_store.answers(summary["run_id"]):
        probabilities = answer["extra"]["probabilities"]
        assert set(probabilities) == set("abcde")
        assert all(0 <= p <= 1 for p in probabilities.values())
        chosen = set(answer["extra"]["pred"])
        assert chosen and chosen == set(select_options(probabilities))


def test_recall_resume_and_cancel(scripted_pool, sample_store, indexes):
    from engine.french.corpus import add_corpus_from_dataset

    pool = scripted_pool(ScriptedModel("reader", replies="Réponse : C"))
    add_corpus_from_dataset(sample_store, SAMPLE_DATASET, "own")
    index = build_index(sample_store, "own", "bm25")
    cancel = Cancel()

    def stop_after_first(progress) -> None:
        if progress.done >= 1:
            cancel.set()

    first = run_french(
        sample_store,
        SAMPLE_DATASET,
        "reader",
        index=index.name,
        k=2,
        limit=3,
        pool=pool,
        progress=stop_after_first,
        cancel=cancel,
    )
    assert first["status"] == "cancelled" and first["answered"] == 1
    assert sample_store.run(first["run_id"])["status"] == "cancelled"
    resumed = run_french(
        sample_store,
        SAMPLE_DATASET,
        "reader",
        index=index.name,
        k=2,
        limit=3,
        pool=pool,
        resume=first["run_id"],
    )
    assert resumed["status"] == "finished" and resumed["n"] == 3
    assert resumed["run_id"] == first["run_id"]
    # Each question's own passage is in the corpus: recall@2 is measured on all three.
    assert resumed["recall_at_k"]["n"] == 3 and resumed["recall_at_k"]["recall"] == 100.0


@pytest.mark.slow
def test_a_crash_fails_the_run_and_a_resume_restarts_the_model(sample_store):
    pool = ModelPool()
    try:
        with pool.lease("smollm2") as held:
            summary = run_french(
                sample_store,
                SAMPLE_DATASET,
                "smollm2",
                limit=2,
                pool=pool,
                concurrency=1,  # one question at a time: the second is asked after the kill
                progress=lambda p: p.done == 1 and os.kill(held.pid, signal.SIGKILL),
            )
            assert summary["status"] == "failed" and "stopped" in summary["error"]
            assert summary["answered"] == 1
            assert sample_store.run(summary["run_id"])["status"] == "failed"
            resumed = run_french(sample_store, SAMPLE_DATASET, resume=summary["run_id"], pool=pool)
            assert resumed["status"] == "finished" and resumed["answered"] == 2
            assert held.alive  # the lease outlives the restart of its model
    finally:
        pool.close()


@pytest.mark.slow
def test_base_model_without_chat_template(base_model, sample_store):
    assert not base_model.has_chat_template
    for method in ("generate", "logprob"):
        summary = run_french(
            sample_store,
            SAMPLE_DATASET,
            "gemma3-270m",
            method=method,
            limit=1,
        )
        assert summary["status"] == "finished" and summary["n"] == 1


@pytest.mark.parametrize(
    ("text", "finish", "letters", "reason"),
    [
        ("C. Le foie\nD. Le rein\nE. La rate", "length", "", "echo"),  # the list copied on
        ("A. Le foie\nB. Le rein", "stop", "", "echo"),
        ("\n1. Le foie est un organe\n2. Le rein", "length", "", "echo"),  # numbered
        ("F", "stop", "", "out_of_range"),
        ("La question porte sur la physiologie du foie et", "length", "", "cut_off"),
        ("", "stop", "", "empty"),
        ("Je ne sais pas.", "stop", "", "no_letter"),
        ("A + D", "stop", "ad", None),
        ("Réponses : A, B\nA. Le foie\nB. Le rein", "stop", "ab", None),  # stated first
        ("A. Le foie\nD. Le rein", "stop", "ad", None),  # its choices, with their texts
        ("C. Le foie est le siège de la", "length", "c", None),  # chose, then cut
        ('La réponse exacte est : "A + C"\n\nLa réponse', "length", "ac", None),
        ("La vitamine B est utile dans", "length", "", "cut_off"),  # a capital of a cut sentence
    ],
)
def test_read_answer_says_why_a_reply_gives_none(text, finish, letters, reason):
    found = read_answer(text, sample_questions()[0], finish)
    assert (found.letters, found.reason) == (list(letters), reason)


def test_a_run_summary_gives_no_answers_the_cut_off_share_and_chance(scripted_pool, sample_store):
    from math import comb

    replies = ["C. x\nD. y\nE. z", "A + D", " ".join(["mot"] * 40)]  # echo, answer, cut off
    pool = scripted_pool(ScriptedModel("reader", replies=replies))
    summary = run_french(sample_store, SAMPLE_DATASET, "reader", limit=3, pool=pool)
    assert summary["no_answer"] == {"echo": 33.3, "cut_off": 33.3}
    assert summary["cut_off"] == 33.3
    golds = [len(a["extra"]["gold"]) for a in sample_store.answers(summary["run_id"])]

    def guessed(g: int) -> float:  # mean |S ∩ G| / |S ∪ G| over the 31 non-empty subsets S
        pairs = [(i, j) for i in range(g + 1) for j in range(6 - g) if i + j]
        return sum(comb(g, i) * comb(5 - g, j) * i / (g + j) for i, j in pairs) / 31

    hamming = 100 * sum(guessed(g) for g in golds) / len(golds)
    assert summary["chance"]["hamming"] == pytest.approx(hamming, abs=0.01)
    assert summary["chance"]["emr"] == summary["chance"]["accuracy"] == round(100 / 31, 2)
