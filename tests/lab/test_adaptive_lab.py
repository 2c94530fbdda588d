"""Repetitions until the answer is clear, against the lab: a steady 1G LAN test (iperf3 for
2 s, ``repetitions: {min: 3, max: 8, until: {ci_halfwidth: 2%}}``) stops by its fourth
repetition, and run.json and the report say which statistic decided and its interval."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "adlab",
    "lan": {"prefix": "198.18.66.0/24", "rate": "1G"},
    "hosts": {"adsrv": {"personality": "debian"}, "adcli": {"personality": "debian"}},
}


def test_a_steady_1g_test_stops_by_its_fourth_repetition(running_lab: Any, tmp_path: Path) -> None:
    with running_lab(LAB) as state:
        plan = {
            "name": "adaptive",
            "inventory": str(state.inventory_path),
            "tests": [
                {"id": "lan", "kind": "iperf3", "server": "adsrv", "client": "adcli",
                 "duration_s": 2,
                 "repetitions": {"min": 3, "max": 8, "until": {"ci_halfwidth": "2%"}}},
            ],
        }  # fmt: skip
        plan_file = tmp_path / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        done = subprocess.run(
            [sys.executable, "-m", "nasplan", "apply", str(plan_file), "--out",
             str(tmp_path / "run")],
            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    assert done.returncode == 0, done.stderr
    test = json.loads((tmp_path / "run" / "run.json").read_text())["tests"][0]
    rule = test["adaptive"]
    rates = [r["bits_per_second"] for r in test["repetitions"] if r["status"] == "ok"]
    assert rule["reached"] and rule["n"] <= 4, rule
    assert len(test["repetitions"]) == rule["n"] == len(rates)  # it ran no more than it needed
    assert rule["statistic"] == "t" and 0 < rule["ci_halfwidth"] <= 0.02
    interval = rule["interval"]
    assert interval["low"] <= statistics.median(rates) <= interval["high"]
    assert interval["metric"] == "bits_per_second" and interval["high"] < 1e9  # the 1G shaper
    report = (tmp_path / "run" / "report.md").read_text()
    line = next(line for line in report.splitlines() if line.startswith("- **lan**"))
    assert f"{rule['n']} repetitions (3–8): Student's t (two-stage), " in line
    assert line.endswith("within ±2 %: clear")
