"""Repetitions until the answer is clear: the median's confidence interval and the stop rule.

The interval is distribution-free: for n sorted values, [x(k), x(n+1-k)] holds the true median
with probability 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), whatever the distribution of the
rates (no normality, no bootstrap resampling, nothing random). The largest k whose coverage is
at least 95 % is taken. With fewer than 6 values no such interval exists (the widest one,
[min, max] of 5, covers 93.75 %): a test never stops before its 6th repetition.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from fractions import Fraction
from math import comb
from typing import Any

from nasplan.input.plan import Adaptive
from nasplan.measure import kinds

CONFIDENCE = Fraction(95, 100)
METHOD = "order-statistic interval of the median, 95 %"


def median_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % distribution-free confidence interval of the median; None under 6 values."""
    n = len(values)
    tail = (1 - CONFIDENCE) / 2
    below, k = Fraction(0), 0
    # P(B <= k) for growing k, while it stays within the tail: then [x(k+1), x(n-k)] covers
    while k < n // 2:
        below += Fraction(comb(n, k), 2**n)
        if below > tail:
            break
        k += 1
    if k == 0:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k]


def relative_halfwidth(values: Sequence[float]) -> float | None:
    """How far the interval reaches from the median, as a fraction of it (the farther end);
    None when there is no interval or the median is 0."""
    interval = median_interval(values)
    if interval is None:
        return None
    median = statistics.median(values)
    if not median:
        return None
    low, high = interval
    return max(median - low, high - median) / abs(median)


def state(record: Mapping[str, Any], adaptive: Adaptive) -> dict[str, Any]:
    """run.json's ``adaptive`` of a test: its rule, and whether the answer is clear now.

    Every direction of the test counts (a transfer's writes and reads): the widest interval
    decides, ``n`` is the fewest ok repetitions of a direction.
    """
    widths: list[float | None] = []
    counts: list[int] = []
    for series in kinds.readout(record).series(record):
        counts.append(len(series.values))
        widths.append(relative_halfwidth(series.values))
    n = min(counts, default=0)
    known = [w for w in widths if w is not None]
    halfwidth = max(known) if known and len(known) == len(widths) else None
    reached = n >= adaptive.min_n and halfwidth is not None and halfwidth <= adaptive.ci_halfwidth
    return {
        "min": adaptive.min_n,
        "max": adaptive.max_n,
        "until": {"ci_halfwidth": adaptive.ci_halfwidth},
        "method": METHOD,
        "reached": reached,
        "ci_halfwidth": None if halfwidth is None else round(halfwidth, 4),
        "n": n,
    }
