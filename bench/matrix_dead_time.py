"""Dead time of a long matrix: the seconds between one measurement's end and the next one's
start, per cell, for nasplan and for the SSH floor doing the same cells (needs root: the lab).

A 24-cell iperf3 matrix (reverse x window x mss, 1 s each, one repetition) over two lab hosts runs
as ``nasplan apply`` and as bench/floor.py (paramiko only: a one-off server, the client, the
results, cell after cell). So does one cell alone (nasplan: ``--tests`` picks it). The start-up
(interpreter, connections, facts) is the same in both runs of a side, so the dead time per cell is
the difference of their overheads over the difference of their cells:

    ((wall_24 - measured_24) - (wall_1 - measured_1)) / 23

where measured is what iperf3 itself measured. The goal: under 0.15 s per cell for nasplan at two
hosts. It also runs the matrix interleaved with two repetitions per cell (48 measurements, the
same formula per measurement) to show what interleaving costs.

Usage: .venv/bin/python bench/matrix_dead_time.py [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.lab import LabState

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from overhead_floor import compile_package, run_floor, run_nasplan  # noqa: E402

GOAL_DEAD_S = 0.15
ONE_CELL = "cell[reverse=false,window=64K,mss=1200]"  # the cell run alone
REVERSE = (False, True)
WINDOWS = ("64K", "128K", "256K", "512K")
MSS = (1200, 1400, 1448)
WINDOW_BYTES = {"64K": 64 * 1024, "128K": 128 * 1024, "256K": 256 * 1024, "512K": 512 * 1024}


def lab_spec() -> dict[str, Any]:
    return {
        "name": "bm",
        "description": "two hosts on one 1G LAN: the dead time of a long matrix",
        "lan": {"prefix": "198.19.129.0/24", "rate": "1G"},
        "hosts": {"srv": {"personality": "debian"}, "cli": {"personality": "debian"}},
        "links": [],
    }


def cells() -> list[tuple[bool, str, int]]:
    return list(itertools.product(REVERSE, WINDOWS, MSS))


def plan(state: LabState, order: str, repetitions: int) -> dict[str, Any]:
    """The matrix plan: one iperf3 test, a cell per (reverse, window, mss)."""
    return {
        "name": f"matrix-{order}",
        "inventory": str(state.inventory_path),
        "order": order,
        "tests": [
            {
                "id": "cell",
                "kind": "iperf3",
                "server": "srv",
                "client": "cli",
                "duration_s": 1,
                "repetitions": repetitions,
                "matrix": {"reverse": list(REVERSE), "window": list(WINDOWS), "mss": list(MSS)},
                "reverse": "{{ matrix.reverse }}",
                "window": "{{ matrix.window }}",
                "mss": "{{ matrix.mss }}",
            }
        ],
    }


def floor_spec(state: LabState, count: int, repetitions: int) -> dict[str, Any]:
    """bench/floor.py's input: the first ``count`` cells, each ``repetitions`` times."""
    hosts = {
        name: {
            "address": state.hosts[name].ip,
            "user": "root",
            "identity_file": str(state.identity_path),
            "known_hosts": str(state.known_hosts_path),
        }
        for name in ("srv", "cli")
    }
    tests = []
    for rep in range(repetitions):
        for index, (reverse, window, mss) in enumerate(cells()[:count]):
            extra = ["-w", str(WINDOW_BYTES[window]), "-M", str(mss)] + (["-R"] if reverse else [])
            tests.append(
                {
                    "id": f"cell-{index}-{rep}",
                    "kind": "iperf3",
                    "server": "srv",
                    "client": "cli",
                    "address": state.hosts["srv"].ip,
                    "port": 5201 + len(tests) % 50,
                    "duration_s": 1,
                    "extra": extra,
                }
            )
    return {"hosts": hosts, "tests": tests}


def overhead_s(result: dict[str, Any]) -> float:
    return float(result["wall_s"] - result["measured_s"])


def measure(state: LabState, rounds: int, workdir: Path) -> dict[str, Any]:
    n = len(cells())
    plans = {}
    for order, repetitions in (("sequential", 1), ("interleaved", 2)):
        path = workdir / f"plan-{order}.yaml"
        path.write_text(yaml.safe_dump(plan(state, order, repetitions), sort_keys=False))
        plans[order] = path
    dead: dict[str, list[float]] = {"floor": [], "nasplan": [], "nasplan interleaved x2": []}
    failures: list[str] = []
    for round_index in range(rounds):
        floor_many = run_floor(floor_spec(state, n, 1))
        floor_one = run_floor(floor_spec(state, 1, 1))
        dead["floor"].append((overhead_s(floor_many) - overhead_s(floor_one)) / (n - 1))
        out = workdir / f"r{round_index}"
        many = run_nasplan(plans["sequential"], out / "many")
        one = run_nasplan(plans["sequential"], out / "one", ["--tests", ONE_CELL])
        twice = run_nasplan(plans["interleaved"], out / "twice")
        if any("failed" in r for r in (many, one, twice)):
            failures.append(f"round {round_index + 1}: a nasplan apply failed")
            continue
        dead["nasplan"].append((overhead_s(many) - overhead_s(one)) / (n - 1))
        dead["nasplan interleaved x2"].append((overhead_s(twice) - overhead_s(one)) / (2 * n - 1))
        print(f"round {round_index + 1}/{rounds} done", file=sys.stderr)
    return {"cells": n, "dead_s": dead, "failures": failures}


def table(results: dict[str, Any]) -> str:
    lines = [
        f"{results['cells']} cells over two lab hosts; dead time per measurement, s"
        " (min / median / max over the rounds)",
        "",
        "| who | dead time per measurement s | goal <= 0.15 |",
        "|---|---|---|",
    ]
    for who, values in results["dead_s"].items():
        if not values:
            lines.append(f"| {who} | no round finished | - |")
            continue
        median = statistics.median(values)
        spread = f"{min(values):.3f} / {median:.3f} / {max(values):.3f}"
        verdict = "meets" if median <= GOAL_DEAD_S else "MISSES"
        lines.append(f"| {who} | {spread} | {verdict if who != 'floor' else '-'} |")
    lines += [f"FAILED: {failure}" for failure in results["failures"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="nasplan-matrix-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec()))
        state = lab.up(lab_file, workdir / "state")
        try:
            results = measure(state, args.rounds, workdir)
        finally:
            lab.down(lab_file, workdir / "state")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
