"""Agreement between two sources of 1-5 ratings: Spearman, quadratic-weighted kappa and
bias, checked against hand computations, with bootstrap intervals over items or clusters."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from engine.ratings.agreement import (
    Agreement,
    Interval,
    agreement,
    bias_rows,
    compare,
    kappa_rows,
    resample_weights,
    spearman_rows,
)

PEOPLE = [1, 2, 3, 4, 5, 3, 2, 4, 1, 5, 3, 4]
JUDGE = [1, 3, 3, 5, 4, 3, 1, 4, 2, 5, 4, 4]


def moderate(items: int = 40, seed: int = 7) -> tuple[list[int], list[int]]:
    """Ratings by two sources that agree moderately: the second is the first give or take
    one or two, a little more generous."""
    rng = np.random.default_rng(seed)
    first = rng.integers(1, 6, items)
    second = np.clip(first + rng.choice([-2, -1, 0, 0, 1, 1, 2], items), 1, 5)
    return first.tolist(), second.tolist()


def hand_kappa(first: list[int], second: list[int]) -> float:
    """Quadratic-weighted kappa from the observed and expected matrices over labels 1-5."""
    k = 5
    observed = np.zeros((k, k))
    for a, b in zip(first, second, strict=True):
        observed[a - 1, b - 1] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    i, j = np.indices((k, k))
    weights = (i - j) ** 2 / (k - 1) ** 2
    return 1 - (weights * observed).sum() / (weights * expected).sum()


def width(interval: Interval | None) -> float:
    assert interval is not None
    return interval.high - interval.low


def test_kappa_is_the_hand_computed_quadratic_kappa():
    found = agreement(PEOPLE, JUDGE, resamples=0)
    assert found.kappa == pytest.approx(hand_kappa(PEOPLE, JUDGE), abs=1e-12)
    assert 0.5 < found.kappa < 1


def test_kappa_counts_labels_neither_source_used():
    # only 2 and 4 are used: with labels 1..5 the weight between them is (2/4)^2, not 1
    first, second = [2, 2, 4, 4, 2], [2, 4, 4, 4, 2]
    assert agreement(first, second).kappa == pytest.approx(hand_kappa(first, second))


def test_spearman_without_ties_is_the_rank_difference_formula():
    first = [3.1, 1.2, 5.5, 2.0, 4.4, 0.3]
    second = [2.0, 1.0, 6.0, 4.0, 3.0, 5.0]
    rank_first = np.argsort(np.argsort(first)) + 1
    rank_second = np.argsort(np.argsort(second)) + 1
    n = len(first)
    rho = 1 - 6 * ((rank_first - rank_second) ** 2).sum() / (n * (n * n - 1))
    assert agreement(first, second, resamples=0).spearman == pytest.approx(rho, abs=1e-12)


def test_spearman_with_ties_is_scipys():
    expected = spearmanr(PEOPLE, JUDGE).statistic
    assert agreement(PEOPLE, JUDGE, resamples=0).spearman == pytest.approx(expected, abs=1e-12)


def test_resample_rows_match_the_measures_of_the_expanded_samples():
    x, y = np.array(PEOPLE, dtype=float), np.array(JUDGE, dtype=float)
    weights = resample_weights(np.arange(len(x)), 25, seed=3)
    rho, kappa, bias = (
        spearman_rows(x, y, weights),
        kappa_rows(x, y, weights),
        bias_rows(x, y, weights),
    )
    for row, counts in enumerate(weights.astype(int)):
        a, b = np.repeat(x, counts), np.repeat(y, counts)
        expected_rho = spearmanr(a, b).statistic
        expected_kappa = cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")
        assert rho[row] == pytest.approx(expected_rho, abs=1e-9)
        assert kappa[row] == pytest.approx(expected_kappa, abs=1e-9)
        assert bias[row] == pytest.approx(np.mean(b - a), abs=1e-12)


def test_resamples_where_a_measure_is_undefined_give_nan():
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 1.0, 3.0, 3.0])
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 2, 2], [0, 0, 0, 0]], dtype=float)
    rho = spearman_rows(x, y, weights)
    assert np.isnan(rho[0]) and np.isnan(rho[2]) and np.isnan(rho[3])  # 2 items, y constant, none
    assert rho[1] == pytest.approx(spearmanr([1, 2, 3], [2, 1, 3]).statistic)
    same = np.array([3.0, 3.0, 3.0, 3.0])
    assert np.isnan(kappa_rows(same, same, weights)).all()
    assert np.isnan(bias_rows(x, y, weights)[3])


def test_resample_weights_draw_whole_clusters():
    clusters = np.array([0, 0, 1, 2, 2, 2])
    weights = resample_weights(clusters, 50, seed=1)
    assert weights.shape == (50, 6)
    assert (weights[:, 0] == weights[:, 1]).all()
    assert (weights[:, 3] == weights[:, 4]).all() and (weights[:, 4] == weights[:, 5]).all()
    drawn = weights[:, 0] + weights[:, 2] + weights[:, 3]  # one item of each cluster
    assert (drawn == 3).all()
    items = resample_weights(np.arange(6), 50, seed=1)
    assert (items.sum(axis=1) == 6).all() and not (items == 1).all()


def test_pairs_with_a_missing_rating_are_left_out():
    first = [1, None, 3, 4, 5, 2, float("nan"), 4]
    second = [2, 3, None, 4, 5, 1, 2, None]
    found = agreement(first, second, resamples=100)
    kept = agreement([1, 4, 5, 2], [2, 4, 5, 1], resamples=100)
    assert found.n == 4
    assert found == kept


@pytest.mark.parametrize(
    ("first", "second"),
    [([], []), ([None, 2], [3, None]), ([1, 2], [2, 3]), ([3, 3, 3, 3], [1, 2, 4, 5])],
    ids=["nothing", "nothing-complete", "two-items", "one-side-constant"],
)
def test_degenerate_input_gives_no_measure_and_no_warning(first, second):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = agreement(first, second, resamples=200)
    assert found.n == len(
        [a for a, b in zip(first, second, strict=True) if a is not None and b is not None]
    )
    assert found.spearman is None and found.spearman_ci is None
    if found.n < 3:
        assert (found.kappa_ci, found.bias_ci) == (None, None)
    if found.n == 0:
        assert (found.kappa, found.bias) == (None, None)


def test_one_constant_side_agrees_no_better_than_chance():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = agreement([3, 3, 3, 3, 3], [1, 2, 3, 4, 5], resamples=200)
        same = agreement([4, 4, 4, 4], [4, 4, 4, 4], resamples=200)
    assert found.kappa == pytest.approx(0.0) and found.bias == pytest.approx(0.0)
    assert same.spearman is None and same.kappa is None and same.kappa_ci is None
    assert same.bias == 0.0 and same.bias_ci == Interval(0.0, 0.0)


def test_two_items_give_bias_and_kappa_without_intervals():
    found = agreement([1, 2], [2, 4], resamples=200)
    assert found.bias == pytest.approx(1.5)
    assert found.kappa == pytest.approx(hand_kappa([1, 2], [2, 4]))
    assert found.spearman is None


def test_ratings_other_than_the_labels_give_no_kappa():
    found = agreement([1.5, 2, 3, 4], [1, 2, 3, 4.5], resamples=100)
    assert found.kappa is None and found.kappa_ci is None
    assert found.spearman == pytest.approx(1.0) and found.bias == pytest.approx(0.0)


def test_bias_is_second_minus_first():
    people, judge = [1, 2, 3, 4, 2, 3], [2, 3, 4, 5, 2, 4]
    generous = agreement(people, judge, resamples=200)
    assert generous.bias == pytest.approx(5 / 6)
    assert generous.bias_ci.low > 0
    assert agreement(judge, people, resamples=200).bias == pytest.approx(-5 / 6)


def test_intervals_hold_the_estimate_and_repeat_for_a_seed():
    first, second = moderate()
    found = agreement(first, second, seed=11)
    for name in ("spearman", "kappa", "bias"):
        value, interval = getattr(found, name), getattr(found, f"{name}_ci")
        assert interval.low < value < interval.high, name
    assert 0.3 < found.spearman < 0.95 and 0.3 < found.kappa < 0.95
    assert agreement(first, second, seed=11) == found
    assert agreement(first, second, seed=12).spearman_ci != found.spearman_ci


def test_clustered_intervals_are_wider_when_clusters_repeat_items():
    first, second = moderate(items=20, seed=5)
    runs = 3  # each question rated alike in three runs
    first, second = first * runs, second * runs
    questions = list(range(20)) * runs
    items = agreement(first, second, seed=2)
    clustered = agreement(first, second, seed=2, clusters=questions)
    assert clustered.spearman == items.spearman and clustered.n == items.n == 60
    for name in ("spearman_ci", "kappa_ci", "bias_ci"):
        assert width(getattr(clustered, name)) > 1.3 * width(getattr(items, name)), name


def test_compare_uses_the_items_both_rated_for_each_key():
    people = {
        "q1": {"support": 1, "novelty": 2},
        "q2": {"support": 2, "novelty": None},
        "q3": {"support": 3, "novelty": 4},
        "q4": {"support": 4, "novelty": 4},
        "q5": {"support": 5},
        "only-people": {"support": 1, "novelty": 1},
    }
    judge = {
        "q5": {"support": 5, "novelty": 5},
        "q4": {"support": 5, "novelty": 3},
        "q3": {"support": 3, "novelty": 4},
        "q2": {"support": 3, "novelty": 2},
        "q1": {"support": 2, "novelty": 1},
        "only-judge": {"support": 5, "novelty": 5},
    }
    found = compare(people, judge, ["support", "novelty", "validity"], resamples=100, seed=4)
    assert list(found) == ["support", "novelty", "validity"]
    assert found["support"] == agreement([1, 2, 3, 4, 5], [2, 3, 3, 5, 5], resamples=100, seed=4)
    assert found["novelty"] == agreement([2, 4, 4], [1, 4, 3], resamples=100, seed=4)
    assert found["novelty"].n == 3 and found["validity"].n == 0


def test_compare_passes_clusters_by_item_id():
    first, second = moderate(items=30)
    people = {(q % 10, q // 10): {"support": r} for q, r in enumerate(first)}
    judge = {(q % 10, q // 10): {"support": r} for q, r in enumerate(second)}
    question = {item: item[0] for item in people}
    found = compare(people, judge, ["support"], clusters=question)["support"]
    assert found == agreement(first, second, clusters=[q % 10 for q in range(30)])
    assert found != compare(people, judge, ["support"])["support"]


def test_as_dict_is_plain_json():
    found = agreement(PEOPLE, JUDGE, resamples=200)
    back = json.loads(json.dumps(found.as_dict()))
    assert back["n"] == 12 and back["kappa"] == found.kappa
    assert back["spearman_ci"] == {"low": found.spearman_ci.low, "high": found.spearman_ci.high}
    empty = agreement([], []).as_dict()
    assert empty == {
        "n": 0,
        **{name: None for name in ("spearman", "spearman_ci", "kappa", "kappa_ci")},
        "bias": None,
        "bias_ci": None,
    }
    assert isinstance(found, Agreement)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="3 first ratings but 2"):
        agreement([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="2 clusters for 3"):
        agreement([1, 2, 3], [1, 2, 3], clusters=["a", "b"])
