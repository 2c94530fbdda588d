"""Verdicts between two sets of repetitions: better / worse / within noise, and the rule used."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import comb

# Two-sided significance level of the Mann–Whitney U test.
ALPHA = 0.05
# Smallest relative change of the median worth calling better or worse: a significant 1 %
# difference between two cables is real but not what anyone upgrades for.
MIN_EFFECT = 0.03
# Repetitions per side from which the rank test is used; below it the exact test cannot reach
# p < 0.05 with a margin (3 vs 3 gives at best p = 0.1): no verdict is given, however far apart
# the values look (non-overlapping ranges of 3 vs 3 happen by chance one time in ten).
MANN_WHITNEY_MIN_N = 5
# Repetitions in all up to which the rank test's p is counted exactly (25 vs 25 in a tenth of a
# second; 100 vs 100 would take minutes); above, its normal approximation.
EXACT_MAX_N = 50
# Power the "how many repetitions would tell" estimate aims for (80 %, the usual choice).
_Z_ALPHA, _Z_POWER = 1.96, 0.8416
# Asymptotic relative efficiency of Mann–Whitney against the t test on normal data (3/π).
_MW_EFFICIENCY = 0.955
# Above this the estimate says "more than" rather than a number nobody would run.
MAX_SUGGESTED_N = 50

BETTER, WORSE, NOISE, UNKNOWN = "better", "worse", "within noise", "no verdict"
TOO_FEW = "too few repetitions to tell"
# A change of at least MIN_EFFECT the test cannot tell from chance: not "within noise", which
# means a change under MIN_EFFECT whatever the test says.
NOT_SIGNIFICANT = "not significant"
UNDECIDED = (NOISE, UNKNOWN, TOO_FEW, NOT_SIGNIFICANT)


@dataclass(frozen=True)
class Verdict:
    """How ``after`` compares with ``before``: verdict word, the rule's name and its evidence."""

    verdict: str  # better | worse | within noise | not significant | too few ... | no verdict
    rule: str  # "mann-whitney" | "welch-log" | "too-few" | "none"
    p_value: float | None
    change: float | None  # relative change of the median, after / before - 1
    explanation: str  # for the report, e.g. "Mann–Whitney U, p = 0.008 (5 vs 5)"
    needed_per_side: int | None = None  # too-few: repetitions per side that would tell


def _ranks_doubled(pooled: Sequence[float]) -> list[int]:
    """Twice the (mid)rank of each value, so tied ranks stay integers: [5, 1, 5] -> [5, 2, 5]."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0] * len(pooled)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and pooled[order[end + 1]] == pooled[order[start]]:
            end += 1
        # positions start..end (0-based) share ranks start+1..end+1; their mean, doubled:
        doubled = start + end + 2
        for position in range(start, end + 1):
            ranks[order[position]] = doubled
        start = end + 1
    return ranks


def mann_whitney_u(first: Sequence[float], second: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann–Whitney U test: ``(U of first, p)``; ties by midranks. Agrees with
    ``scipy.stats.mannwhitneyu`` (tests/unit/test_significance_reference.py).

    Up to EXACT_MAX_N values in all, p is exact: twice the smaller tail of the permutation
    distribution of the rank sum (every split of the pooled values equally likely), capped at 1:
    scipy's permutation method. Above it, the normal approximation with the tie and continuity
    corrections: scipy's asymptotic method (the exact count would take seconds there).
    """
    n, m = len(first), len(second)
    if n == 0 or m == 0:
        raise ValueError("both samples need at least one value")
    pooled = [*first, *second]
    ranks = _ranks_doubled(pooled)
    u_first = sum(ranks[:n]) / 2 - n * (n + 1) / 2
    if n + m > EXACT_MAX_N:
        return u_first, _normal_p(u_first, n, m, pooled)
    # the rank sum of the smaller side, whose subsets are fewer to count
    side, taken = (ranks[:n], n) if n <= m else (ranks[n:], m)
    observed = sum(side)
    # ways[k][s]: number of k-subsets of the pooled ranks whose doubled rank sum is s
    total_sum = sum(ranks)
    ways = [[0] * (total_sum + 1) for _ in range(taken + 1)]
    ways[0][0] = 1
    for rank in ranks:
        for k in range(taken, 0, -1):
            row, previous = ways[k], ways[k - 1]
            for s in range(total_sum, rank - 1, -1):
                if previous[s - rank]:
                    row[s] += previous[s - rank]
    # With ties the distribution is not symmetric about its mean: both tails are counted, the
    # smaller doubled (as scipy does), not "as far from the mean on either side".
    low = sum(ways[taken][: observed + 1])
    high = sum(ways[taken][observed:])
    p_value = Fraction(2 * min(low, high), comb(n + m, taken))
    return u_first, float(min(p_value, Fraction(1)))


def _normal_p(u_first: float, n: int, m: int, pooled: Sequence[float]) -> float:
    """Two-sided p of U by the normal approximation, corrected for ties and for continuity."""
    total = n + m
    tie_term = sum(t**3 - t for t in Counter(pooled).values())
    sigma = math.sqrt(n * m / 12 * ((total + 1) - tie_term / (total * (total - 1))))
    if sigma == 0:  # every value the same: nothing tells the samples apart
        return 1.0
    z = (max(u_first, n * m - u_first) - n * m / 2 - 0.5) / sigma
    return min(1.0, math.erfc(z / math.sqrt(2)))


def _direction(change: float, higher_is_better: bool) -> str:
    return BETTER if (change > 0) == higher_is_better else WORSE


def verdict(
    before: Sequence[float],
    after: Sequence[float],
    *,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
) -> Verdict:
    """Compare repetition values: a change of the medians under ``min_effect`` (3 %) is within
    noise; else Mann–Whitney with >= 5 per side, Welch's t-test on the logarithms with 2 to 4
    (the rank test cannot reach p < 0.05 there), and "too few repetitions to tell" with one,
    with the number per side that would (``needed_per_side``). A change the test cannot tell
    from chance is "not significant (p = ..., n = ...)".
    """
    if not before or not after:
        return Verdict(UNKNOWN, "none", None, None, "no successful repetitions on one side")
    median_before, median_after = statistics.median(before), statistics.median(after)
    change = median_after / median_before - 1 if median_before else None
    sizes = f"{len(before)} vs {len(after)} repetitions"
    if change is not None and abs(change) < min_effect:
        text = f"{sizes}; change below {min_effect * 100:g} % ({change * 100:+.1f} %)"
        return Verdict(NOISE, "min-effect", None, change, text)
    if change is None:
        return Verdict(UNKNOWN, "none", None, None, f"a median of 0 before; {sizes}")
    if len(before) >= MANN_WHITNEY_MIN_N and len(after) >= MANN_WHITNEY_MIN_N:
        _, p_value = mann_whitney_u(before, after)
        text = f"Mann–Whitney U p = {p_value:.3g}, {sizes}"
        return _decided(change, p_value, alpha, "mann-whitney", text, higher_is_better)
    welch = welch_log_p(before, after)
    if welch is not None:
        text = f"Welch's t-test on log values p = {welch:.3g}, {sizes} (small samples)"
        return _decided(change, welch, alpha, "welch-log", text, higher_is_better)
    needed = needed_repetitions(before, after, min_effect=min_effect)
    size = f"a change of {max(abs(change or 0.0), min_effect) * 100:.0f} %"
    if needed <= MAX_SUGGESTED_N:
        text = f"{sizes}; about {needed} per side would tell {size}"
    else:
        text = f"{sizes}; more than {MAX_SUGGESTED_N} per side would be needed to tell {size}"
    return Verdict(TOO_FEW, "too-few", None, change, text, needed)


def _decided(
    change: float, p_value: float, alpha: float, rule: str, text: str, higher_is_better: bool
) -> Verdict:
    if p_value >= alpha:
        return Verdict(NOT_SIGNIFICANT, rule, p_value, change, f"{text}; p ≥ {alpha:g}")
    return Verdict(_direction(change, higher_is_better), rule, p_value, change, text)


def welch_log_p(before: Sequence[float], after: Sequence[float]) -> float | None:
    """Two-sided p of Welch's t-test on the logarithms of the values (a rate's changes are
    ratios), fit for 2 to 4 repetitions a side; None when a side has one value, a value is not
    positive, or neither side varies (then there is nothing to test)."""
    if len(before) < 2 or len(after) < 2 or min(*before, *after) <= 0:
        return None
    a, b = [math.log(v) for v in before], [math.log(v) for v in after]
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return None
    t = abs(statistics.mean(a) - statistics.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (Lentz's method); the t distribution's two-sided tail is I_{df/(df+t²)}(df/2, 1/2)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return front * result / a


def needed_repetitions(
    before: Sequence[float], after: Sequence[float], *, min_effect: float = MIN_EFFECT
) -> int:
    """Repetitions per side to tell the observed change (at least ``min_effect``) with 80 %
    power at p < 0.05: a normal-theory estimate from the pooled spread, corrected for the rank
    test, never below MANN_WHITNEY_MIN_N. Example: 3 vs 3 with 10 % spread, 5 % change -> 13.
    """
    median_before = statistics.median(before)
    median_after = statistics.median(after)
    if not median_before:
        return MANN_WHITNEY_MIN_N
    effect = max(abs(median_after - median_before), min_effect * abs(median_before))
    spreads = [statistics.stdev(v) for v in (before, after) if len(v) > 1]
    sigma = math.sqrt(sum(s * s for s in spreads) / len(spreads)) if spreads else 0.0
    estimate = 2 * ((_Z_ALPHA + _Z_POWER) * sigma / effect) ** 2 / _MW_EFFICIENCY
    return max(MANN_WHITNEY_MIN_N, math.ceil(estimate))


def higher_is_better(metric: str) -> bool:
    """Rates are better high; times (``duration_s``, ``latency_ms``) better low."""
    lowered = metric.lower()
    return not (lowered.endswith(("_s", "_ms", "_us", "seconds")) or "latency" in lowered)
