"""The stop rule (``measure.adaptive``) on series recorded in the lab (tests/fixtures/series/:
per-repetition iperf3 rates of the 8-cell matrix of bench/adaptive_matrix.py, 30 each) and on
series resampled from them: the stated 95 % interval holds the true median (the median of the
whole recorded series) at least 93 % of the time in every series and 95 % over all; a steady
1G series stops by its fourth repetition, a noisy 10G one goes on.

A resampled series is a random order of a recorded one (drawn without replacement: a real
series never repeats a rate to the bit, and a repeated value would fake a small spread). With
1000 orders a series, a coverage's standard error is about 0.7 %: a rule that held only 90 %
would fail here nearly always, one that holds 95 % nearly never.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence
from pathlib import Path

import pytest

from nasplan.input.plan import Adaptive
from nasplan.measure.adaptive import Decision, StopRule
from nasplan.measure.confidence import stein_interval, t_quantile

SERIES = Path(__file__).resolve().parents[2] / "fixtures" / "series"
RULE = Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02)  # bench/adaptive_matrix.py's
ORDERS = 1000
STEADY = ("link=lan,parallel=1,reverse=false", "link=lan,parallel=2,reverse=false")
NOISY = ("link=cable,parallel=1,reverse=false", "link=cable,parallel=1,reverse=true")


def recorded() -> dict[str, list[float]]:
    """Every recorded series, ``file:cell`` -> bits/s in the order they ran."""
    found = {}
    for path in sorted(SERIES.glob("*.json")):
        for cell, rates in json.loads(path.read_text())["series"].items():
            found[f"{path.stem}:{cell}"] = rates
    assert len(found) >= 16, "the recorded series are missing"
    return found


def stop(rule: StopRule, series: Sequence[float]) -> Decision:
    """The rule as a run applies it: ``min`` repetitions, then one at a time until the answer
    is clear or ``max`` ran."""
    count = rule.adaptive.min_n
    while True:
        decision = rule.decide(series[:count])
        if decision.reached or count >= rule.adaptive.max_n:
            return decision
        count += 1


def covers(decision: Decision, median: float) -> bool:
    interval = decision.interval
    assert interval is not None  # max is 10: every series has an interval at its end
    return interval.low <= median <= interval.high


def orders(series: list[float], seed: str) -> list[list[float]]:
    rng = random.Random(seed)
    return [rng.sample(series, len(series)) for _ in range(ORDERS)]


@pytest.fixture(scope="module")
def stops() -> dict[str, list[Decision]]:
    """Where the rule stopped on each of every series' random orders."""
    rule = StopRule.of(RULE)
    return {
        name: [stop(rule, order) for order in orders(series, name)]
        for name, series in recorded().items()
    }


def test_the_stated_interval_holds_the_recorded_median_as_often_as_it_claims(
    stops: dict[str, list[Decision]],
) -> None:
    series = recorded()
    coverage = {
        name: sum(covers(d, statistics.median(series[name])) for d in decisions) / ORDERS
        for name, decisions in stops.items()
    }
    short = {name: share for name, share in coverage.items() if share < 0.93}
    assert not short, f"95 % claimed, held less often: {short}"
    assert statistics.fmean(coverage.values()) >= 0.95


def test_the_check_has_teeth_a_running_t_interval_fails_it() -> None:
    """The usual rule of thumb, the 95 % t interval re-estimated after every repetition from the
    third on, stopping once it is within ±2 %: in some series it holds the median less than 93 %
    of the time (a spread that came out small by chance, stopped on)."""
    quantiles = {n: t_quantile(n - 1) for n in range(3, RULE.max_n + 1)}

    def running(values: Sequence[float]) -> Decision:
        interval = stein_interval(values, len(values), quantiles[len(values)])
        assert interval is not None and interval.relative_halfwidth is not None
        return Decision(len(values), interval, interval.relative_halfwidth <= 0.02, None)

    short = []
    for name, series in recorded().items():
        median = statistics.median(series)
        held = 0
        for order in orders(series, name):
            count = 3
            while not (decision := running(order[:count])).reached and count < RULE.max_n:
                count += 1
            held += covers(decision, median)
        short += [name] if held / ORDERS < 0.93 else []
    assert short


def test_in_the_order_recorded_the_interval_holds_the_median_too() -> None:
    """Every stretch of a recorded series, as it ran (drift and runs of alike values kept)."""
    rule = StopRule.of(RULE)
    held = stretches = 0
    for rates in recorded().values():
        median = statistics.median(rates)
        for start in range(len(rates) - RULE.max_n + 1):
            held += covers(stop(rule, rates[start:]), median)
            stretches += 1
    assert held / stretches >= 0.95


def test_a_steady_1g_series_stops_by_its_fourth_repetition(
    stops: dict[str, list[Decision]],
) -> None:
    rule = StopRule.of(RULE)
    steady = {name: d for name, d in stops.items() if any(f"[{c}]" in name for c in STEADY)}
    assert steady
    for name, decisions in steady.items():
        by_fourth = sum(d.reached and d.n <= 4 for d in decisions) / ORDERS
        assert by_fourth >= 0.95, (name, by_fourth)  # a -1.7 % run among the first four: 5
        first = stop(rule, recorded()[name])  # as it ran
        assert first.reached and first.n <= 4, name
        assert first.interval is not None and first.interval.statistic == "t"


def test_a_noisy_10g_series_does_not_stop_early(stops: dict[str, list[Decision]]) -> None:
    noisy = {name: d for name, d in stops.items() if any(f"[{c}]" in name for c in NOISY)}
    assert noisy
    for name, decisions in noisy.items():
        early = sum(d.reached and d.n <= 4 for d in decisions) / ORDERS
        to_max = sum(d.n == RULE.max_n for d in decisions) / ORDERS
        assert early <= 0.15 and to_max >= 0.6, (name, early, to_max)
        unclear = [d for d in decisions if not d.reached]
        assert unclear and all(d.interval and d.interval.statistic == "order statistics"
                               for d in unclear)  # fmt: skip
