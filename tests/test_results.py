"""engine.reports.results: summary metrics by name, scores by category, and two runs compared."""

from __future__ import annotations

import pytest

from engine.core.scoring import Scored
from engine.reports.results import category_scores, compare_runs, summary_rows
from engine.store.store import Store

ITEMS = [
    {"id": "q1", "question": "?", "type1": "正向"},
    {"id": "q2", "question": "?", "type1": "反向"},
    {"id": "q3", "question": "?", "type1": "正向"},
]


def run_with(store: Store, answers: dict[str, tuple[str, bool]], summary: dict) -> int:
    run_id = store.start_run("exam", "bank", "m", {}, n_total=len(answers))
    for key, (chosen, correct) in answers.items():
        right = [Scored("exam.letter", 1, {"correct": correct})]
        store.add_answer(run_id, key, response=chosen, chosen=chosen, scores=right)
    store.finish_run(run_id, summary)
    return run_id


@pytest.fixture
def bank(store: Store) -> Store:
    store.add_dataset("bank", "exam", ITEMS)
    return store


def test_summary_rows_keep_scalars_and_flatten_one_level():
    summary = {"run_id": 3, "n": 4, "accuracy": 50.0, "by_type": {"type1": {}},
               "recall_at_k": {"1": 0.5, "deep": {"x": 1}}, "settings": {"k": 1}}  # fmt: skip
    assert summary_rows(summary) == [
        ("n", "Items", 4),
        ("accuracy", "Accuracy (%)", 50.0),
        ("recall_at_k.1", "Recall at k: 1", 0.5),
    ]
    assert summary_rows(None) == []
    assert summary_rows({"hamming": 40.0}, "french") == [("hamming", "Hamming score (%)", 40.0)]


def test_category_scores_from_the_summary():
    by_type = {"type1": {"正向": {"accuracy": 80.0, "n": 5}},
               "type2": {"常识题": {"accuracy": 50.0, "n": 2}, "案例题": {"n": 1}}}  # fmt: skip
    assert category_scores({"activity": "exam", "summary": {"by_type": by_type}}) == (
        "Accuracy by kind of question",
        [("常识题", 50.0, 2), ("案例题", 0.0, 1)],
    )
    by_n = {"1": {"hamming": 75.0, "n": 4}, "2": {"hamming": 40.0, "n": 1}}
    assert category_scores({"activity": "french", "summary": {"by_n_answers": by_n}}) == (
        "Hamming score by number of right answers",
        [("1 right", 75.0, 4), ("2 right", 40.0, 1)],
    )
    assert category_scores({"activity": "exam", "summary": {}}) == ("", [])


def test_category_scores_from_the_items(bank):
    run_id = run_with(bank, {"q1": ("A", True), "q2": ("B", False), "q3": ("C", False)}, {})
    what, rows = category_scores(bank.run(run_id), bank)
    assert what == "Accuracy by category"
    assert rows == [("反向", 0.0, 1), ("正向", 50.0, 2)]
    bank.delete_dataset("bank")
    assert category_scores(bank.run(run_id), bank) == ("", [])


def test_compare_runs(bank):
    a = run_with(bank, {"q1": ("A", True), "q2": ("B", False)}, {"n": 2, "accuracy": 50.0})
    b = run_with(bank, {"q2": ("B", False), "q1": ("C", False), "q3": ("D", True)},
                 {"n": 3, "accuracy": 33.3, "no_letter": 0})  # fmt: skip
    cmp = compare_runs(bank, a, b)
    assert cmp["a"]["id"] == a and cmp["b"]["id"] == b
    assert cmp["metrics"] == [
        ("Items", 2, 3),
        ("Accuracy (%)", 50.0, 33.3),
        ("Replies without a letter", None, 0),
    ]
    assert cmp["items"] == [("q1", "A", "C", 1, 0), ("q2", "B", "B", 0, 0)]
    assert cmp["agree"] == 1


def test_the_results_screen_uses_the_engines_results():
    from engine.reports import results
    from gui.widgets import qt_results

    assert qt_results.compare_runs is results.compare_runs
    assert qt_results.category_scores is results.category_scores
    assert qt_results.summary_rows is results.summary_rows
