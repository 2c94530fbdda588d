"""95 % confidence intervals of a series' centre, as pure functions: Student's t (fixed n, and
Stein's two-stage form, whose width the first repetitions fix) and the distribution-free one
from order statistics.

Stein's two-stage interval: the first ``n0`` values give the standard deviation s0; after any
number n >= n0 of values chosen from s0 alone, mean ± t(n0-1)·s0/√n holds the centre with
exactly 95 % probability for normally scattered values, however n was chosen from s0 (the mean
is independent of s0). Stopping as soon as an interval narrows is what makes a running
interval too confident; with s0 fixed, narrowing depends on n alone.

Order statistics: of n sorted values, [x(k), x(n+1-k)] holds the true median with probability
1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), whatever the distribution; none reaches 95 % under 6
values ([min, max] of 5 covers 93.75 %).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

CONFIDENCE = 0.95
T = "t"
ORDER = "order statistics"
T_AND_RANGE = "t and range"


@dataclass(frozen=True)
class Interval:
    """A 95 % confidence interval: its ends, the statistic that gave it (``T``, ``ORDER`` or
    ``T_AND_RANGE``), and the median of the values it came from."""

    low: float
    high: float
    statistic: str
    median: float

    @property
    def relative_halfwidth(self) -> float | None:
        """How far the interval reaches from the median, as a fraction of it (the farther end);
        None when the median is 0."""
        if not self.median:
            return None
        return max(self.median - self.low, self.high - self.median) / abs(self.median)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """Student's t with ``df`` degrees of freedom: the t with P(|T| <= t) = ``confidence``.

    ``t_quantile(2)`` -> 4.3027 (the 97.5 % quantile).
    """
    if df < 1:
        raise ValueError(f"degrees of freedom: {df}, at least 1")
    low, high = 0.0, 1.0
    while _t_central(high, df) < confidence:
        high *= 2
    for _ in range(100):  # bisection to the float's precision
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if _t_central(middle, df) < confidence else (low, middle)
    return high


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` (whole) degrees of freedom, in closed form
    (Abramowitz and Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df, 2):  # 1 + 1/2 cos² + (1·3)/(2·4) cos⁴ + ...
            term *= cos2 * (k - 1) / k
            total += term
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = math.cos(theta)
    for k in range(3, df, 2):  # cos + 2/3 cos³ + (2·4)/(3·5) cos⁵ + ...
        term *= cos2 * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + sin * total)


def stdev(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1), in floats: ``statistics.stdev`` works in exact
    fractions, for digits far below a rate's noise, and slowly."""
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """Student's t interval of the mean of ``values``, n fixed in advance; None under 2."""
    if len(values) < 2:
        return None
    return stein_interval(values, len(values), t_quantile(len(values) - 1, confidence))


def stein_interval(values: Sequence[float], first: int, t: float) -> Interval | None:
    """Stein's two-stage interval: the mean of all ``values`` ± t·s0/√n, s0 the standard
    deviation of the first ``first`` (``t``: Student's t at first - 1 degrees of freedom);
    None while fewer than ``first`` (or 2)."""
    if first < 2 or len(values) < first:
        return None
    halfwidth = t * stdev(values[:first]) / math.sqrt(len(values))
    mean = statistics.fmean(values)
    return Interval(mean - halfwidth, mean + halfwidth, T, statistics.median(values))


def stein_needed(first_values: Sequence[float], halfwidth: float, t: float) -> int | None:
    """The values Stein's interval needs to lie within ± ``halfwidth`` (a fraction) of the
    first values' mean: (t·s0 / (halfwidth·mean0))², at least as many as there are; None when
    the mean is 0 or there are fewer than 2."""
    first = len(first_values)
    if first < 2 or halfwidth <= 0:
        return None
    mean = statistics.fmean(first_values)
    if not mean:
        return None
    wanted = (t * stdev(first_values) / (halfwidth * abs(mean))) ** 2
    return max(first, math.ceil(wanted))


def order_statistic_interval(values: Sequence[float]) -> Interval | None:
    """The distribution-free 95 % interval of the median: [x(k), x(n+1-k)] with the largest k
    whose coverage is at least 95 %; None under 6 values."""
    n = len(values)
    tail = (1 - Fraction(CONFIDENCE).limit_denominator(1000)) / 2
    below, k = Fraction(0), 0
    # P(B <= k) for growing k, while it stays within the tail: then [x(k+1), x(n-k)] covers
    while k < n // 2:
        below += Fraction(math.comb(n, k), 2**n)
        if below > tail:
            break
        k += 1
    if k == 0:
        return None
    ordered = sorted(values)
    return Interval(ordered[k - 1], ordered[n - k], ORDER, statistics.median(values))


def with_range(interval: Interval, values: Sequence[float]) -> Interval:
    """``interval`` stretched to hold every value: [min, max] of n values holds the median with
    probability 1 - 2^(1-n) whatever the distribution (93.75 % of 5), where t needs the values
    to scatter normally."""
    low, high = min(interval.low, *values), max(interval.high, *values)
    return Interval(low, high, T_AND_RANGE, interval.median)
