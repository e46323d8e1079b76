"""What a model run shows while it runs and when it ends: the headline score over the
answers so far, and the few summary entries each activity ends with, labelled."""

from __future__ import annotations

import pytest

from engine.activities import activities
from engine.reports.results import running_score, summary_rows


def test_running_accuracy_counts_wrong_and_unparsed_answers():
    answers = [{"correct": True}, {"correct": False}, {"correct": None}, {"correct": True}]
    assert running_score("exam", answers) == (50.0, 2)
    assert running_score("consult", answers[:1]) == (100.0, 1)


def test_running_hamming_score_and_exact_matches():
    answers = [{"scores": {"hamming": 1.0}}, {"scores": {"hamming": 0.25}}, {"scores": {}}]
    score, exact = running_score("french", answers)
    assert score == pytest.approx(125 / 3) and exact == 1


def test_no_answers_no_score():
    assert running_score("exam", []) == (None, 0)


def test_run_keys_in_their_order_with_labels():
    recall = {"k": 2, "recall": 66.7}
    summary = {"answered": 3, "emr": 33.3, "hamming": 50.0, "n": 3, "recall_at_k": recall}
    rows = summary_rows(summary, "french", activities()["french"].run_keys)
    assert [key for key, _, _ in rows] == ["hamming", "emr", "answered", "recall_at_k.recall"]
    assert rows[0][1] == "Hamming score (%)" and rows[-1][2] == 66.7


def test_missing_and_empty_run_keys_are_left_out():
    rows = summary_rows({"accuracy": 40.0, "rouge1": None}, "exam", activities()["exam"].run_keys)
    assert rows == [("accuracy", "Accuracy (%)", 40.0)]
    assert all(a.run_keys for a in activities().values())
