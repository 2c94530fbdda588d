"""Repetitions until the answer is clear: the stop rule and run.json's ``adaptive``.

The answer is clear once a 95 % confidence interval lies within ``until.ci_halfwidth`` of the
median. The interval is Student's t in Stein's two-stage form (``measure.confidence``): the
first repetitions fix the spread s0, and after each later one mean ± t·s0/√n is checked. The
spread is not re-estimated on the way: stopping when a re-estimated spread happens to come out
small is what makes a running interval claim more than it holds.

A plan whose ``min`` is 3 or less has two chances to stop, splitting the 5 % risk: at the
third repetition with the 99 % interval of those three (t at 2 degrees of freedom: 9.92), then
from the fourth on with the first four's spread at 96 % (t at 3: 3.48). Three values from a
link that sits at its cap most of the time can all lie above its median (one time in eight);
only a spread small against the target survives the 99 % look. A ``min`` of 4 or more is one
stage at 95 %, its spread from the first ``min``. A test that reaches ``max`` unclear states
the distribution-free order-statistic interval instead (from 6 repetitions on), which assumes
nothing about how the rates scatter; below 6, the t interval stretched to the values' range.
That interval decides at ``max``: clear when it lies within the target (a first stage that
scattered keeps Stein's interval wide however steady the later repetitions are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.input.plan import Adaptive
from nasplan.measure import kinds
from nasplan.measure.confidence import (
    CONFIDENCE,
    Interval,
    order_statistic_interval,
    stein_interval,
    stein_needed,
    t_quantile,
    with_range,
)
from nasplan.measure.series import Series

EARLY_LOOK = 3  # the repetition of the first chance to stop (a plan's min of 3 or less)
EARLY_RISK = 0.01  # of the 5 %: its interval is the 99 % one
FIRST_STAGE = 4  # the repetitions whose spread sets the width after the early look
METHOD = (
    "95 % interval: Student's t, two-stage (Stein): min <= 3: the third repetition's 99 % "
    "interval, then from the fourth the first four's spread at 96 %; min >= 4: the first min's "
    "spread at 95 %; not clear by max: order statistics (6 repetitions or more), below 6 the t "
    "interval stretched to the values' range, clear when within the target"
)


@dataclass(frozen=True)
class Decision:
    """Where one series stands: its ok values ``n``, the interval stated now (None: too few),
    whether it lies within the rule's share of the median, and the repetitions the first
    stage's spread asks for (``needed``; None before the first stage)."""

    n: int
    interval: Interval | None
    reached: bool
    needed: int | None


@dataclass(frozen=True)
class StopRule:
    """A plan's ``repetitions: {min, max, until}`` with its t quantiles: ``early_t`` for the
    look at the third repetition (None: no such look), ``t`` for the spread of the first
    ``first`` repetitions."""

    adaptive: Adaptive
    first: int
    t: float
    early_t: float | None

    @classmethod
    def of(cls, adaptive: Adaptive) -> StopRule:
        if adaptive.min_n > EARLY_LOOK:
            first = adaptive.min_n
            return cls(adaptive, first, t_quantile(first - 1, CONFIDENCE), None)
        main = CONFIDENCE + EARLY_RISK  # the risk left after the early look's
        early_t = t_quantile(EARLY_LOOK - 1, 1 - EARLY_RISK)
        return cls(adaptive, FIRST_STAGE, t_quantile(FIRST_STAGE - 1, main), early_t)

    def decide(self, values: Sequence[float]) -> Decision:
        """The rule on one series of ok values, in the order they ran."""
        n = len(values)
        target = self.adaptive.ci_halfwidth
        if self.early_t is not None and n == EARLY_LOOK:
            interval = stein_interval(values, EARLY_LOOK, self.early_t)
            needed = None
        else:
            interval = stein_interval(values, self.first, self.t)
            needed = stein_needed(values[: self.first], target, self.t)
        if interval is None:
            return Decision(n, None, False, None)
        width = interval.relative_halfwidth
        reached = width is not None and width <= target
        if not reached and n >= self.adaptive.max_n:
            interval = order_statistic_interval(values) or with_range(interval, values)
            # clear at max when the interval stated is within the target (Stein's stays as wide
            # as its first stage's spread: the median's own interval of all n may not)
            width = interval.relative_halfwidth
            reached = width is not None and width <= target
        return Decision(n, interval, reached, needed)


def state(record: Mapping[str, Any], adaptive: Adaptive) -> dict[str, Any]:
    """run.json's ``adaptive`` of a test: its rule, and whether the answer is clear now.

    Every direction of the test counts (a transfer's writes and reads): each must be clear,
    the widest interval is the one stated, ``n`` is the fewest ok repetitions of a direction.
    """
    rule = StopRule.of(adaptive)
    every = kinds.readout(record).series(record)
    decided = [(series, rule.decide(series.values)) for series in every]
    widest = _widest(decided)
    interval = None if widest is None else widest[1].interval
    width = None if interval is None else interval.relative_halfwidth
    needed = [d.needed for _, d in decided if d.needed is not None]
    return {
        "min": adaptive.min_n,
        "max": adaptive.max_n,
        "until": {"ci_halfwidth": adaptive.ci_halfwidth},
        "method": METHOD,
        "reached": bool(decided) and all(d.reached for _, d in decided),
        "statistic": None if interval is None else interval.statistic,
        "interval": None if widest is None else _interval(widest[0], interval),
        "ci_halfwidth": None if width is None else round(width, 4),
        "needed": max(needed) if needed and len(needed) == len(decided) else None,
        "n": min((d.n for _, d in decided), default=0),
    }


def _interval(series: Series, interval: Interval | None) -> dict[str, Any] | None:
    """run.json's ``adaptive.interval``: its ends in the series' metric, and its direction."""
    if interval is None:
        return None
    return {
        "low": interval.low,
        "high": interval.high,
        "metric": series.metric,
        "direction": series.direction,
    }


def _widest(decided: Sequence[tuple[Series, Decision]]) -> tuple[Series, Decision] | None:
    """The series whose interval reaches farthest (one without an interval before all)."""

    def reach(item: tuple[Series, Decision]) -> float:
        interval = item[1].interval
        width = None if interval is None else interval.relative_halfwidth
        return math.inf if width is None else width

    return max(decided, key=reach, default=None)
