"""``nasplan apply --check`` with a disk test on every host against the same hosts with iperf3
tests, interleaved in one run on the lab (needs root).

A disk test's check reads its directory on the host (a writable directory); an iperf3 test's
reads nothing beyond the facts. Those looks ride in the facts' round trip, so the disk plan's
check should cost what the iperf3 plan's does: the goal is within 10 % at 30 hosts. Both plans
run as fresh processes (``nasplan apply --check``), which goes first alternating round by round;
printed: each one's wall (min / median / max) and the paired ratio (each round's disk check over
the iperf3 check right beside it), whose median the goal is judged by.

Usage: .venv/bin/python bench/check_hosts.py [--rounds 7] [--hosts 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.lab import LabState

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from overhead_floor import compile_package, host_names, spread  # noqa: E402

GOAL_RATIO = 1.10


def lab_spec(hosts: int) -> dict[str, Any]:
    return {
        "name": "bc",
        "description": f"{hosts} hosts on one 1G LAN: apply --check, disk tests against iperf3",
        "lan": {"prefix": "198.19.142.0/24", "rate": "1G"},
        "hosts": {name: {"personality": "debian"} for name in host_names(hosts)},
        "links": [],
    }


def plans(state: LabState, hosts: int) -> dict[str, dict[str, Any]]:
    """The two plans over the same hosts: a disk test on each, or an iperf3 test per pair."""
    names = host_names(hosts)
    disk = [
        {"id": f"disk-{name}", "kind": "disk", "host": name, "path": "/var/tmp", "repetitions": 1}
        for name in names
    ]
    iperf3 = [
        {"id": f"pair-{i // 2 + 1}", "kind": "iperf3", "server": names[i],
         "client": names[i + 1], "duration_s": 1, "repetitions": 1}
        for i in range(0, len(names) - 1, 2)
    ]  # fmt: skip
    inventory = str(state.inventory_path)
    return {
        "disk": {"name": "check-disk", "inventory": inventory, "tests": disk},
        "iperf3": {"name": "check-iperf3", "inventory": inventory, "tests": iperf3},
    }


def run_check(plan_path: Path) -> float | str:
    """``nasplan apply --check PLAN`` as a new process: its wall in seconds, or why it failed."""
    nasplan = Path(sys.executable).with_name("nasplan")
    started = time.perf_counter()
    done = subprocess.run(
        [str(nasplan), "apply", "--check", str(plan_path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TERM": "dumb"},
    )
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()[-2:]
        return f"exit {done.returncode}: {'; '.join(said)}"
    return wall_s


def measure(state: LabState, hosts: int, rounds: int, workdir: Path) -> dict[str, Any]:
    paths = {}
    for name, plan in plans(state, hosts).items():
        paths[name] = workdir / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(plan, sort_keys=False))
    walls: dict[str, list[float]] = {"disk": [], "iperf3": []}
    paired: list[float] = []
    failures: list[str] = []
    for index in range(rounds):
        order = ("disk", "iperf3") if index % 2 == 0 else ("iperf3", "disk")
        this_round: dict[str, float] = {}
        for who in order:
            result = run_check(paths[who])
            if isinstance(result, str):
                failures.append(f"{who}, round {index + 1}: {result}")
                continue
            this_round[who] = result
            walls[who].append(result)
        if len(this_round) == 2:
            paired.append(this_round["disk"] / this_round["iperf3"])
        print(f"round {index + 1}/{rounds} done", file=sys.stderr)
    return {"hosts": hosts, "walls": walls, "paired": paired, "failures": failures}


def table(results: dict[str, Any]) -> str:
    walls, paired = results["walls"], results["paired"]
    lines = [f"apply --check at {results['hosts']} hosts:"]
    lines += [
        f"  {who} tests: wall s (min / median / max) {spread(walls[who])}"
        for who in ("disk", "iperf3")
        if walls[who]
    ]
    if paired:
        median = statistics.median(paired)
        verdict = "meets" if median <= GOAL_RATIO else "MISSES"
        lines.append(
            f"  paired ratio disk / iperf3, median (min / max): {median:.2f} "
            f"({min(paired):.2f} / {max(paired):.2f}); goal <= {GOAL_RATIO:.2f}: {verdict}"
        )
    lines += [f"  FAILED (left out of the numbers): {f}" for f in results["failures"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="nasplan-check-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec(args.hosts)))
        state = lab.up(lab_file, workdir / "state")
        try:
            results = measure(state, args.hosts, args.rounds, workdir)
        finally:
            lab.down(lab_file, workdir / "state")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
