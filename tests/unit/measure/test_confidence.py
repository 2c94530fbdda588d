"""The stop rule's statistics (``measure.confidence``) against scipy: Student's t quantiles, the
order-statistic interval's binomial coverage, and Stein's two-stage interval holding its 95 %
however the number of values was chosen from the first ones' spread."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from scipy import stats

from nasplan.measure.confidence import (
    order_statistic_interval,
    stein_interval,
    stein_needed,
    t_interval,
    t_quantile,
)


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.96, 0.99, 0.999])
def test_t_quantiles_are_scipys(confidence: float) -> None:
    for df in range(1, 80):
        assert t_quantile(df, confidence) == pytest.approx(
            stats.t.ppf((1 + confidence) / 2, df), rel=1e-12
        )


def test_the_order_statistic_interval_is_the_widest_k_whose_binomial_coverage_is_95() -> None:
    assert order_statistic_interval([1, 2, 3, 4, 5]) is None  # [min, max] of 5: 93.75 %
    for n in range(6, 60):
        values = list(range(n))
        interval = order_statistic_interval(values)
        assert interval is not None
        k = int(interval.low) + 1  # [x(k), x(n+1-k)], 1-based
        assert interval.high == n - k
        coverage = 1 - 2 * stats.binom.cdf(k - 1, n, 0.5)
        wider_k = 1 - 2 * stats.binom.cdf(k, n, 0.5)
        assert coverage >= 0.95 > wider_k, n


def test_t_interval_of_fixed_n_is_scipys() -> None:
    values = [949.4, 951.1, 954.9, 953.2, 955.9]
    interval = t_interval(values)
    assert interval is not None
    low, high = stats.t.interval(
        0.95, len(values) - 1, loc=statistics.fmean(values), scale=stats.sem(values)
    )
    assert (interval.low, interval.high) == (pytest.approx(low), pytest.approx(high))
    assert interval.statistic == "t" and interval.median == 953.2


def test_steins_interval_holds_95_percent_however_n_followed_the_first_spread() -> None:
    """Normal rates, n chosen from the first 4's spread for ±2 %: the interval built with that
    spread covers the true centre 95 % of the time; the same stop with the spread re-estimated
    at the end (what a running interval does) covers less."""
    rng = random.Random(20261202)
    t = t_quantile(3)
    covered = rerun = trials = 0
    for _ in range(4000):
        draw = [rng.gauss(1000.0, 15.0) for _ in range(40)]
        needed = stein_needed(draw[:4], 0.02, t)
        assert needed is not None and needed >= 4
        values = draw[: min(needed, 40)]
        interval = stein_interval(values, 4, t)
        assert interval is not None
        covered += interval.low <= 1000.0 <= interval.high
        running = t_interval(values)
        assert running is not None
        rerun += running.low <= 1000.0 <= running.high
        trials += 1
    assert abs(covered / trials - 0.95) < 0.012
    assert rerun / trials < covered / trials


def test_stein_needs_more_values_the_wider_the_first_spread() -> None:
    t = t_quantile(3)
    steady = stein_needed([954.0, 955.0, 953.0, 954.5], 0.02, t)
    noisy = stein_needed([9000.0, 9500.0, 8200.0, 9400.0], 0.02, t)
    assert steady == 4 and noisy is not None
    spread = statistics.stdev([9000.0, 9500.0, 8200.0, 9400.0])
    assert noisy == math.ceil((t * spread / (0.02 * 9025.0)) ** 2)
    assert stein_needed([0.0, 0.0, 0.0, 0.0], 0.02, t) is None  # no share of a zero mean
