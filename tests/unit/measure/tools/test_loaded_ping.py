"""Latency under load: reply times of real iputils and busybox output, the riding sh run for
real against this machine's loopback, the idle-vs-loaded summary and its Diagnosis."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nasplan.diagnose import queue
from nasplan.measure.tools import loaded_ping, transfer
from nasplan.measure.under_load import UnderLoad

PING = Path(__file__).resolve().parents[3] / "fixtures" / "ping"


def test_each_reply_time_of_iputils_and_busybox() -> None:
    assert loaded_ping.reply_times_ms((PING / "iputils-ok.txt").read_text())[:3] == [
        0.919,
        0.069,
        0.057,
    ]
    assert loaded_ping.reply_times_ms((PING / "busybox-ok.txt").read_text())[:2] == [0.060, 0.056]
    assert loaded_ping.reply_times_ms((PING / "iputils-no-reply.txt").read_text()) == []


def test_p95_is_a_value_that_was_measured() -> None:
    assert loaded_ping.p95([float(n) for n in range(1, 21)]) == 19.0
    assert loaded_ping.p95([3.0]) == 3.0
    assert loaded_ping.p95([]) is None


@pytest.mark.parametrize("ping", ["ping", "busybox"])
def test_the_riding_script_pings_idle_then_through_the_work(tmp_path: Path, ping: str) -> None:
    if shutil.which(ping) is None:
        pytest.skip(f"no {ping} here")
    path = shutil.which("ping") if ping == "ping" else f"{shutil.which('busybox')} ping"
    assert path is not None
    before, after = loaded_ping.ride_texts("PING_TOOL", "127.0.0.1", "unit test", 10)
    # busybox is called as `busybox ping`: the quoted placeholder is replaced by the two words
    script = (before + "sleep 1.1\n" + after).replace("PING_TOOL", path)
    out = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    found = loaded_ping.fields(out)
    assert found["idle_rtt_median_ms"] is not None and found["idle_rtt_median_ms"] < 5
    # about 1.1 s at 0.2 s apart: 5 or 6 replies while the "work" ran
    assert 4 <= found["loaded_pings"] <= 7
    assert not list(Path("/tmp").glob("nasplan-ping-unit_test-*"))  # its files removed


def test_the_summary_takes_the_repetitions_medians_and_the_increase() -> None:
    reps = [
        {"idle_rtt_median_ms": 0.3, "idle_rtt_p95_ms": 0.5, "loaded_rtt_median_ms": 10.2,
         "loaded_rtt_p95_ms": 11.0},
        {"idle_rtt_median_ms": 0.4, "idle_rtt_p95_ms": 0.6, "loaded_rtt_median_ms": 10.6,
         "loaded_rtt_p95_ms": 12.0},
        {"idle_rtt_median_ms": None, "loaded_rtt_median_ms": 30.0},
    ]  # fmt: skip
    found = loaded_ping.summary(reps)
    assert found is not None
    assert (found["idle_rtt_median_ms"], found["loaded_rtt_median_ms"]) == (0.35, 10.4)
    assert (found["increase_ms"], found["p95_increase_ms"], found["repetitions"]) == (
        10.05,
        10.95,
        2,
    )
    assert loaded_ping.text(found) == (
        "idle 0.35 ms (p95 0.55 ms), under load 10.40 ms (p95 11.50 ms): +10.05 ms"
    )
    assert loaded_ping.summary([{"idle_rtt_median_ms": None}]) is None


def _run(idle: float, loaded: float) -> dict[str, object]:
    under = {"idle_rtt_median_ms": idle, "idle_rtt_p95_ms": idle, "loaded_rtt_median_ms": loaded,
             "loaded_rtt_p95_ms": loaded + 2, "increase_ms": loaded - idle}  # fmt: skip
    test = {"id": "net", "kind": "iperf3", "latency_under_load": under,
            "params": {"client": "ws", "target": "nas.lan", "address": "198.18.0.10"}}  # fmt: skip
    return {"tests": [test]}


def test_a_queue_that_fills_under_load_is_a_finding_with_its_milliseconds() -> None:
    (found,) = queue.findings(_run(0.31, 40.3))
    assert found["cause"] == "queue-under-load" and found["test"] == "net"
    assert found["text"].startswith(
        "the path ws → nas.lan (198.18.0.10) queues 40.0 ms under load: its round-trip time "
        "was 0.31 ms idle and 40.30 ms (p95 42.30 ms) while the test ran"
    )


@pytest.mark.parametrize(("idle", "loaded"), [(0.3, 4.0), (20.0, 30.0)])
def test_a_small_or_relative_small_rise_is_no_finding(idle: float, loaded: float) -> None:
    # under 5 ms more, or under twice the idle time (a long path's own round trip)
    assert queue.findings(_run(idle, loaded)) == []


def test_a_timed_copy_between_the_pings_keeps_its_output_and_exit_status() -> None:
    ping = shutil.which("ping")
    if ping is None:
        pytest.skip("no ping here")
    pings = UnderLoad(ping, "127.0.0.1", "unit copy", 10)
    script = pings.around(transfer.timed_script(["sh", "-c", "sleep 0.5; echo copied; exit 3"]))
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 3
    duration_s, exited, output = transfer.parse_timed(result.stdout)
    assert (exited, output.strip()) == (3, "copied") and 0.4 < duration_s < 2
    pings.read(result.stdout)
    assert pings.found["loaded_pings"] >= 2 and pings.found["idle_rtt_median_ms"] is not None
