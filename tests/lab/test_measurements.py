"""In the lab: latency, fio on the host's filesystem, parallel iperf3 over several processes,
resource sampling, and the analysis on real numbers; the hosts left clean."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from nasplan.input.loader import load_schema

ROOT = Path(__file__).resolve().parents[2]
GBIT = 1e9
LAB = {
    "name": "meas-lab",
    "lan": {"prefix": "198.18.34.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "pc": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "mtu": 1500,
            "a": {"host": "nas", "interface": "eth1", "address": "198.18.35.1/30"},
            "b": {"host": "pc", "interface": "eth1", "address": "198.18.35.2/30"},
        }
    ],
}


def plan(inventory: Path, disk_dir: Path) -> dict[str, Any]:
    common = {"server": "nas", "client": "pc", "repetitions": 2}
    return {
        "name": "meas-lab",
        "inventory": str(inventory),
        "tests": [
            {
                "id": "lan-p2",
                "kind": "iperf3",
                "target": "nas.lan",
                "duration_s": 1,
                "parallel": 2,
                **common,
            },
            {"id": "ping-p2p", "kind": "latency", "target": "nas.p2p", "count": 3, **common},
            {
                "id": "nas-disk",
                "kind": "disk",
                "host": "nas",
                "path": str(disk_dir),
                "size": "32MiB",
                "repetitions": 2,
            },
        ],
    }


@pytest.fixture(scope="module")
def measured(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("meas")
    out = work / "run"
    with (
        running_lab(LAB) as state,
        tempfile.TemporaryDirectory(prefix="meas-lab-", dir="/var/tmp") as d,
    ):
        disk_dir = Path(d)
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan(state.inventory_path, disk_dir)))
        proc = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out", str(out)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
        left = sorted(p.name for p in disk_dir.iterdir())
    run = json.loads((out / "run.json").read_text())
    return {
        "proc": proc,
        "run": run,
        "out": out,
        "left": left,
        "tests": {t["id"]: t for t in run["tests"]},
    }


def test_run_succeeds_and_matches_the_schema(measured: dict[str, Any]) -> None:
    assert measured["proc"].returncode == 0, measured["proc"].stdout + measured["proc"].stderr
    jsonschema.validate(measured["run"], load_schema("run"))
    assert (measured["out"] / "report.md").read_text().count("nas-disk") >= 1


def test_parallel_iperf3_before_3_16_runs_one_process_per_stream(measured: dict[str, Any]) -> None:
    test = measured["tests"]["lan-p2"]
    assert test["params"]["parallel_mode"] == "processes"
    for rep in test["repetitions"]:
        assert rep["processes"] == 2
        assert rep["interval_bits_per_second"]
    assert 0.75 * GBIT < test["summary"]["median"] <= 1.0 * GBIT


def test_latency_and_path_mtu(measured: dict[str, Any]) -> None:
    test = measured["tests"]["ping-p2p"]
    assert test["status"] == "ok", test["error"]
    assert 0 < test["summary"]["median"] < 50
    assert test["mtu_probe"]["path_mtu_bytes"] == 1500 and test["mtu_probe"]["ok"]


def test_fio_on_the_hosts_filesystem_cleans_up(measured: dict[str, Any]) -> None:
    test = measured["tests"]["nas-disk"]
    assert test["status"] == "ok", test["error"]
    assert set(test["directions"]) == {"write", "read"}
    assert test["directions"]["write"]["median"] > 0
    assert all(r["direct"] for r in test["repetitions"])
    # 32 MiB is far below twice the lab host's RAM: the result is marked cache-influenced
    assert "small_file" in test["cache_warning"]["reasons"]
    assert measured["left"] == [], "fio's working directory was left behind"


def test_resources_sampled_per_host(measured: dict[str, Any]) -> None:
    resources = measured["tests"]["lan-p2"]["resources"]
    assert set(resources) == {"nas", "pc"}
    for sample in resources.values():
        assert sample["samples"] >= 2
        assert 0 <= sample["cpu_busy_percent_median"] <= 100
        assert sample["mem_available_bytes_min"] > 0
