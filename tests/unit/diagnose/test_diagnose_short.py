"""Runs too short to trust: a finding per test and direction, with what to change."""

from __future__ import annotations

from typing import Any

from nasplan.diagnose import short

MIB = 2**20


def transfer(durations: list[float], median: float = 200 * MIB) -> dict[str, Any]:
    reps = [
        {"index": i, "status": "ok", "direction": "write", "duration_s": d}
        for i, d in enumerate(durations, 1)
    ]
    reps.append({"index": 9, "status": "failed", "direction": "write", "duration_s": 0.1})
    return {
        "id": "smb",
        "kind": "transfer",
        "status": "ok",
        "params": {"server": "nas", "client": "pc"},
        "repetitions": reps,
        "directions": {"write": {"median": median}},
    }


def test_a_copy_of_well_under_a_second_is_flagged_with_a_size_to_use() -> None:
    (found,) = short.findings({"tests": [transfer([0.21, 0.46, 4.0])]})
    assert found["cause"] == "short-run" and (found["test"], found["host"]) == ("smb", "pc")
    assert found["text"] == (
        "2 of 3 write repetitions took under 3 s (0.21–0.46 s): start-up (the connection, a "
        "login, TCP slow start) weighs on so short a run and its rate reads low; use a `size` of "
        "at least 1 GiB (3 s at its median rate)."
    )
    assert found["evidence"]["durations_s"] == [0.21, 0.46]


def test_long_enough_runs_and_untimed_kinds_are_no_finding() -> None:
    latency = {"id": "ping", "kind": "latency", "repetitions": [{"status": "ok"}]}
    assert short.findings({"tests": [transfer([3.0, 12.5]), latency]}) == []


def test_a_short_iperf3_run_asks_for_a_longer_duration() -> None:
    test = {"id": "lan", "kind": "iperf3", "params": {"client": "pc"},
            "repetitions": [{"status": "ok", "duration_s": 1.0}]}  # fmt: skip
    (found,) = short.findings({"tests": [test]})
    assert found["text"] == (
        "1 of 1 repetitions took under 3 s (1.00 s): TCP slow start weighs on so short a run and "
        "its rate reads low; set `duration_s` to 3 or more."
    )


def test_a_short_iperf3_run_that_omits_slow_start_is_no_finding() -> None:
    """``omit_s`` (-O) leaves slow start out of the rate: a 1 s measurement after it is not
    read low, and neither the Diagnosis nor the results table flags it."""
    test = {"id": "lan", "kind": "iperf3", "params": {"client": "pc", "omit_s": 1},
            "repetitions": [{"status": "ok", "duration_s": 1.0}]}  # fmt: skip
    assert short.findings({"tests": [test]}) == []
    test["params"]["omit_s"] = 0
    assert len(short.findings({"tests": [test]})) == 1
