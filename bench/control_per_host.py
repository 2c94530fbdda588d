"""The control node's CPU and memory per host, as lines fitted up to 60 hosts (needs root).

One ``nasplan apply`` a size, as a fresh process, of the plan overhead_floor.py runs (one 1 s
iperf3 test per pair of hosts, one after another), on a lab of one 1G LAN. For each process
the CPU seconds it used on this machine (user + system, from ``wait4``) and its peak resident
memory (``ru_maxrss``). A line ``a + b x hosts`` is fitted by least squares to each, over
every run at every size (``--rounds`` runs a size, the sizes interleaved); printed: the line,
each size's median and its residual from the line (median - line), and R².

The hosts of the lab share this machine's cores with nasplan: the CPU is nasplan's own, its
wall time is not what a plan over real hosts would take.

Usage: .venv/bin/python bench/control_per_host.py [--rounds 3] [--sizes 2,10,20,30,40,60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from nasplan import lab

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import overhead_floor  # noqa: E402  (its plan, a pair of hosts a test)

LAB_PREFIX = "198.19.160.0/24"


def lab_spec(hosts: int) -> dict[str, Any]:
    return {
        "name": "bq",
        "description": f"{hosts} hosts on one 1G LAN: the control node's cost per host",
        "lan": {"prefix": LAB_PREFIX, "rate": "1G"},
        "hosts": {f"h{i:02d}": {"personality": "debian"} for i in range(1, hosts + 1)},
        "links": [],
    }


def plan(size: int, inventory: Path) -> dict[str, Any]:
    """overhead_floor.py's plan at ``size`` hosts (an even number: one iperf3 test a pair)."""
    tests = overhead_floor.plan_tests(size)
    return {"name": f"per-host-{size}", "inventory": str(inventory), "tests": tests}


def _drain(stream: IO[bytes], into: list[bytes]) -> None:
    into.append(stream.read())


def apply_cost(plan_path: Path, out: Path) -> dict[str, float] | None:
    """CPU seconds, peak memory (MiB) and wall seconds of one ``nasplan apply`` process; None
    when it failed (said on stderr)."""
    nasplan = Path(sys.executable).with_name("nasplan")
    argv = [str(nasplan), "apply", str(plan_path), "--out", str(out)]
    started = time.perf_counter()
    child = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TERM": "dumb"},
    )
    assert child.stderr is not None
    said: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(child.stderr, said))
    reader.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall_s = time.perf_counter() - started
    reader.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = b"".join(said).decode(errors="replace").strip().splitlines()[-2:]
        print(f"nasplan apply failed ({child.returncode}): {tail}", file=sys.stderr)
        return None
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,  # KiB on Linux
        "wall_s": wall_s,
    }


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """The least-squares line ``a + b x`` through ``points``: (a, b, R²)."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    b = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    a = mean_y - b * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    left = sum((y - a - b * x) ** 2 for x, y in points)
    return a, b, 1 - left / total if total else 1.0


def lines(runs: dict[int, list[dict[str, float]]]) -> str:
    out = []
    for key, label, unit in (("cpu_s", "CPU (user + system)", "s"), ("rss_mib", "peak RSS", "MiB")):
        points = [(float(size), run[key]) for size, done in runs.items() for run in done]
        a, b, r2 = fit(points)
        out.append(f"{label}: {a:.3f} {unit} + {b:.4f} {unit} x hosts (R² {r2:.3f})")
        out.append(f"| hosts | runs | median {unit} | line {unit} | residual {unit} |")
        out.append("|---|---|---|---|---|")
        for size, done in sorted(runs.items()):
            median = statistics.median(run[key] for run in done)
            line = a + b * size
            out.append(
                f"| {size} | {len(done)} | {median:.3f} | {line:.3f} | {median - line:+.3f} |"
            )
        out.append("")
    walls = {size: statistics.median(run["wall_s"] for run in done) for size, done in runs.items()}
    out.append(
        "wall s, median: " + ", ".join(f"{s} hosts {w:.2f}" for s, w in sorted(walls.items()))
    )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="2,10,20,30,40,60")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if any(size < 2 or size % 2 for size in sizes):
        parser.error("--sizes: even numbers of hosts, 2 or more")
    runs: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory(prefix="nasplan-per-host-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec(max(sizes))))
        state = lab.up(lab_file, workdir / "state")
        try:
            plans = {}
            for size in sizes:
                plans[size] = workdir / f"plan-{size}.yaml"
                plans[size].write_text(yaml.safe_dump(plan(size, state.inventory_path)))
            for round_index in range(args.rounds):
                for size in sizes if round_index % 2 == 0 else reversed(sizes):
                    cost = apply_cost(plans[size], workdir / f"run-{size}-{round_index}")
                    if cost is not None:
                        runs[size].append(cost)
                print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            lab.down(lab_file, workdir / "state")
    print(lines({size: done for size, done in runs.items() if done}))


if __name__ == "__main__":
    main()
