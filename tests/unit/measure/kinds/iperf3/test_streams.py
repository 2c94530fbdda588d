"""The iperf3 kind's own causes (kinds/iperf3/streams.py), from run.json alone: a stream held by
its window, 1 vs N streams; the Diagnosis asks the kind for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasplan.analysis import summarize
from nasplan.diagnose import diagnose
from nasplan.diagnose.cpu import saturated_core
from nasplan.measure.kinds.iperf3 import streams
from nasplan.measure.kinds.iperf3.tool import parse, repetition_fields

IPERF3 = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.12"
# 10 Gbit/s, MTU 1500, a tc-shaped lab link: the TCP maximum the captures ran against
TC_10G = 10e9 * 1448 / 1514


def findings(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The kind's causes, lent the Diagnosis's reading of one CPU core as diagnose/ lends it."""
    return streams.findings(run, saturated_core)


def iperf3_test(
    test_id: str, fixture: str, parallel: int, *, window: int | None = 8192, **extra: Any
) -> dict[str, Any]:
    """An iperf3 record with one repetition parsed from a real capture."""
    rep = {"index": 1, "status": "ok", "error": None, "raw_file": None}
    rep.update(repetition_fields(parse((IPERF3 / fixture).read_text())))
    params = {"server": "nas", "client": "pc", "address": "198.18.226.1", "parallel": parallel,
              "parallel_mode": "streams", "protocol": "tcp", "reverse": False, "bidir": False,
              "window_bytes": window}  # fmt: skip
    return {
        "id": test_id,
        "kind": "iperf3",
        "status": "ok",
        "params": params,
        "path": {"theoretical_bits_per_second": TC_10G},
        "repetitions": [rep],
        "summary": summarize([rep["bits_per_second"]]),
        **extra,
    }


def synthetic(test_id: str, parallel: int, median: float, **extra: Any) -> dict[str, Any]:
    """An iperf3 record with a median and no per-stream figures (a user's numbers)."""
    return {
        "id": test_id,
        "kind": "iperf3",
        "status": "ok",
        "params": {"server": "nas", "client": "pc", "address": "198.18.0.10",
                   "parallel": parallel, "protocol": "tcp"},
        "path": {"theoretical_bits_per_second": 9.49e9},
        "repetitions": [],
        "summary": summarize([median]),
        **extra,
    }  # fmt: skip


def run_of(*tests: dict[str, Any]) -> dict[str, Any]:
    return {"hosts": {}, "tests": list(tests)}


def test_a_stream_held_by_a_small_window_is_named_with_its_numbers() -> None:
    one = iperf3_test("w1", "tcp-window-8k.json", 1)
    limit = streams.window_limit(one)
    assert limit is not None and limit["held"]
    assert limit["window_bytes"] == 11584
    assert (limit["min_rtt_us"], limit["rtt_us"]) == (10, 11)
    assert limit["window_bits_per_second"] == pytest.approx(11584 * 8 / 11e-6)
    assert limit["best_bits_per_second"] == pytest.approx(11584 * 8 / 10e-6)
    assert limit["fill_window_bytes"] == pytest.approx(TC_10G * 10e-6 / 8)
    (found,) = findings(run_of(one))
    assert found["cause"] == "stream-window" and found["test"] == "w1"
    assert found["text"] == (
        "its stream is held by the receiver's advertised window (11.3 KiB per round trip of "
        "10–11 µs: 8.42–9.27 Gbit/s a stream), measured 6.58 Gbit/s a stream (78 % of what that "
        "window allows at its mean round trip); filling the 9.56 Gbit/s TCP maximum takes 11.7 "
        "KiB a stream (link rate × its best round trip); the plan's `window:` is 8.0 KiB: a "
        "larger window or more streams."
    )
    # the share it says is the one the rule reads (docs: at least half, at the mean RTT)
    assert limit["held_share"] == pytest.approx(
        limit["stream_bits_per_second"] / limit["window_bits_per_second"]
    )
    assert streams.WINDOW_HELD_RATIO == 0.5 <= limit["held_share"]


def test_a_stream_under_half_of_what_its_window_allows_is_not_held_by_it() -> None:
    one = iperf3_test("w1", "tcp-window-8k.json", 1)
    for rep in one["repetitions"]:
        for stream in rep["per_stream"]:
            stream["bits_per_second"] *= 0.45 / 0.78  # 45 % of its bound: something else
    limit = streams.window_limit(one)
    assert limit is not None and limit["held_share"] < 0.5 and not limit["held"]
    assert findings(run_of(one)) == []


def test_a_window_that_fills_the_link_is_no_finding() -> None:
    wide = iperf3_test("w16", "tcp-window-16k-10g.json", 1, window=16384)
    limit = streams.window_limit(wide)
    assert limit is not None and not limit["held"]  # 9.55 Gbit/s: the link
    four = iperf3_test("w4", "tcp-window-8k-parallel-4.json", 4)
    assert not streams.window_limit(four)["held"]  # type: ignore[index]
    assert findings(run_of(wide)) == []


def test_one_against_four_streams_of_a_real_small_window() -> None:
    found = findings(
        run_of(
            iperf3_test("w1", "tcp-window-8k.json", 1),
            iperf3_test("w4", "tcp-window-8k-parallel-4.json", 4),
        )
    )
    scaling = [f for f in found if f["cause"] == "streams-scaling"]
    assert [f["text"] for f in scaling] == [
        "w1 vs w4: 4 streams ×1.39 of 1 (6.58 Gbit/s → 9.16 Gbit/s, 96 % of the TCP maximum): "
        "one stream is limited, 4 reach the link; one stream is held by the receiver's "
        "advertised window (11.3 KiB per round trip of 10–11 µs: 8.42–9.27 Gbit/s a stream)."
    ]
    assert scaling[0]["evidence"]["streams"] == [1, 4] and scaling[0]["evidence"]["at_link"]


def test_the_qnap_case_scales_with_the_streams_so_each_stream_is_limited() -> None:
    # a QNAP 10G port: 3.06 Gbit/s with one stream, 6.12 with two
    (found,) = findings(run_of(synthetic("one", 1, 3.06e9), synthetic("two", 2, 6.12e9)))
    assert found["text"].startswith(
        "one vs two: 2 streams ×2.00 of 1 (3.06 Gbit/s → 6.12 Gbit/s, 64 % of the TCP maximum): "
        "each stream is limited (its window or one CPU core), not the link; its window or one "
        "CPU core (no per-stream figures to tell which)."
    )


def test_one_core_is_named_as_what_holds_one_stream() -> None:
    busy = {
        "resources": {
            "nas": {
                "cpu_busy_percent_median": 27.0,
                "cpu_busiest_core_percent_median": 100.0,
                "cpu_cores": 4,
            }
        }
    }
    (found,) = findings(
        run_of(synthetic("one", 1, 3.06e9, **busy), synthetic("two", 2, 6.12e9))
    )  # fmt: skip
    assert found["text"].endswith(
        "; one stream is held by one CPU core (one core of nas at 100 % (average 27 % of 4))."
    )


def test_streams_that_do_not_help_and_a_link_already_full() -> None:
    flat = findings(run_of(synthetic("a", 1, 4.0e9), synthetic("b", 4, 4.1e9)))
    assert flat[0]["text"].endswith(
        "more streams do not help: the limit is shared by every stream (a host's CPU, its NIC "
        "or the path), not one stream's window."
    )
    full = findings(run_of(synthetic("a", 1, 9.3e9), synthetic("b", 2, 9.4e9)))
    assert full[0]["text"].endswith(": the link is the limit.")


def test_only_the_same_path_and_workload_pair_up() -> None:
    other_path = synthetic("b", 2, 6.12e9)
    other_path["params"]["address"] = "198.18.1.1"
    reverse = synthetic("c", 2, 6.12e9)
    reverse["params"]["reverse"] = True
    failed = synthetic("d", 2, 6.12e9, status="failed")
    assert findings(run_of(synthetic("a", 1, 3.06e9), other_path, reverse, failed)) == []


def test_matrix_cells_differing_only_in_streams_pair_up() -> None:
    cells = [
        synthetic(f"m[parallel={n},mtu=1500]", n, rate, base_id="m",
                  cell={"parallel": n, "mtu": 1500})
        for n, rate in ((1, 3.0e9), (2, 6.0e9))
    ] + [synthetic("m[parallel=4,mtu=9000]", 4, 9.0e9, base_id="m",
                   cell={"parallel": 4, "mtu": 9000})]  # fmt: skip
    found = findings(run_of(*cells))
    assert [f["evidence"]["tests"] for f in found] == [
        ["m[parallel=1,mtu=1500]", "m[parallel=2,mtu=1500]"]
    ]


def test_diagnose_collects_the_stream_findings() -> None:
    run = run_of(synthetic("one", 1, 3.06e9), synthetic("two", 2, 6.12e9))
    assert [f["cause"] for f in diagnose(run)] == ["streams-scaling"]


def test_streams_whose_round_trip_grows_with_them_wait_on_something_shared() -> None:
    one = iperf3_test("w1", "tcp-window-8k.json", 1)
    four = iperf3_test("w4", "tcp-window-8k-parallel-4.json", 4)
    four["summary"] = summarize([one["summary"]["median"] * 1.04])  # no gain, as in a busy lab
    for stream in four["repetitions"][0]["per_stream"]:
        stream["mean_rtt_us"] *= 6
    (scaling,) = [f for f in findings(run_of(one, four)) if f["test"] == "w4"]
    assert scaling["text"].endswith(
        "more streams do not help: each stream's round trip grew from 11 µs to 78 µs with them, "
        "so they wait on something they share (a host's CPU, a queue on the path)."
    )
