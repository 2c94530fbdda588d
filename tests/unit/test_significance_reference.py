"""nasplan's Mann–Whitney and Welch code against scipy.stats, the reference, on many random
cases: small and large samples, ties, equal samples, and the two-sided alternative nasplan uses
(a verdict's direction is the medians'; its p value is two-sided).

Mann–Whitney: exact permutation p up to EXACT_MAX_N values in all (scipy's permutation method,
enumerated), scipy's exact method without ties, scipy's asymptotic method above EXACT_MAX_N.
Welch: ``ttest_ind(log before, log after, equal_var=False)``.
"""

from __future__ import annotations

import math
import random
import time
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from nasplan.significance import EXACT_MAX_N, mann_whitney_u, verdict, welch_log_p

Sample = Callable[[random.Random, int], list[float]]


def rates(rng: random.Random, n: int) -> list[float]:
    """Throughputs as repetitions give them: around 940 Mbit/s, a few % apart, no ties."""
    return [rng.gauss(940e6, 20e6) for _ in range(n)]


def tied(rng: random.Random, n: int) -> list[float]:
    """Values on a coarse grid (a tool that rounds), many ties."""
    return [float(rng.randint(1, 6)) * 1e8 for _ in range(n)]


def pair(rng: random.Random, sample: Sample, n: int, m: int) -> tuple[list[float], list[float]]:
    """Two samples, the second shifted by a random amount (none, some, a lot)."""
    shift = rng.choice([0.0, 0.02, 0.05, 0.2])
    return sample(rng, n), [v * (1 + shift) for v in sample(rng, m)]


def scipy_permutation_p(first: list[float], second: list[float]) -> tuple[float, float]:
    """scipy's permutation Mann–Whitney, every split enumerated (``n_resamples=inf``)."""
    found = stats.mannwhitneyu(
        first, second, alternative="two-sided", method=stats.PermutationMethod(n_resamples=np.inf)
    )
    return float(found.statistic), float(found.pvalue)


@pytest.mark.parametrize("sample", [rates, tied], ids=["no-ties", "ties"])
def test_small_samples_agree_with_the_enumerated_permutation_test(sample: Sample) -> None:
    rng = random.Random(34)
    for _ in range(80):
        n, m = rng.randint(2, 8), rng.randint(2, 8)
        first, second = pair(rng, sample, n, m)
        u, p_value = mann_whitney_u(first, second)
        reference_u, reference_p = scipy_permutation_p(first, second)
        assert u == reference_u
        assert p_value == pytest.approx(reference_p, rel=1e-9, abs=1e-12), (first, second)


def test_up_to_the_exact_limit_without_ties_agree_with_scipys_exact_method() -> None:
    rng = random.Random(35)
    for _ in range(25):
        n = rng.randint(5, EXACT_MAX_N // 2)
        m = rng.randint(5, EXACT_MAX_N - n)
        first, second = pair(rng, rates, n, m)
        u, p_value = mann_whitney_u(first, second)
        reference = stats.mannwhitneyu(first, second, alternative="two-sided", method="exact")
        assert u == reference.statistic
        assert p_value == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-15), (n, m)


def test_up_to_the_exact_limit_with_ties_agree_with_sampled_permutations() -> None:
    # Too many splits to list (up to C(50, 25)): scipy samples 20,000 of them; its p is then
    # within 0.015 of the exact one (more than four standard errors).
    rng = random.Random(36)
    generator = np.random.default_rng(36)
    for _ in range(5):
        n = rng.randint(12, EXACT_MAX_N // 2)
        first, second = pair(rng, tied, n, EXACT_MAX_N - n)
        _, p_value = mann_whitney_u(first, second)
        sampled = stats.mannwhitneyu(
            first,
            second,
            alternative="two-sided",
            method=stats.PermutationMethod(n_resamples=20_000, rng=generator),
        )
        assert abs(p_value - sampled.pvalue) < 0.015, (first, second)


@pytest.mark.parametrize("sample", [rates, tied], ids=["no-ties", "ties"])
def test_large_samples_agree_with_scipys_normal_approximation(sample: Sample) -> None:
    rng = random.Random(37)
    for _ in range(60):
        n, m = rng.randint(10, 100), rng.randint(EXACT_MAX_N - 9, 100)
        first, second = pair(rng, sample, n, m)
        u, p_value = mann_whitney_u(first, second)
        reference = stats.mannwhitneyu(first, second, alternative="two-sided", method="asymptotic")
        assert u == reference.statistic
        assert p_value == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-15), (n, m)


@pytest.mark.parametrize("per_side", [EXACT_MAX_N // 2, 100])
def test_as_many_repetitions_as_a_plan_may_ask_are_compared_at_once(per_side: int) -> None:
    rng = random.Random(38)
    first, second = rates(rng, per_side), rates(rng, per_side)
    started = time.monotonic()
    mann_whitney_u(first, second)
    assert time.monotonic() - started < 1


def test_equal_samples_are_no_difference() -> None:
    for values in ([5.0] * 7, [1.0, 2.0, 2.0, 3.0, 5.0, 8.0], [float(v) for v in range(40)]):
        assert mann_whitney_u(values, values)[1] == 1.0
        assert stats.mannwhitneyu(values, values, method="asymptotic").pvalue == 1.0
    assert scipy_permutation_p([5.0] * 7, [5.0] * 7)[1] == 1.0
    many = [1e9] * 60
    assert mann_whitney_u(many, many)[1] == 1.0 == stats.mannwhitneyu(many, many).pvalue


def test_the_two_sided_p_is_twice_the_one_sided_p_in_the_direction_of_the_change() -> None:
    """nasplan asks "any difference?" and reads the direction off the medians: its p is the
    one-sided p of the side the change is on, doubled (scipy's 'less' / 'greater')."""
    rng = random.Random(39)
    for _ in range(60):
        first, second = pair(rng, rates, rng.randint(5, 9), rng.randint(5, 9))
        _, p_value = mann_whitney_u(first, second)
        less = stats.mannwhitneyu(first, second, alternative="less", method="exact").pvalue
        greater = stats.mannwhitneyu(first, second, alternative="greater", method="exact").pvalue
        assert p_value == pytest.approx(min(1.0, 2 * min(less, greater)), rel=1e-9)
        result = verdict(first, second, min_effect=0.0)
        if result.verdict == "better":  # after higher: scipy's "first is less"
            assert less < greater


def welch_reference(first: list[float], second: list[float]) -> float:
    logs = [[math.log(v) for v in side] for side in (first, second)]
    with warnings.catch_warnings():
        # scipy warns that a side whose values are all equal has no variance to speak of:
        # such a side is one of the cases asked about here
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(logs[0], logs[1], equal_var=False).pvalue)


def test_welch_on_log_values_agrees_with_scipy() -> None:
    rng = random.Random(40)
    for _ in range(800):
        n, m = rng.randint(2, 30), rng.randint(2, 30)
        spread = rng.choice([0.001, 0.02, 0.2, 1.0])
        ratio = math.exp(rng.choice([0.0, 0.01, 0.1, 1.0]) * rng.choice([-1, 1]))
        first = [rng.lognormvariate(0, spread) * 940e6 for _ in range(n)]
        second = [rng.lognormvariate(0, spread) * 940e6 * ratio for _ in range(m)]
        if rng.random() < 0.1:
            second = [second[0]] * m  # one side does not vary
        p_value = welch_log_p(first, second)
        assert p_value is not None
        assert p_value == pytest.approx(welch_reference(first, second), rel=1e-9, abs=1e-14)


def test_welch_with_nothing_varying_is_no_test_as_scipy_says_nan() -> None:
    same = [940e6, 940e6, 940e6]
    assert welch_log_p(same, same) is None
    assert math.isnan(welch_reference(same, same))
    assert welch_log_p([1e9], [1e9, 2e9]) is None  # one value a side: no spread to estimate
    assert welch_log_p([0.0, 1e9], [1e9, 2e9]) is None  # a log needs positive values
