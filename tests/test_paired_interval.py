"""The interval of a paired difference: Newcombe's hybrid score interval (1998, method 10)
pinned to the paper's worked example and to a second implementation built on scipy's Wilson
interval, its coverage over the parameter space, a bootstrap over whole cases for clustered pairs,
and Holm's adjustment of several comparisons with the best."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from engine.reports.stats import (
    cluster_bootstrap,
    holm,
    newcombe_interval,
    paired_bootstrap,
    paired_difference,
    wilson_bounds,
)


def scipy_newcombe(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, float]:
    """Newcombe's method 10 written out from the paper, one table at a time, on scipy's
    Wilson interval (not the one under test)."""
    n = both + only_a + only_b + neither
    p1, p2 = (both + only_b) / n, (both + only_a) / n  # B's share, A's share
    ci1 = binomtest(both + only_b, n).proportion_ci(method="wilson")
    ci2 = binomtest(both + only_a, n).proportion_ci(method="wilson")
    l1, u1, l2, u2 = ci1.low, ci1.high, ci2.low, ci2.high
    e, f = both + only_b, only_a + neither  # B right, B wrong
    g, h = both + only_a, only_b + neither  # A right, A wrong
    phi = (both * neither - only_a * only_b) / math.sqrt(e * f * g * h) if e * f * g * h else 0
    delta = math.sqrt(max(0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return p1 - p2 - delta, p1 - p2 + eps


def items(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[float], list[float]]:
    """Per-item right (100) or wrong (0) of runs A and B for these cell counts."""
    a = [100.0] * both + [100.0] * only_a + [0.0] * only_b + [0.0] * neither
    b = [100.0] * both + [0.0] * only_a + [100.0] * only_b + [0.0] * neither
    return a, b


def test_paired_interval_is_newcombes_worked_example():
    # Newcombe (1998), Table II: 36 pairs right in both, 12 in the first only, 2 in the
    # second only, none in neither; method 10 gives 0.0569 to 0.3404 for the difference.
    low, high = newcombe_interval(36, 2, 12, 0)
    assert (float(low), float(high)) == pytest.approx((0.0569, 0.3404), abs=5e-5)
    a, b = items(36, 2, 12, 0)
    found = paired_difference(a, b, right_wrong=True)
    assert found["method"] == "newcombe" and found["test"] == "McNemar"
    assert (found["low"], found["high"]) == pytest.approx((5.69, 34.04), abs=5e-3)
    assert found["diff"] == pytest.approx(20.0)
    # The other way round: B − A is minus A − B, the interval mirrored.
    back = paired_difference(b, a, right_wrong=True)
    assert (back["low"], back["high"]) == pytest.approx((-34.04, -5.69), abs=5e-3)


def test_paired_interval_matches_a_second_implementation():
    rng = np.random.default_rng(7)
    tables = [tuple(int(x) for x in rng.multinomial(n, rng.dirichlet([1, 1, 1, 1])))
              for n in (5, 12, 30, 30, 30, 80, 200) for _ in range(6)]  # fmt: skip
    tables += [(30, 0, 0, 0), (0, 0, 0, 30), (10, 0, 0, 20), (0, 5, 0, 25), (0, 0, 6, 0)]
    cells = np.array(tables).T
    low, high = newcombe_interval(*cells)
    for i, table in enumerate(tables):
        assert (low[i], high[i]) == pytest.approx(scipy_newcombe(*table), abs=1e-9), table
    # Wilson's interval itself against scipy's, exactly 0 and 1 at the ends (a chart's error
    # bar below a score of 0 must not be negative).
    for k, n in [(0, 10), (3, 10), (10, 10), (17, 200), (0, 12), (12, 12)]:
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert tuple(float(x) for x in wilson_bounds(k, n)) == pytest.approx((ci.low, ci.high))
    assert wilson_bounds(0, 12)[0] == 0.0 and wilson_bounds(12, 12)[1] == 1.0


def test_paired_interval_of_thirty_items_with_five_disagreements_is_newcombes():
    # 30 items, 5 the runs disagree on (4 right in A only, 1 in B only), 10 right in both.
    a, b = items(10, 4, 1, 15)
    found = paired_difference(a, b, right_wrong=True)
    expected = scipy_newcombe(10, 4, 1, 15)
    assert (found["low"], found["high"]) == pytest.approx(tuple(100 * x for x in expected))
    assert found["diff"] == pytest.approx(-10.0)
    # The old interval (the disagreeing items' split times 5/30) could not pass ±16.7.
    assert found["low"] < -100 * 5 / 30 and found["high"] > 0
    # One item apart of six (the comparison printed "-16.7 [-16.7, 15.8]").
    six = paired_difference(*items(0, 1, 0, 5), right_wrong=True)
    assert (six["low"], six["high"]) == pytest.approx((-56.35, 24.69), abs=0.01)


def test_paired_interval_without_any_disagreement_is_still_an_interval():
    for both, neither in [(20, 10), (30, 0), (0, 30), (3, 1)]:
        found = paired_difference(*items(both, 0, 0, neither), right_wrong=True, top=100)
        assert found["diff"] == 0 and found["p"] == 1.0
        assert found["low"] < 0 < found["high"]
        assert found["low"] == pytest.approx(-found["high"])
    # Wider from fewer items.
    few = paired_difference(*items(3, 0, 0, 1), right_wrong=True)
    many = paired_difference(*items(20, 0, 0, 10), right_wrong=True)
    assert few["high"] > many["high"]


def _tables_of(n: int) -> np.ndarray:
    """Every table of ``n`` paired items: (right in both, A only, B only, neither) rows."""
    grid = np.array([(x, y, z) for x in range(n + 1) for y in range(n + 1 - x)
                     for z in range(n + 1 - x - y)])  # fmt: skip
    return np.column_stack([grid, n - grid.sum(axis=1)])


def _exact_coverage(n: int, probs: np.ndarray) -> np.ndarray:
    """The chance that the interval holds the true difference, over every table of ``n``,
    for each row of true shares ``probs`` (both, A only, B only, neither)."""
    from scipy.special import gammaln

    cells = _tables_of(n)
    low, high = newcombe_interval(*cells.T)
    theta = probs[:, 2] - probs[:, 1]
    held = (low[:, None] <= theta + 1e-12) & (theta <= high[:, None] + 1e-12)
    log_pmf = gammaln(n + 1) - gammaln(cells + 1).sum(axis=1)
    with np.errstate(divide="ignore"):
        pmf = np.exp(log_pmf[:, None] + cells @ np.log(probs).T)
    return (pmf * held).sum(axis=0)


def test_paired_interval_covers_the_true_difference_over_parameter_space():
    # As Newcombe (1998) judged the methods: coverage averaged over the parameter space,
    # not at one point. 2,000 true tables drawn uniformly over every (both, A only, B only,
    # neither) share (a flat Dirichlet), each with its own coverage.
    rng = np.random.default_rng(2026)
    probs = rng.dirichlet([1, 1, 1, 1], size=2000)
    theta = probs[:, 2] - probs[:, 1]
    # 30 items: each true table's coverage exact, over all 5,456 tables of 30.
    small = _exact_coverage(30, probs)
    assert 0.94 <= small.mean() <= 0.96, small.mean()  # 94.4%
    # 200 items: 50 draws of each true table (100,000 in all).
    draws = np.concatenate([rng.multinomial(200, p, size=50) for p in probs])
    low, high = newcombe_interval(*draws.T)
    truth = np.repeat(theta, 50)
    large = float(np.mean((low <= truth) & (truth <= high)))
    assert 0.94 <= large <= 0.96, large  # 94.9%
    # Averages hide the edges: where the runs rarely disagree, method 10 at 30 items can
    # cover far less (a few tables in a hundred below 93%).
    assert small.min() < 0.9 and np.mean(small < 0.93) < 0.1


# (right in both, in A only, in B only, in neither): runs of 50-60% right that disagree on
# 20-50% of the items, B the better by 0 to 10 points.
TRUE_CELLS = [(0.4, 0.1, 0.2, 0.3), (0.35, 0.15, 0.15, 0.35), (0.2, 0.2, 0.3, 0.3)]


def test_paired_interval_coverage_at_typical_points_of_thirty_items():
    # At single points typical of two models on an exam, 30 items: method 10 runs a little
    # below 95% (Newcombe's own tables say so), without simulation noise.
    coverage = _exact_coverage(30, np.array(TRUE_CELLS))
    assert np.all((coverage >= 0.925) & (coverage <= 0.955)), coverage


def test_paired_interval_of_clustered_pairs_resamples_whole_cases():
    # 12 cases, 3 trials each, every trial of a case alike: 36 pairs but only 12 cases.
    case_diffs = [100.0] * 5 + [0.0] * 4 + [-100.0] * 3
    a = [100.0 if d <= 0 else 0.0 for d in case_diffs for _ in range(3)]
    b = [100.0 if d >= 0 else 0.0 for d in case_diffs for _ in range(3)]
    cases = [str(i) for i in range(12) for _ in range(3)]
    found = paired_difference(a, b, right_wrong=True, clusters=cases)
    assert found["test"] == "cluster bootstrap" and found["method"] == "cluster bootstrap"
    assert found["diff"] == pytest.approx(100 * 2 / 12)
    # Treating the 36 pairs as independent makes the interval too narrow.
    loose = paired_bootstrap(a, b)
    assert found["high"] - found["low"] > 1.4 * (loose["high"] - loose["low"])
    # One pair per case: no clusters to speak of, Newcombe's interval.
    single = paired_difference(a[::3], b[::3], right_wrong=True, clusters=cases[::3])
    assert single["method"] == "newcombe"
    # Too few cases for a bootstrap.
    few = cluster_bootstrap(a[:9], b[:9], cases[:9])
    assert few["too_few"] and few["low"] is None


def test_paired_interval_p_of_several_comparisons_is_holm_adjusted():
    # The textbook example: the smallest times 4, the next times 3, never decreasing.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.9]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert holm([0.02]) == [0.02]


def test_paired_interval_of_a_report_is_newcombes(store):
    from engine.reports import build_report, render
    from tests.test_compare import stored_run, thirty_items

    dataset = thirty_items(store)  # 30 items, 5 disagreements: 4 right in A only, 1 in B only
    first = stored_run(store, dataset, "big", [True] * 14 + [False] * 16)
    second = stored_run(store, dataset, "small", [True] * 10 + [False] * 4 + [True] + [False] * 15)
    report = build_report(store, [first, second])
    (section,) = report["sections"]
    tables = {t["title"]: t for t in section["tables"]}
    paired = tables["Paired comparisons on the items both runs answered"]
    row = dict(zip(paired["columns"], paired["rows"][0], strict=True))
    cell = row["Accuracy B − A (points)"]
    expected = tuple(100 * x for x in scipy_newcombe(10, 4, 1, 15))
    assert cell["value"] == pytest.approx(-100 * 3 / 30)
    assert (cell["low"], cell["high"]) == pytest.approx(expected)
    assert any("Newcombe" in n for n in paired["notes"])
    made = tables["How these numbers were made"]
    assert [r[0] for r in made["rows"]] == [f"#{first}", f"#{second}"]
    assert any("Statistical methods: Wilson's score interval" in n for n in made["notes"])
    text = render(report, "text")
    assert "How these numbers were made" in text and "method 10" in text


@pytest.mark.parametrize(("items", "bootstrap"), [(3, False), (9, False), (14, True)])
def test_report_names_a_bootstrap_among_its_methods_only_when_it_made_one(store, items, bootstrap):
    from engine.exam.dataset import ensure_sample
    from engine.reports import build_report
    from tests.test_compare import stored_run, thirty_items

    dataset = ensure_sample(store) if items <= 3 else thirty_items(store)
    runs = [stored_run(store, dataset, m, [True, False] * (items // 2) + [True] * (items % 2))
            for m in ("a", "b")]  # fmt: skip
    (section,) = build_report(store, runs)["sections"]
    made = next(t for t in section["tables"] if t["title"] == "How these numbers were made")
    (note,) = [n for n in made["notes"] if n.startswith("Statistical methods:")]
    assert "Newcombe" in note and "McNemar" in note
    assert ("bootstrap" in note) == bootstrap, note
