"""``medexam french …``: sample, index, indexes, search, run and take (import, corpus and score
are exercised in their own test files)."""

from __future__ import annotations

import json

import french_fixtures
import pytest
from click.testing import CliRunner

from engine.cli import cli

indexes = french_fixtures.indexes


def invoke(db_path: str, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", db_path, *args], input=input)


@pytest.fixture
def ready(db_path, indexes):
    """A database with the sample and a BM25 index named "s"."""
    assert invoke(db_path, "french", "sample").exit_code == 0
    built = invoke(db_path, "french", "index", "--corpus", "french-sample", "--name", "s")
    assert built.exit_code == 0, built.output
    return db_path


def test_sample_and_index(db_path, indexes):
    first = invoke(db_path, "french", "sample", "--json")
    assert json.loads(first.output) == {
        "dataset": "frenchmedmcqa-sample",
        "corpus": "french-sample",
    }
    built = invoke(
        db_path, "french", "index", "--corpus", "french-sample", "--retriever", "bm25", "--json"
    )
    info = json.loads(built.output)
    assert info["rebuilt"] and info["name"] == "french-sample-bm25" and info["n_passages"] >= 30
    again = invoke(db_path, "french", "index", "--corpus", "french-sample")
    assert again.exit_code == 0 and "up to date: index 'french-sample-bm25'" in again.output
    forced = invoke(db_path, "french", "index", "--corpus", "french-sample", "--force")
    assert forced.stdout.startswith("built index 'french-sample-bm25'")  # no blank line first
    # off a terminal the progress is lines with a percentage, no blank one
    assert all("%" in line for line in forced.stderr.splitlines())
    listed = invoke(db_path, "french", "indexes", "--json")
    assert [m["name"] for m in json.loads(listed.output)] == ["french-sample-bm25"]
    missing = invoke(db_path, "french", "index", "--corpus", "nope")
    assert missing.exit_code == 1 and "no corpus named 'nope'" in missing.output


def test_search(ready):
    hits = json.loads(
        invoke(
            ready,
            "french",
            "search",
            "--index",
            "s",
            "--query",
            "antidote du paracétamol",
            "-k",
            "2",
            "--json",
        ).output
    )
    assert len(hits) == 2 and hits[0]["source"] == "sample-p02"
    start, end = hits[0]["spans"][0]
    assert hits[0]["text"][start:end].lower() in {"antidote", "paracétamol"}
    text = invoke(ready, "french", "search", "--index", "s", "--query", "vaccin hépatite B")
    assert text.exit_code == 0 and "1. sample-p33 (passage 1, score" in text.output
    none = invoke(ready, "french", "search", "--index", "s", "--query", "zzzz")
    assert "no passage matches" in none.output
    unknown = invoke(ready, "french", "search", "--index", "nope", "--query", "x")
    assert unknown.exit_code == 1 and "no index named 'nope'" in unknown.output


@pytest.mark.slow
def test_run_with_and_without_passages_and_resume(ready):
    with_index = invoke(
        ready,
        "french",
        "run",
        "--dataset",
        "frenchmedmcqa-sample",
        "--model",
        "smollm2",
        "--index",
        "s",
        "-k",
        "1",
        "--limit",
        "2",
        "--json",
    )
    assert with_index.exit_code == 0, with_index.output
    summary = json.loads(with_index.output)
    assert summary["status"] == "finished" and summary["n"] == 2
    assert summary["settings"]["index"] == "s" and summary["settings"]["k"] == 1
    assert {"hamming", "emr", "by_n_answers", "recall_at_k"} <= summary.keys()

    text = invoke(
        ready, "french", "run", "--dataset", "frenchmedmcqa-sample", "--no-context", "--limit", "2"
    )
    assert text.exit_code == 0, text.output
    assert "no passage" in text.output and "Hamming" in text.output and "EMR" in text.output
    assert "by number of correct answers:" in text.output

    resumed = invoke(
        ready,
        "french",
        "run",
        "--dataset",
        "frenchmedmcqa-sample",
        "--resume",
        str(summary["run_id"]),
        "--json",
    )
    again = json.loads(resumed.output)
    assert again["run_id"] == summary["run_id"] and again["n"] == 2  # nothing left to answer
    run_id = str(summary["run_id"])
    shown = invoke(ready, "french", "run", "--dataset", "frenchmedmcqa-sample", "--resume", run_id)
    assert shown.exit_code == 0 and "1 passage(s) from s" in shown.output
    assert again["own_passages_excluded"] == 0 and "own passage left out" not in shown.output

    both = invoke(
        ready, "french", "run", "--dataset", "frenchmedmcqa-sample", "--index", "s", "--no-context"
    )
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_take_in_the_terminal(ready):
    result = invoke(
        ready,
        "french",
        "take",
        "--dataset",
        "frenchmedmcqa-sample",
        "--limit",
        "3",
        "--in-order",
        "--index",
        "s",
        input="A + B + C\nb\nq\n",
    )
    assert result.exit_code == 0, result.output
    assert "Question 1/3" in result.output and "Document (sample-p02)" in result.output
    assert "exact: vous avez choisi A + B + C" in result.output
    assert (
        "run 1: 2/3 answered" in result.output and "Exact match ratio (%)  100.0\n" in result.output
    )
    runs = json.loads(invoke(ready, "runs", "list", "--activity", "french", "--json").output)
    assert runs[0]["runner"] == "person" and runs[0]["status"] == "cancelled"
