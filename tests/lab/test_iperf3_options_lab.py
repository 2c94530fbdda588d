"""In the lab: iperf3's -C, -l, -B, -4, -n and DSCP asked in a plan reach iperf3 on a real
client (what its JSON says it used), and the report names them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "l45-opts",
    "lan": {"prefix": "198.18.214.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
}


@pytest.fixture(scope="module")
def ran(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("opts")
    common = {"kind": "iperf3", "server": "nas", "client": "ws", "repetitions": 1}
    with running_lab(LAB) as state:
        inventory = yaml.safe_load(state.inventory_path.read_text())
        ws_address = inventory["hosts"]["ws"]["address"]
        plan = {
            "name": "l45-opts",
            "inventory": str(state.inventory_path),
            "tests": [
                {"id": "reno", "duration_s": 1, "congestion": "reno", "length": "16K",
                 "dscp": "EF", "ip_version": 4, "bind": ws_address, **common},
                {"id": "bytes", "bytes": "8MiB", **common},
                {"id": "pps", "duration_s": 1, "protocol": "udp", "bitrate": "5M",
                 "length": 64, **common},
            ],
        }  # fmt: skip
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(work / "run")],
            capture_output=True, text=True, cwd=ROOT, timeout=180, check=False,
        )  # fmt: skip
    run = load_run(work / "run")  # validated against the run schema
    tests = {t["id"]: t for t in run["tests"]}
    raw = {
        t["id"]: json.loads((work / "run" / t["repetitions"][0]["raw_file"]).read_text())
        for t in run["tests"]
    }
    return {
        "proc": proc,
        "tests": tests,
        "raw": raw,
        "ws": ws_address,
        "report": (work / "run" / "report.md").read_text(),
    }


def test_congestion_length_dscp_and_bind_reach_iperf3(ran: dict[str, Any]) -> None:
    test = ran["tests"]["reno"]
    assert test["status"] == "ok", (test["error"], ran["proc"].stderr[-2000:])
    raw = ran["raw"]["reno"]
    assert raw["end"]["sender_tcp_congestion"] == "reno"
    assert raw["start"]["test_start"]["blksize"] == 16384
    assert raw["start"]["test_start"]["tos"] == 46 << 2
    assert raw["start"]["connected"][0]["local_host"] == ran["ws"]
    rep = test["repetitions"][0]
    assert (rep["congestion"], rep["block_bytes"], rep["local_address"]) == (
        "reno",
        16384,
        ran["ws"],
    )
    report = ran["report"]
    assert "congestion control reno (-C)" in report
    assert "DSCP 46 (EF) (-S 184)" in report
    assert f"bound to {ran['ws']} (-B)" in report
    assert "iperf3 used congestion control reno, 16 KiB a write" in report


def test_bytes_replace_the_time(ran: dict[str, Any]) -> None:
    test = ran["tests"]["bytes"]
    assert test["status"] == "ok", test["error"]
    raw = ran["raw"]["bytes"]
    assert raw["start"]["test_start"]["bytes"] == 8 * 2**20
    assert raw["start"]["test_start"]["duration"] == 0
    assert raw["end"]["sum_sent"]["bytes"] == 8 * 2**20
    assert "8 MiB each (-n)" in ran["report"]


def test_small_datagrams_give_a_packet_rate(ran: dict[str, Any]) -> None:
    test = ran["tests"]["pps"]
    assert test["status"] == "ok", test["error"]
    rep = test["repetitions"][0]
    assert rep["block_bytes"] == 64
    # 5 Mbit/s of 64-byte payloads: about 9,800 datagrams a second
    assert rep["packets"] == pytest.approx(5e6 / 8 / 64, rel=0.1)
    assert "packets/s" in ran["report"]
    assert "64-byte datagrams (-l 64); iperf3 used 64 bytes a datagram" in ran["report"]
