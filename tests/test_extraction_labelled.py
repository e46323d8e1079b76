"""The answer extractors against real replies of the embedded models, each labelled by a
reader with the answer it commits to, or none and why (``tests/data/labelled_replies.jsonl``;
how it was made and the labelling rules: ``tests/data/labelled_replies.md``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engine.consult.doctor.final_task import extract_letter
from engine.exam.dataset import LETTERS
from engine.exam.extract import find_answer
from engine.french.reader import read_answer

DATA = Path(__file__).parent / "data" / "labelled_replies.jsonl"


@pytest.fixture(scope="module")
def labelled() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]


def extracted(row: dict) -> tuple[str | list[str] | None, str | None]:
    """What the activity's extractor reads in a labelled reply: its answer and, for none,
    the reason."""
    reply, options, finish = row["reply"], row["options"], row["finish_reason"]
    if row["activity"] == "french":
        found = read_answer(reply, {"answers": options}, finish)
        return found.letters or None, found.reason
    if row["activity"] == "exam":
        found = find_answer(reply, options, LETTERS[: len(options)], finish)
    else:
        found = extract_letter(reply, options, finish)
    return found.letter, found.reason


def test_extraction_labelled_set_covers_the_models_and_settings(labelled):
    assert len(labelled) >= 300
    assert {r["model"] for r in labelled} == {"smollm2", "gemma3-270m"}
    assert {r["activity"] for r in labelled} == {"exam", "french", "consult"}
    assert {r["shots"] for r in labelled if r["activity"] == "exam"} == {0, 1, 4}
    for r in labelled:
        assert (r["answer"] is None) == (r["reason"] is not None), r


def test_extraction_labelled_answers_agree_with_the_readers(labelled):
    """At least 98% of the replies get the answer the reader labelled (a letter, the
    French letters, or none)."""
    wrong = [(r["reply"][:80], r["answer"], extracted(r)[0]) for r in labelled
             if extracted(r)[0] != r["answer"]]  # fmt: skip
    share = 100 * (len(labelled) - len(wrong)) / len(labelled)
    assert share >= 98.0, f"{share:.1f}% agree; {wrong}"


def test_extraction_labelled_no_answers_say_the_readers_reason(labelled):
    """Of the replies both the reader and the extractor find no answer in, at least 95% give
    the reader's reason; echoed option lists and cut-off replies are the commonest."""
    pairs = [(r["reason"], extracted(r)[1]) for r in labelled if r["answer"] is None]
    both = [(a, b) for a, b in pairs if b is not None]
    share = 100 * sum(a == b for a, b in both) / len(both)
    assert share >= 95.0, f"{share:.1f}%: {Counter(both)}"
    reasons = Counter(a for a, _ in pairs)
    assert reasons["echo"] >= 30 and reasons["cut_off"] >= 10
