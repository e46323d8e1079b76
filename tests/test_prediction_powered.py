"""A judge's mean corrected by people's ratings (prediction-powered inference): a small
example computed by hand, and the interval's coverage in simulations where the truth is
known."""

from __future__ import annotations

import numpy as np
import pytest

from engine.reports.ppi import more_ratings, ppi_mean, tuned_lambda

DRAWS = 1000


def test_prediction_powered_mean_by_hand() -> None:
    """λ = 1: mean(f_more) + mean(y − f) = 23/6 − 3/4; variance Var(f_more)/6 + Var(y − f)/4
    = (41/30)/6 + (1/4)/4."""
    found = ppi_mean([4, 2, 5, 3], [5, 3, 5, 4], [4, 5, 3, 5, 4, 2], lam=1.0)
    assert found.mean == pytest.approx(23 / 6 - 3 / 4)
    assert found.se == pytest.approx(np.sqrt(41 / 30 / 6 + 1 / 16))
    assert found.low == pytest.approx(found.mean - 1.959964 * found.se, abs=1e-5)
    assert found.judge_mean == pytest.approx(4.0)
    assert found.people_mean == pytest.approx(3.5)
    assert (found.n, found.n_judge_only) == (4, 6)


def test_prediction_powered_lambda_is_ppi_plus_plus() -> None:
    """λ = Cov(y, f) / ((1 + n/N) Var(all f)), clipped to [0, 1]; 0 for a constant judge."""
    y, f, more = np.array([4.0, 2, 5, 3]), np.array([5.0, 3, 5, 4]), np.array([4.0, 5, 3, 5, 4, 2])
    every = np.concatenate([f, more])
    expected = np.cov(y, f)[0, 1] / ((1 + 4 / 6) * np.var(every, ddof=1))
    assert tuned_lambda(y, f, more) == pytest.approx(expected)
    assert tuned_lambda(y, np.full(4, 3.0), np.full(6, 3.0)) == 0.0
    assert tuned_lambda(y, -f, -more) == 0.0  # a judge that runs against people: not used


def test_prediction_powered_without_enough_ratings() -> None:
    """Without two people's ratings there is no interval, nor a number of ratings to add."""
    none = ppi_mean([], [], [3, 4, 5])
    assert none.mean is None and none.low is None and none.judge_mean == pytest.approx(4.0)
    one = ppi_mean([4], [5], [3, 4, 5])
    assert one.low is None and more_ratings(one, 0.1) is None


def _simulate(rng: np.random.Generator, noise: float, bias: float, n: int, big_n: int):
    """People's ratings 1–5 and a judge's (people's plus ``bias`` and ``noise``, rounded
    and held to 1–5) for ``DRAWS`` samples of ``n + big_n`` answers."""
    latent = rng.normal(3.2, 1.0, size=(DRAWS, n + big_n))
    people = np.clip(np.rint(latent), 1, 5)
    judge = np.clip(np.rint(latent + bias + rng.normal(0, noise, size=latent.shape)), 1, 5)
    return people, judge


def _truth(noise: float, bias: float) -> float:
    latent = np.random.default_rng(99).normal(3.2, 1.0, size=4_000_000)
    return float(np.clip(np.rint(latent), 1, 5).mean())


@pytest.mark.parametrize(("noise", "bias"), [(0.4, 0.6), (2.0, -0.5), (0.0, 1.0)])
def test_prediction_powered_interval_coverage(noise: float, bias: float) -> None:
    """Over 1,000 simulated studies (40 answers rated by people, 400 by the judge alone) the
    95% interval holds the true mean of people's ratings 93–97% of the time, whatever the
    judge's bias; the judge's raw mean does not."""
    rng = np.random.default_rng(7)
    n, big_n = 40, 400
    people, judge = _simulate(rng, noise, bias, n, big_n)
    truth = _truth(noise, bias)
    found = [ppi_mean(p[:n], j[:n], j[n:]) for p, j in zip(people, judge, strict=True)]
    covered = np.mean([f.low <= truth <= f.high for f in found])
    assert 0.93 <= covered <= 0.97, covered
    if bias:
        raw = np.array([f.judge_mean for f in found])
        assert np.mean(np.abs(raw - truth) < 0.1) < 0.5


def test_prediction_powered_narrower_when_judge_agrees() -> None:
    """A judge that agrees with people (small noise) gives a narrower interval than people's
    ratings alone, in nearly every simulated study; a judge of pure noise no wider than
    people alone by more than a little (λ falls to near 0)."""
    rng = np.random.default_rng(11)
    n, big_n = 40, 400
    people, judge = _simulate(rng, 0.4, 0.6, n, big_n)
    found = [ppi_mean(p[:n], j[:n], j[n:]) for p, j in zip(people, judge, strict=True)]
    ratio = np.array([(f.high - f.low) / (f.people_high - f.people_low) for f in found])
    assert np.median(ratio) < 0.7
    assert np.mean(ratio < 1) > 0.95
    noise = np.clip(np.rint(rng.normal(3, 1, size=(DRAWS, n + big_n))), 1, 5)
    alone = [ppi_mean(p[:n], j[:n], j[n:]) for p, j in zip(people, noise, strict=True)]
    ratio = np.array([(f.high - f.low) / (f.people_high - f.people_low) for f in alone])
    assert np.median(ratio) < 1.05


def test_prediction_powered_more_ratings_reach_the_width() -> None:
    """The number of more ratings it names brings the interval, computed again with that
    many more people's ratings (and the same λ), to about the width asked for; λ tuned
    again only narrows it."""
    rng = np.random.default_rng(3)
    people, judge = _simulate(rng, 0.6, 0.3, 30, 970)
    p, j = people[0], judge[0]
    found = ppi_mean(p[:30], j[:30], j[30:])
    assert more_ratings(found, found.half_width() + 1) == 0
    need = more_ratings(found, 0.15)
    assert need is not None and need > 0
    more = 30 + need
    again = ppi_mean(p[:more], j[:more], j[more:], lam=found.lam)
    assert again.half_width() == pytest.approx(0.15, rel=0.15)
    tuned = ppi_mean(p[:more], j[:more], j[more:])
    assert tuned.half_width() < 0.15 * 1.15
    assert more_ratings(found, 1e-4) is None
    every = ppi_mean(p, j, [])  # nothing left to rate: people's mean alone
    assert every.lam == 0 and every.mean == pytest.approx(p.mean())
    assert more_ratings(every, 1e-4) is None and more_ratings(every, 1.0) == 0
