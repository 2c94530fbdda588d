"""In the lab: ``kind: ping-sweep`` finds a jumbo cable's MTU and a LAN's, and says which is off."""

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
    "name": "l9-sweep",
    "lan": {"prefix": "198.19.0.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "mtu": 9000,
            "a": {"host": "nas", "interface": "eth1", "address": "198.19.1.1/30"},
            "b": {"host": "ws", "interface": "eth1", "address": "198.19.1.2/30"},
        }
    ],
}
SIZES = [1500, 4000, 9000, 9100]


@pytest.fixture(scope="module")
def swept(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("sweep")
    common = {"kind": "ping-sweep", "server": "nas", "client": "ws", "repetitions": 2}
    with running_lab(LAB) as state:
        plan = {
            "name": "l9-sweep",
            "inventory": str(state.inventory_path),
            "tests": [
                {"id": "p2p", "target": "nas.p2p", "sizes_bytes": SIZES, "expect_mtu_bytes": 9000,
                 **common},
                {"id": "lan", "target": "nas.lan", "sizes_bytes": SIZES, "expect_mtu_bytes": 9000,
                 **common},
            ],
        }  # fmt: skip
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(work / "run")],
            capture_output=True, text=True, cwd=ROOT, timeout=180, check=False,
        )  # fmt: skip
    run = load_run(work / "run")  # validated against the run schema
    return {
        "proc": proc,
        "tests": {t["id"]: t for t in run["tests"]},
        "report": (work / "run" / "report.md").read_text(),
        "raw": {
            t["id"]: (work / "run" / t["repetitions"][0]["raw_file"]).read_text()
            for t in run["tests"]
        },
    }


def test_the_jumbo_cable_passes_9000_byte_packets_and_no_more(swept: dict[str, Any]) -> None:
    test = swept["tests"]["p2p"]
    assert test["status"] == "ok", test["error"]
    assert test["summary"]["median"] == 9000 and test["summary"]["n"] == 2
    sweep = {entry["size_bytes"]: entry for entry in test["repetitions"][0]["sweep"]}
    assert [sweep[size]["received"] > 0 for size in SIZES] == [True, True, True, False]
    # 9100 bytes never left the workstation: its own NIC's MTU is 9000
    assert sweep[9100]["local_mtu_bytes"] == 9000
    assert "message too long" in swept["raw"]["p2p"]


def test_the_lan_is_found_at_1500_and_fails_the_jumbo_expectation(swept: dict[str, Any]) -> None:
    test = swept["tests"]["lan"]
    assert test["status"] == "failed"
    assert test["error"] == "path MTU 1500 bytes, expected 9000"
    assert test["path"]["mtu_bytes"] == 1500
    assert swept["proc"].returncode == 1, swept["proc"].stderr  # a test failed


def test_the_report_lists_both_sweeps_in_bytes(swept: dict[str, Any]) -> None:
    report = swept["report"]
    rows = {line.split("|")[1].strip(): line for line in report.splitlines() if line[:2] == "| "}
    assert "| path MTU (DF ping sweep) |" in rows["p2p"] and "| 9000 bytes |" in rows["p2p"]
    assert "| path MTU (DF ping sweep) |" in rows["lan"] and "| 1500 bytes |" in rows["lan"]
    assert json.dumps(SIZES) not in report  # sizes live in run.json, the report shows results
