"""``medexam train french-writer``: SmolLM2 fine-tuned with LoRA to write the right letters
of FrenchMedMCQA questions (with the best BM25 passage of the sample corpus), for a few
steps, then evaluated by a French run as any chat model (``smollm2+NAME``) through
``medexam train evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.store.store import Store


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


@pytest.mark.slow
def test_train_a_writer_then_run_it(db_path: str, home: Path) -> None:
    assert invoke(db_path, "french", "sample").exit_code == 0
    trained = invoke(
        db_path, "train", "french-writer", "--dataset", "frenchmedmcqa-sample", "--name", "w",
        "--retriever", "bm25", "--corpus", "french-sample", "--max-steps", "2", "--batch-size",
        "2", "--json",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    row = json.loads(trained.output)
    assert row["status"] == "finished" and row["step"] == 2
    assert row["data"]["retriever"] == "bm25" and row["data"]["index"]
    # every question's answer is learned: the letters, then the end of the turn
    assert row["data"]["learned_tokens"] >= 2 * row["data"]["n_train"]

    # what `french run --model smollm2+w --index INDEX -k 1` does
    ran = invoke(
        db_path, "train", "evaluate", str(row["id"]), "--dataset", "frenchmedmcqa-sample",
        "--limit", "2", "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.output.strip().splitlines()[-1])
    run = Store(db_path).run(summary["run_id"])
    assert run["model"] == "smollm2+w" and summary["n"] == 2
    assert run["settings"]["index"] == row["data"]["index"] and run["settings"]["k"] == 1
    assert summary["hamming"] is not None
