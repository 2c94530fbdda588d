"""Analysis: theoretical TCP rate, repetition statistics, efficiency."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nasplan.analysis import (
    WIDE_SPREAD_RATIO,
    efficiency,
    ok_values,
    summarize,
    theoretical_tcp_bits_per_second,
)

RUN_SCHEMA = Path(__file__).resolve().parents[2] / "nasplan" / "schemas" / "run.schema.json"


def test_theoretical_rate_of_gigabit_ethernet_is_941_mbit() -> None:
    rate = theoretical_tcp_bits_per_second(1_000_000_000, 1500)
    assert rate == pytest.approx(941_482_444.7, abs=1)
    assert round(rate / 1e6, 1) == 941.5


def test_theoretical_rate_of_10g_jumbo_frames() -> None:
    rate = theoretical_tcp_bits_per_second(10_000_000_000, 9000, "ethernet")
    assert round(rate / 1e9, 2) == 9.90


def test_theoretical_rate_of_a_tc_shaped_link_has_no_preamble_or_gap() -> None:
    # 1448 payload bytes per 1514 bytes that tbf counts (frame without FCS, preamble, gap)
    rate = theoretical_tcp_bits_per_second(1_000_000_000, 1500, "tc")
    assert rate == pytest.approx(1e9 * 1448 / 1514)
    assert rate > theoretical_tcp_bits_per_second(1_000_000_000, 1500, "ethernet")


def test_theoretical_rate_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="framing"):
        theoretical_tcp_bits_per_second(1e9, 1500, "wifi")
    with pytest.raises(ValueError, match="MTU 40"):
        theoretical_tcp_bits_per_second(1e9, 40)


def test_summarize_three_repetitions() -> None:
    summary = summarize([940e6, 950e6, 930e6], "bits_per_second")
    assert summary["metric"] == "bits_per_second"
    assert summary["n"] == 3
    assert (summary["min"], summary["median"], summary["max"]) == (930e6, 940e6, 950e6)
    assert summary["mean"] == pytest.approx(940e6)
    assert summary["stddev"] == pytest.approx(10e6)  # sample stddev (n - 1)
    assert summary["spread_ratio"] == pytest.approx(20e6 / 940e6)
    assert summary["wide_spread"] is False
    assert summary["wide_spread_threshold"] == WIDE_SPREAD_RATIO == 0.10


def test_summarize_flags_a_wide_spread() -> None:
    summary = summarize([500e6, 940e6, 945e6], "bits_per_second")
    assert summary["median"] == 940e6
    assert summary["spread_ratio"] == pytest.approx(445 / 940)
    assert summary["wide_spread"] is True


def test_summarize_just_at_the_threshold_is_not_wide() -> None:
    assert summarize([90.0, 100.0], "x")["spread_ratio"] == pytest.approx(10 / 95)
    assert summarize([95.0, 100.0, 105.0], "x")["wide_spread"] is False  # exactly 0.10


def test_summarize_one_value_has_zero_stddev() -> None:
    summary = summarize([941e6], "bits_per_second")
    assert (summary["n"], summary["stddev"], summary["spread_ratio"]) == (1, 0.0, 0.0)
    assert summary["median"] == summary["mean"] == 941e6


def test_summarize_nothing() -> None:
    summary = summarize([], "bits_per_second")
    assert summary["n"] == 0
    for key in ("min", "median", "mean", "max", "stddev", "spread_ratio"):
        assert summary[key] is None
    assert summary["wide_spread"] is False


def test_summarize_zero_median_has_no_spread_ratio() -> None:
    summary = summarize([0.0, 0.0, 5.0], "lost_packets")
    assert summary["spread_ratio"] is None
    assert summary["wide_spread"] is False


@pytest.mark.parametrize("values", [[], [1.0], [1.0, 2.0, 3.0], [0.0, 0.0]])
def test_summary_fits_the_run_json_contract(values: list[float]) -> None:
    schema = json.loads(RUN_SCHEMA.read_text())
    jsonschema.validate(
        summarize(values, "bits_per_second"), {"$ref": "#/$defs/summary", "$defs": schema["$defs"]}
    )


def test_efficiency() -> None:
    assert efficiency(941e6, 964.242e6) == pytest.approx(0.9759, abs=1e-4)
    assert efficiency(None, 1e9) is None
    assert efficiency(941e6, None) is None
    assert efficiency(941e6, 0) is None


def test_ok_values_skip_failed_and_missing_repetitions() -> None:
    repetitions = [
        {"status": "ok", "bits_per_second": 940e6},
        {"status": "failed", "bits_per_second": None},
        {"status": "ok", "bits_per_second": None},
        {"status": "ok", "bits_per_second": 950e6},
    ]
    assert ok_values(repetitions) == [940e6, 950e6]
    assert summarize(ok_values(repetitions))["n"] == 2
