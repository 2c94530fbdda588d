"""Benchmark nasplan's own overhead in the lab (needs root): not a test, a measurement.

1. Fact gathering over a lab of N hosts (default 20): all hosts at once (connect + one round
   trip each), against the same work one host after another.
2. ``apply`` overhead: a plan of N/2 one-second iperf3 tests between host pairs; overhead is the
   wall time minus the time iperf3 itself ran, per host. Goal: under 1 s per host.

Usage: .venv/bin/python bench/apply_overhead.py [--hosts 20] [--keep-lab]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from nasplan import lab
from nasplan.apply import apply
from nasplan.facts import gather
from nasplan.hosts import close_sessions, open_sessions
from nasplan.inventory import load_inventory
from nasplan.plan import load_plan
from nasplan.progress import PlainProgress
from nasplan.ssh import connect

GOAL_OVERHEAD_PER_HOST_S = 1.0


class Quiet(PlainProgress):
    def _print(self, text: str) -> None:
        pass


def lab_spec(hosts: int) -> dict[str, object]:
    return {
        "name": "bench",
        "description": f"{hosts} hosts on one 1G LAN, for nasplan's overhead benchmark",
        "lan": {"prefix": "198.18.40.0/24", "rate": "1G"},
        "hosts": {f"h{i:02d}": {"personality": "debian"} for i in range(1, hosts + 1)},
        "links": [],
    }


def bench_facts(inventory_path: Path) -> dict[str, float]:
    inventory = load_inventory(inventory_path)
    started = time.perf_counter()
    sessions = open_sessions(inventory.hosts, Quiet())
    parallel_s = time.perf_counter() - started
    failed = [name for name, s in sessions.items() if s.error]
    close_sessions(sessions)
    if failed:
        raise SystemExit(f"facts failed on {failed}")
    per_host: list[float] = []
    round_trip: list[float] = []
    for host in inventory.hosts.values():
        t0 = time.perf_counter()
        runner = connect(host)
        t1 = time.perf_counter()
        gather(runner)
        t2 = time.perf_counter()
        runner.close()
        per_host.append(t2 - t0)
        round_trip.append(t2 - t1)
    return {
        "hosts": len(inventory.hosts),
        "parallel_wall_s": parallel_s,
        "sequential_wall_s": sum(per_host),
        "connect_plus_facts_median_s": statistics.median(per_host),
        "facts_round_trip_median_s": statistics.median(round_trip),
    }


def bench_apply(inventory_path: Path, hosts: int, workdir: Path) -> dict[str, float]:
    names = [f"h{i:02d}" for i in range(1, hosts + 1)]
    tests = [
        {
            "id": f"pair-{i // 2 + 1}",
            "kind": "iperf3",
            "server": names[i],
            "client": names[i + 1],
            "duration_s": 1,
            "repetitions": 1,
        }
        for i in range(0, len(names) - 1, 2)
    ]
    plan_path = workdir / "plan.yaml"
    plan_path.write_text(
        yaml.safe_dump({"name": "bench", "inventory": str(inventory_path), "tests": tests})
    )
    plan = load_plan(plan_path)
    started = time.perf_counter()
    outcome = apply(plan, Quiet(), out=workdir / "run")
    wall_s = time.perf_counter() - started
    run = json.loads((workdir / "run" / "run.json").read_text())
    iperf3_s = sum(
        rep.get("duration_s") or 0 for test in run["tests"] for rep in test["repetitions"]
    )
    return {
        "exit_code": outcome.exit_code,
        "hosts": len(plan.host_names),
        "tests": len(tests),
        "wall_s": wall_s,
        "iperf3_s": iperf3_s,
        "overhead_s": wall_s - iperf3_s,
        "overhead_per_host_s": (wall_s - iperf3_s) / len(plan.host_names),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--keep-lab", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nasplan-bench-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "bench-lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec(args.hosts)))
        state_dir = workdir / "state"
        t0 = time.perf_counter()
        state = lab.up(lab_file, state_dir)
        lab_up_s = time.perf_counter() - t0
        try:
            facts = bench_facts(state.inventory_path)
            applied = bench_apply(state.inventory_path, args.hosts, workdir)
        finally:
            if not args.keep_lab:
                lab.down(lab_file, state_dir)
    print(f"lab up, {args.hosts} hosts: {lab_up_s:.2f} s")
    print("fact gathering:")
    for key, value in facts.items():
        print(f"  {key:32} {value:.3f}" if isinstance(value, float) else f"  {key:32} {value}")
    print("apply:")
    for key, value in applied.items():
        print(f"  {key:32} {value:.3f}" if isinstance(value, float) else f"  {key:32} {value}")
    verdict = "meets" if applied["overhead_per_host_s"] < GOAL_OVERHEAD_PER_HOST_S else "MISSES"
    print(f"overhead per host {applied['overhead_per_host_s']:.3f} s: {verdict} the 1 s goal")


if __name__ == "__main__":
    main()
