"""run.json's ``adaptive`` from a test's record (``measure.adaptive.state``): every direction must
be clear and the widest interval is stated with its direction; a ``max`` under 6 states the t
interval stretched to every value; a ``min`` of 4 or more is one stage at 95 %."""

from __future__ import annotations

from typing import Any

from nasplan.analysis import summarize
from nasplan.input.plan import Adaptive
from nasplan.measure import adaptive
from nasplan.measure.confidence import t_quantile

# bytes/s of an SMB copy's repetitions: steady writes, reads that swing with the NAS's cache
WRITES = [112.1e6, 112.3e6, 111.9e6, 112.2e6]
READS = [96.0e6, 118.5e6, 71.2e6, 104.9e6]


def _transfer(writes: list[float], reads: list[float]) -> dict[str, Any]:
    reps = [
        {"index": i, "direction": direction, "status": "ok", "bytes_per_second": rate}
        for direction, rates in (("write", writes), ("read", reads))
        for i, rate in enumerate(rates, 1)
    ]
    return {
        "id": "smb",
        "kind": "transfer",
        "params": {"direction": "both"},
        "repetitions": reps,
        "directions": {
            "write": summarize(writes, "bytes_per_second"),
            "read": summarize(reads, "bytes_per_second"),
        },
    }


def _iperf3(rates: list[float]) -> dict[str, Any]:
    reps = [{"index": i, "status": "ok", "bits_per_second": r} for i, r in enumerate(rates, 1)]
    return {"id": "lan", "kind": "iperf3", "params": {}, "repetitions": reps,
            "summary": summarize(rates, "bits_per_second")}  # fmt: skip


def test_a_transfer_is_clear_only_when_both_directions_are() -> None:
    rule = Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02)

    steady_writes = adaptive.state(_transfer(WRITES, WRITES), rule)
    noisy_reads = adaptive.state(_transfer(WRITES, READS), rule)

    assert steady_writes["reached"] and steady_writes["statistic"] == "t"
    assert not noisy_reads["reached"] and noisy_reads["n"] == 4
    interval = noisy_reads["interval"]
    assert (interval["direction"], interval["metric"]) == ("read", "bytes_per_second")
    assert interval["low"] < min(READS[:2]) and noisy_reads["ci_halfwidth"] > 0.02
    assert noisy_reads["needed"] > 10  # the reads' first four ask for far more than max


def test_a_test_not_clear_by_a_max_under_6_states_t_stretched_to_every_value() -> None:
    rates = [9.41e9, 8.02e9, 9.38e9, 9.12e9, 7.35e9]
    rule = Adaptive(min_n=3, max_n=5, ci_halfwidth=0.02)

    before_max = adaptive.state(_iperf3(rates[:4]), rule)
    at_max = adaptive.state(_iperf3(rates), rule)

    assert before_max["statistic"] == "t" and not before_max["reached"]
    assert at_max["statistic"] == "t and range" and not at_max["reached"]
    assert at_max["interval"]["low"] <= min(rates) and at_max["interval"]["high"] >= max(rates)


def test_a_min_of_4_is_one_stage_at_95_percent() -> None:
    one_stage = adaptive.StopRule.of(Adaptive(min_n=4, max_n=10, ci_halfwidth=0.02))
    two_looks = adaptive.StopRule.of(Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02))

    assert (one_stage.first, one_stage.early_t) == (4, None)
    assert one_stage.t == t_quantile(3, 0.95)
    assert one_stage.decide([954e6, 955e6, 953e6]).interval is None  # not before min
    assert (two_looks.first, two_looks.t) == (4, t_quantile(3, 0.96))
    assert two_looks.early_t == t_quantile(2, 0.99)
    assert two_looks.decide([954e6, 955e6, 953e6]).reached  # its 99 % interval: ±0.6 %


def test_at_max_the_median_s_own_interval_decides() -> None:
    """One slow repetition among the first four keeps Stein's interval wide to the end (its
    spread is fixed by the first stage); at max the median's distribution-free interval of all
    ten is what the test states, and it is clear when that lies within the target."""
    rule = Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02)
    steady_after = [9.41e9, 8.60e9, 9.40e9, 9.39e9, 9.40e9, 9.41e9, 9.39e9, 9.40e9, 9.41e9, 9.40e9]
    scattered = [9.41e9, 8.60e9, 9.40e9, 8.70e9, 9.40e9, 8.65e9, 9.39e9, 8.80e9, 9.41e9, 8.75e9]

    before_max = adaptive.state(_iperf3(steady_after[:9]), rule)
    steady = adaptive.state(_iperf3(steady_after), rule)
    noisy = adaptive.state(_iperf3(scattered), rule)

    assert before_max["statistic"] == "t" and not before_max["reached"]
    assert steady["statistic"] == "order statistics" and steady["reached"]
    assert steady["ci_halfwidth"] <= 0.02 and steady["interval"]["low"] > 8.60e9
    assert noisy["statistic"] == "order statistics" and not noisy["reached"]
    assert noisy["ci_halfwidth"] > 0.02
