"""The report's Diagnosis on real iperf3 runs: one stream held by a small window against four
streams, and one CPU core kept busy while the machine as a whole is not."""

from __future__ import annotations

import io
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.measure.kinds.iperf3 import streams
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

from .conftest import LabContext

LAB = {
    "name": "dg-streams",
    "lan": {"prefix": "198.19.244.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "pc": {"personality": "debian"}},
    "links": [
        {"name": "p2p", "rate": "10G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth1", "address": "198.19.245.1/30"},
         "b": {"host": "pc", "interface": "eth1", "address": "198.19.245.2/30"}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def state(running_lab: LabContext) -> Iterator[LabState]:
    with running_lab(LAB) as running:
        yield running


def run_plan(state: LabState, work: Path, tests: list[dict[str, Any]]) -> tuple[dict, str]:
    """Apply a plan of ``tests`` on the lab: (run.json, report.md)."""
    plan = {"name": "dg-streams", "inventory": str(state.inventory_path), "tests": tests}
    work.mkdir(parents=True, exist_ok=True)
    plan_path = work / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False))
    console = io.StringIO()
    result = apply(RunRequest(load_plan(plan_path), out=work / "run"), make_progress(console))
    assert result.exit_code == EXIT_OK, console.getvalue()
    return load_run(work / "run"), (work / "run" / "report.md").read_text()


def diagnosis_lines(report: str) -> list[str]:
    section = report.split("## Diagnosis", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- **")]


def test_a_small_window_holds_one_stream_and_the_report_says_so_with_its_numbers(
    state: LabState, tmp_path: Path
) -> None:
    common = {"kind": "iperf3", "server": "nas", "client": "pc", "target": "nas.p2p",
              "duration_s": 3, "repetitions": 1, "window": "2K"}  # fmt: skip
    run, report = run_plan(
        state, tmp_path, [{**common, "id": "one"}, {**common, "id": "four", "parallel": 4}]
    )
    tests = {t["id"]: t for t in run["tests"]}
    (stream,) = tests["one"]["repetitions"][0]["per_stream"]  # kept in run.json
    assert stream["max_snd_wnd_bytes"] and stream["mean_rtt_us"]
    assert len(tests["four"]["repetitions"][0]["per_stream"]) == 4
    # the window, not the 10G link, holds the one stream: window / RTT is under the link
    limit = streams.window_limit(tests["one"])
    assert limit is not None and limit["held"], limit
    window = [f for f in run["diagnosis"] if f["cause"] == "stream-window" and f["test"] == "one"]
    assert len(window) == 1
    lines = diagnosis_lines(report)
    assert f"- **stream-window** (one): {window[0]['text']}" in lines
    text = window[0]["text"]
    assert f"window ({limit['window_bytes'] / 1024:.1f} KiB per round trip of " in text
    fill = f"takes {limit['fill_window_bytes'] / 1024:.1f} KiB a stream (link rate × its best round"
    assert fill in text
    assert "the plan's `window:` is 2.0 KiB" in text
    # 1 against 4 streams of the same path: named side by side with the ratio of the medians
    (scaling,) = [f for f in run["diagnosis"] if f["cause"] == "streams-scaling"]
    ratio = tests["four"]["summary"]["median"] / tests["one"]["summary"]["median"]
    assert scaling["text"].startswith(f"one vs four: 4 streams ×{ratio:.2f} of 1 (")
    assert scaling["evidence"]["tests"] == ["one", "four"]
    assert any(line.startswith("- **streams-scaling** (four): one vs four") for line in lines)


@pytest.fixture
def one_core_busy() -> Iterator[int]:
    """A loop pinned to core 0 of this machine (every lab host's kernel), killed by its PID."""
    burner = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    try:
        yield burner.pid
    finally:
        os.kill(burner.pid, signal.SIGKILL)
        burner.wait()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one busy core of one is the machine")
def test_one_saturated_core_is_named_with_the_average_beside_it(
    state: LabState, tmp_path: Path, one_core_busy: int
) -> None:
    test = {"id": "lan", "kind": "iperf3", "server": "nas", "client": "pc", "duration_s": 3,
            "repetitions": 1, "bitrate": "200M", "protocol": "udp"}  # fmt: skip
    # Something else may load this machine's other core meanwhile: then the machine as a whole
    # is busy, which is no one-core finding (checked). Up to three runs for a quieter moment;
    # one of them must come, or the one-core finding was never shown.
    for attempt in range(3):
        run, report = run_plan(state, tmp_path / f"attempt-{attempt}", [test])
        (record,) = run["tests"]
        loads = {h: r for h, r in record["resources"].items() if r}
        assert loads and all(r["cpu_cores"] == os.cpu_count() for r in loads.values())
        assert all(r["cpu_busiest_core_percent_median"] >= 90 for r in loads.values()), loads
        found = [f for f in run["diagnosis"] if f["cause"] == "cpu-core"]
        if all(r["cpu_busy_percent_median"] < 85 for r in loads.values()):
            break
        # a host whose whole machine was busy names no core of it (the hosts' samples of the
        # one kernel differ a little: one may be at 91 % and the other at 89 %)
        busy = {h for h, r in loads.items() if r["cpu_busy_percent_median"] >= 90}
        assert not [f for f in found if f["host"] in busy], found
    else:
        pytest.fail(f"the machine stayed busy in three runs; no quiet one to name a core: {loads}")
    (one,) = found  # lab hosts share one kernel: its core is named once
    host, load = one["host"], loads[one["host"]]
    assert one["text"].startswith(
        f"one core of {host} at {load['cpu_busiest_core_percent_median']:.0f} % "
        f"(average {load['cpu_busy_percent_median']:.0f} % of {os.cpu_count()}) "
        f"(the whole machine's core: {host} shares one kernel with "
    )
    # iperf3 moved 200 Mbit/s: its own process figure clears it
    assert " — not iperf3 (its process at " in one["text"]
    assert f"- **cpu-core** (lan): {one['text']}" in diagnosis_lines(report)
    assert os.path.exists(f"/proc/{one_core_busy}")  # the loop ran all along (killed after)
