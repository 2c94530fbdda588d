"""Repetitions until the answer is clear against a fixed five: wall time and intervals of an
8-cell matrix (needs root: the lab).

The matrix: iperf3 for 2 s over the 1G LAN and a 10G cable, 1 and 2 streams, both directions,
between two lab hosts. It runs as ``nasplan apply`` with ``repetitions: 5`` and with
``repetitions: {min: 3, max: 10, until: {ci_halfwidth: 2%}}``, ``--pairs`` times each (default
2), in interleaved pairs (the fixed run first in odd pairs, the adaptive one first in even
ones), each a fresh process. It prints each run's wall time, the ratio of the medians (goal:
adaptive <= 0.8 x fixed) and, per cell, the repetitions the adaptive run took, whether its
answer was clear, the statistic that decided and the interval's half-width, beside what the
fixed five tell (Student's t for n fixed in advance; goal: every clear cell within ±0.62 %, the
widest clear cell of the order-statistic rule this one replaced).

``--record FILE --rounds N`` records instead: the matrix with N fixed repetitions (interleaved),
each cell's rates written to FILE (how tests/fixtures/series/ was made).

Usage: .venv/bin/python bench/adaptive_matrix.py [--pairs 2] [--max 10] [--json FILE]
       .venv/bin/python bench/adaptive_matrix.py --record FILE --rounds 30
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.lab import LabState
from nasplan.measure.confidence import t_interval

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from overhead_floor import compile_package, run_nasplan  # noqa: E402

GOAL_RATIO = 0.8
GOAL_HALFWIDTH = 0.0062  # the widest "clear" cell of the order-statistic rule
FIXED = 5
ADAPTIVE = {"min": 3, "max": 10, "until": {"ci_halfwidth": "2%"}}
MATRIX = {"link": ["lan", "cable"], "parallel": [1, 2], "reverse": [False, True]}
DURATION_S = 2


def lab_spec() -> dict[str, Any]:
    return {
        "name": "adm",
        "description": "two hosts on a 1G LAN and a 10G cable: repetitions until clear",
        "lan": {"prefix": "198.18.67.0/24", "rate": "1G"},
        "hosts": {"srv": {"personality": "debian"}, "cli": {"personality": "debian"}},
        "links": [
            {
                "name": "cable",
                "rate": "10G",
                "mtu": 1500,
                "a": {"host": "srv", "interface": "eth1", "address": "198.18.68.1/30"},
                "b": {"host": "cli", "interface": "eth1", "address": "198.18.68.2/30"},
            }
        ],
    }


def plan(state: LabState, name: str, repetitions: int | dict[str, Any]) -> dict[str, Any]:
    """The 8-cell matrix: one iperf3 test, a cell per (link, streams, direction)."""
    return {
        "name": name,
        "inventory": str(state.inventory_path),
        "order": "interleaved",
        "tests": [
            {
                "id": "mx",
                "kind": "iperf3",
                "server": "srv",
                "client": "cli",
                "target": "srv.{{ matrix.link }}",
                "duration_s": DURATION_S,
                "repetitions": repetitions,
                "matrix": MATRIX,
                "parallel": "{{ matrix.parallel }}",
                "reverse": "{{ matrix.reverse }}",
            }
        ],
    }


def cell_rates(run_dir: Path) -> dict[str, list[float]]:
    """Each cell's ok rates in bits/s, in the order its repetitions ran."""
    run = json.loads((run_dir / "run.json").read_text())
    return {
        test["id"]: [r["bits_per_second"] for r in test["repetitions"] if r["status"] == "ok"]
        for test in run["tests"]
    }


def cell_rules(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each cell's run.json ``adaptive`` (where it stopped and why)."""
    run = json.loads((run_dir / "run.json").read_text())
    return {test["id"]: test["adaptive"] for test in run["tests"] if test.get("adaptive")}


def write_plans(state: LabState, workdir: Path, rule: dict[str, Any] = ADAPTIVE) -> dict[str, Path]:
    paths = {}
    for name, repetitions in (("fixed", FIXED), ("adaptive", rule)):
        path = workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(plan(state, name, repetitions), sort_keys=False))
        paths[name] = path
    return paths


def measure(state: LabState, pairs: int, workdir: Path, rule: dict[str, Any]) -> dict[str, Any]:
    plans = write_plans(state, workdir, rule)
    walls: dict[str, list[float]] = {"fixed": [], "adaptive": []}
    cells: dict[str, list[dict[str, Any]]] = {}
    failures: list[str] = []
    for pair in range(pairs):
        order = ("fixed", "adaptive") if pair % 2 == 0 else ("adaptive", "fixed")
        for name in order:
            out = workdir / f"p{pair}-{name}"
            result = run_nasplan(plans[name], out)
            if "failed" in result:
                failures.append(f"pair {pair + 1}, {name}: {result['failed']}")
                continue
            walls[name].append(result["wall_s"])
            for cell_id, rates in cell_rates(out).items():
                entry = {"run": name, "pair": pair + 1, "n": len(rates)}
                if name == "adaptive":
                    entry.update(cell_rules(out)[cell_id])
                else:
                    entry.update(fixed_interval(rates))
                cells.setdefault(cell_id, []).append(entry)
        print(f"pair {pair + 1}/{pairs} done", file=sys.stderr)
    return {"walls_s": walls, "cells": cells, "failures": failures, "rule": rule}


def fixed_interval(rates: list[float]) -> dict[str, Any]:
    """What the fixed five tell: Student's t 95 % interval for n fixed in advance, its
    half-width from the median as the adaptive rule measures it."""
    found = t_interval(rates)
    if found is None:
        return {"statistic": None, "ci_halfwidth": None}
    return {"statistic": found.statistic, "ci_halfwidth": found.relative_halfwidth}


def record(state: LabState, rounds: int, workdir: Path, path: Path) -> None:
    """The matrix with ``rounds`` fixed repetitions; each cell's rates written to ``path``."""
    plans = {"series": workdir / "series.yaml"}
    plans["series"].write_text(yaml.safe_dump(plan(state, "series", rounds), sort_keys=False))
    result = run_nasplan(plans["series"], workdir / "series")
    if "failed" in result:
        raise SystemExit(f"the recording failed: {result['failed']}")
    iperf3 = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, check=False)
    document = {
        "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "how": f"bench/adaptive_matrix.py --record --rounds {rounds}: the 8-cell matrix, "
        f"{rounds} repetitions of {DURATION_S} s each, interleaved rounds",
        "iperf3": iperf3.stdout.splitlines()[0] if iperf3.stdout else None,
        "kernel": platform.release(),
        "unit": "bits_per_second",
        "series": cell_rates(workdir / "series"),
    }
    path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{sum(len(v) for v in document['series'].values())} rates written to {path}")


def _percent(value: float | None) -> str:
    return "-" if value is None else f"±{value * 100:.2f} %"


def table(results: dict[str, Any]) -> str:
    walls = results["walls_s"]
    lines = [
        f"8 cells, iperf3 {DURATION_S} s; fixed {FIXED} repetitions against "
        f"{json.dumps(results['rule'])}, in interleaved pairs",
        "",
        "| run | wall s (each) | median s | repetitions (each) |",
        "|---|---|---|---|",
    ]
    for name, values in walls.items():
        each = " / ".join(f"{v:.1f}" for v in values) or "none finished"
        median = f"{statistics.median(values):.1f}" if values else "-"
        counts: dict[int, int] = {}
        for entries in results["cells"].values():
            for e in (e for e in entries if e["run"] == name):
                counts[e["pair"]] = counts.get(e["pair"], 0) + e["n"]
        reps = " / ".join(str(counts[pair]) for pair in sorted(counts)) or "-"
        lines.append(f"| {name} | {each} | {median} | {reps} |")
    if walls["fixed"] and walls["adaptive"]:
        ratio = statistics.median(walls["adaptive"]) / statistics.median(walls["fixed"])
        verdict = "meets" if ratio <= GOAL_RATIO else "MISSES"
        lines += ["", f"adaptive / fixed: {ratio:.2f} ({verdict} the <= {GOAL_RATIO} goal)"]
    lines += [
        "",
        "| cell | adaptive: n, clear?, statistic, half-width (each run) | fixed 5: statistic, "
        "half-width (each run) |",
        "|---|---|---|",
    ]
    widest_clear = 0.0
    for cell_id, entries in sorted(results["cells"].items()):
        runs = []
        for e in (e for e in entries if e["run"] == "adaptive"):
            clear = "clear" if e["reached"] else "not reached"
            runs.append(f"{e['n']}, {clear}, {e['statistic']}, {_percent(e['ci_halfwidth'])}")
            if e["reached"]:
                widest_clear = max(widest_clear, e["ci_halfwidth"])
        fixed = [
            f"{e['statistic']}, {_percent(e['ci_halfwidth'])}"
            for e in entries
            if e["run"] == "fixed"
        ]
        lines.append(f"| {cell_id} | {'; '.join(runs)} | {'; '.join(fixed)} |")
    tight = "meets" if widest_clear <= GOAL_HALFWIDTH else "MISSES"
    lines += [
        "",
        f"widest clear cell: {_percent(widest_clear)} ({tight} the "
        f"{_percent(GOAL_HALFWIDTH)} goal)",
    ]
    lines += [f"FAILED: {failure}" for failure in results["failures"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--max", type=int, default=ADAPTIVE["max"], help="the rule's max")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--record", type=Path, help="record series to this file instead")
    parser.add_argument("--rounds", type=int, default=30, help="repetitions a cell, --record")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="nasplan-adaptive-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec()))
        state = lab.up(lab_file, workdir / "state")
        try:
            if args.record:
                record(state, args.rounds, workdir, args.record.resolve())
                return
            results = measure(state, args.pairs, workdir, {**ADAPTIVE, "max": args.max})
        finally:
            lab.down(lab_file, workdir / "state")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
