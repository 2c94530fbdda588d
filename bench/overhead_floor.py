"""nasplan's overhead against the SSH floor, in one interleaved run on the lab (needs root).

The floor (bench/floor.py) does a plan's work with nothing but paramiko: connect every host with
strict host keys, run nasplan's facts script, then per test start a one-off iperf3 server, run the
client and fetch the JSON. nasplan does the same plan with ``nasplan apply``. Both run as fresh
processes (interpreter start and imports included: what a user waits for), alternating which goes
first, for ``--rounds`` rounds at each size (1, 2, 10, 30 hosts: a one-host plan is a fio test,
larger ones one 1 s iperf3 test per pair of hosts). Overhead = wall time - the seconds the tools
themselves measured. Also measured: facts for 30 hosts against facts for one host (in-process,
connect + facts round trip), and whether nasplan's iperf3 result stays within 1 % of the floor's
(iperf3 run by hand with the same flags on the same link).

Usage: .venv/bin/python bench/overhead_floor.py [--rounds 5] [--sizes 1,2,10,30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.facts.gather import TOOL_NAMES
from nasplan.hosts.session import close_sessions, open_sessions
from nasplan.input.inventory import load_inventory
from nasplan.lab import LabState
from nasplan.progress import PlainProgress
from nasplan.run.overlap import Overlap

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench/floor.py, for the floor's in-process facts
GOAL_RATIO = 1.5
GOAL_ACCURACY = 0.01
FIO_SIZE_BYTES = 16 * 2**20
FIO_DIRECTORY = "/var/tmp/nasplan-floor-fio"


class Quiet(PlainProgress):
    def _print(self, text: str) -> None:
        pass


def lab_spec(hosts: int) -> dict[str, Any]:
    return {
        "name": "bn",
        "description": f"{hosts} hosts on one 1G LAN: nasplan's overhead against the SSH floor",
        "lan": {"prefix": "198.19.128.0/24", "rate": "1G"},
        "hosts": {f"h{i:02d}": {"personality": "debian"} for i in range(1, hosts + 1)},
        "links": [],
    }


def host_names(size: int) -> list[str]:
    return [f"h{i:02d}" for i in range(1, size + 1)]


def plan_tests(size: int) -> list[dict[str, Any]]:
    """The plan's tests at one size: fio on the one host, else one iperf3 test per pair."""
    names = host_names(size)
    if size == 1:
        return [
            {
                "id": "disk",
                "kind": "disk",
                "host": names[0],
                "path": "/var/tmp",
                "direction": "write",
                "size": FIO_SIZE_BYTES,
                "direct": False,
                "repetitions": 1,
            }
        ]
    return [
        {
            "id": f"pair-{i // 2 + 1}",
            "kind": "iperf3",
            "server": names[i],
            "client": names[i + 1],
            "duration_s": 1,
            "repetitions": 1,
        }
        for i in range(0, size - 1, 2)
    ]


def floor_spec(state: LabState, size: int) -> dict[str, Any]:
    """bench/floor.py's input for the same hosts and tests."""
    hosts = {
        name: {
            "address": state.hosts[name].ip,
            "user": "root",
            "identity_file": str(state.identity_path),
            "known_hosts": str(state.known_hosts_path),
        }
        for name in host_names(size)
    }
    tests: list[dict[str, Any]] = []
    for index, test in enumerate(plan_tests(size)):
        if test["kind"] == "disk":
            tests.append(
                {
                    "id": test["id"],
                    "kind": "fio",
                    "host": test["host"],
                    "directory": FIO_DIRECTORY,
                    "argv": fio_argv(f"{FIO_DIRECTORY}/fio.bin"),
                }
            )
        else:
            tests.append(
                {
                    "id": test["id"],
                    "kind": "iperf3",
                    "server": test["server"],
                    "client": test["client"],
                    "address": state.hosts[test["server"]].ip,
                    "port": 5301 + index,
                    "duration_s": test["duration_s"],
                }
            )
    return {"hosts": hosts, "tests": tests}


def fio_argv(filename: str) -> list[str]:
    """The fio command nasplan's disk test runs for this workload (same flags, same size)."""
    from nasplan.measure.tools import fio

    params = fio.FioParams(rw="write", size_bytes=FIO_SIZE_BYTES, direct=False)
    return fio.fio_argv("fio", filename, params)


def children_cpu_s() -> float:
    """User + system CPU seconds of every child process waited for so far (this machine's)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_floor(spec: dict[str, Any]) -> dict[str, Any]:
    cpu_s = children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HERE / "floor.py"), json.dumps(list(TOOL_NAMES))],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        check=False,
    )
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"floor failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    result.update(wall_s=wall_s, cpu_s=children_cpu_s() - cpu_s)
    return result


def run_nasplan(plan_path: Path, out: Path, extra: Sequence[str] = ()) -> dict[str, Any]:
    """``nasplan apply PLAN --out OUT [extra...]`` as a new process: wall and measured seconds."""
    nasplan = Path(sys.executable).with_name("nasplan")
    cpu_s = children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(
        [str(nasplan), "apply", str(plan_path), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TERM": "dumb"},
    )
    wall_s = time.perf_counter() - started
    cpu_s = children_cpu_s() - cpu_s
    if done.returncode != 0:
        # said, kept out of the numbers, and counted in the table (not hidden by a retry)
        failed = [line for line in done.stderr.splitlines() if "failed" in line or "lost" in line]
        print(f"nasplan apply failed ({done.returncode}): {failed[-3:]}", file=sys.stderr)
        return {"failed": f"exit {done.returncode}: {'; '.join(failed[-2:])}"}
    run = json.loads((out / "run.json").read_text())
    measured_s, rates = 0.0, []
    for test in run["tests"]:
        for rep in test["repetitions"]:
            measured_s += rep.get("duration_s") or 0
            if rep.get("bits_per_second"):
                rates.append(rep["bits_per_second"])
    return {"wall_s": wall_s, "cpu_s": cpu_s, "measured_s": measured_s, "rates": rates}


def floor_facts_wall_s(state: LabState, names: Sequence[str]) -> float:
    """The floor's connect + facts round trip on ``names`` at once (paramiko only, in-process)."""
    import floor

    spec = floor_spec(state, len(names))["hosts"]
    script = shlex.join(["sh", "-c", floor.facts_script(list(TOOL_NAMES))])
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        clients = list(pool.map(floor.connect, (spec[name] for name in names)))
        list(pool.map(lambda client: floor.run(client, script), clients))
    wall_s = time.perf_counter() - started
    for client in clients:
        client.close()
    return wall_s


def compile_package() -> None:
    """Byte-compile nasplan once, as an installed package is: a checkout installed in editable
    mode under PYTHONDONTWRITEBYTECODE would otherwise compile every module at every start."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    package = Path(__file__).resolve().parents[1] / "nasplan"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)


def facts_wall_s(inventory_path: Path, names: Sequence[str]) -> float:
    """Connect + facts + platform detection on ``names`` at once (nasplan's own code)."""
    inventory = load_inventory(inventory_path)
    hosts = {name: inventory.hosts[name] for name in names}
    started = time.perf_counter()
    sessions = open_sessions(hosts, Quiet(), tasks=Overlap.concurrent())
    wall_s = time.perf_counter() - started
    failed = [name for name, s in sessions.items() if s.error]
    close_sessions(sessions)
    if failed:
        raise SystemExit(f"facts failed on {failed}")
    return wall_s


def spread(values: Sequence[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def measure(state: LabState, sizes: Sequence[int], rounds: int, workdir: Path) -> dict[str, Any]:
    plans: dict[int, Path] = {}
    for size in sizes:
        plan_path = workdir / f"plan-{size}.yaml"
        plan = {"name": f"floor-{size}", "inventory": str(state.inventory_path)}
        plan["tests"] = plan_tests(size)  # type: ignore[assignment]
        plan_path.write_text(yaml.safe_dump(plan, sort_keys=False))
        plans[size] = plan_path
    overhead: dict[int, dict[str, list[float]]] = {
        size: {"floor": [], "nasplan": []} for size in sizes
    }
    # the control node's CPU seconds (user + system) of each process, by size
    cpu: dict[int, dict[str, list[float]]] = {size: {"floor": [], "nasplan": []} for size in sizes}
    # each round's nasplan / floor overhead, the two run one right after the other
    paired: dict[int, list[float]] = {size: [] for size in sizes}
    accuracy: dict[str, list[float]] = {"floor": [], "nasplan": []}
    facts: dict[int, list[float]] = {1: [], max(sizes): []}
    floor_facts: dict[int, list[float]] = {1: [], max(sizes): []}
    failures: list[str] = []
    for round_index in range(rounds):
        for size in sizes:
            order = ("floor", "nasplan") if (round_index + size) % 2 == 0 else ("nasplan", "floor")
            this_round: dict[str, float] = {}
            for who in order:
                if who == "floor":
                    result = run_floor(floor_spec(state, size))
                    rates = [t.get("bits_per_second") for t in result["tests"]]
                    rates = [rate for rate in rates if rate]
                else:
                    out = workdir / f"run-{size}-{round_index}"
                    result = run_nasplan(plans[size], out)
                    if "failed" in result:
                        where = f"{size} hosts, round {round_index + 1}"
                        failures.append(f"{where}: {result['failed']}")
                        continue
                    rates = result["rates"]
                this_round[who] = result["wall_s"] - result["measured_s"]
                overhead[size][who].append(this_round[who])
                cpu[size][who].append(result["cpu_s"])
                if size == 2:
                    accuracy[who].extend(rates)
            if len(this_round) == 2:
                paired[size].append(this_round["nasplan"] / this_round["floor"])
        for size in facts:
            facts[size].append(facts_wall_s(state.inventory_path, host_names(size)))
            floor_facts[size].append(floor_facts_wall_s(state, host_names(size)))
        print(f"round {round_index + 1}/{rounds} done", file=sys.stderr)
    return {
        "overhead": overhead,
        "cpu": cpu,
        "paired": paired,
        "accuracy": accuracy,
        "facts": facts,
        "floor_facts": floor_facts,
        "failures": failures,
    }


def table(results: dict[str, Any]) -> str:
    # The verdict goes by the paired ratio: each round's nasplan and floor run one right after
    # the other, so the machine's drift over minutes (the floor's own median moves by 0.3 s
    # between runs on the lab's 2 cores) cancels within a pair, not between the medians.
    lines = [
        "| hosts | floor overhead s (min / median / max) | nasplan overhead s (min / median / max)"
        " | ratio of the medians | paired ratio, median (min / max) | goal <= 1.5 |",
        "|---|---|---|---|---|---|",
    ]
    for size, sides in results["overhead"].items():
        ratio = statistics.median(sides["nasplan"]) / statistics.median(sides["floor"])
        pairs = results["paired"].get(size) or [ratio]
        paired = statistics.median(pairs)
        verdict = "meets" if paired <= GOAL_RATIO else "MISSES"
        lines.append(
            f"| {size} | {spread(sides['floor'])} | {spread(sides['nasplan'])} "
            f"| {ratio:.2f} | {paired:.2f} ({min(pairs):.2f} / {max(pairs):.2f}) | {verdict} |"
        )
    lines.append("")
    for size, sides in results["cpu"].items():
        lines.append(
            f"control node CPU s (user + system), {size} hosts: floor {spread(sides['floor'])}, "
            f"nasplan {spread(sides['nasplan'])}"
        )
    # Connect + facts of many hosts against one: no goal of its own (the floor, one facts script
    # a host in parallel, is ~8x on the lab's one machine), but nasplan's against the floor's.
    many_medians: dict[str, float] = {}
    for who, key in (("nasplan", "facts"), ("floor", "floor_facts")):
        (_, one_s), (many, many_s) = sorted(results[key].items())
        many_medians[who] = statistics.median(many_s)
        ratio = many_medians[who] / statistics.median(one_s)
        lines.append(
            f"facts, {who} (connect + facts round trip, in-process): 1 host {spread(one_s)} s; "
            f"{many} hosts {spread(many_s)} s; ratio {ratio:.2f}"
        )
    lines.append(
        f"facts at {many} hosts, nasplan's median against the floor's: "
        f"{many_medians['nasplan'] / many_medians['floor']:.2f} (goal <= {GOAL_RATIO})"
    )
    floor_rates, nasplan_rates = results["accuracy"]["floor"], results["accuracy"]["nasplan"]
    if floor_rates and nasplan_rates:
        floor_median = statistics.median(floor_rates)
        difference = statistics.median(nasplan_rates) / floor_median - 1
        lines.append(
            f"iperf3 median on the 2-host link: by hand {floor_median / 1e6:.1f} Mbit/s, "
            f"nasplan {statistics.median(nasplan_rates) / 1e6:.1f} Mbit/s ({difference:+.2%}; "
            f"{'within' if abs(difference) <= GOAL_ACCURACY else 'OUTSIDE'} the 1 % bound)"
        )
    for failure in results["failures"]:
        lines.append(f"nasplan apply FAILED (left out of the numbers): {failure}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="1,2,10,30")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    compile_package()
    with tempfile.TemporaryDirectory(prefix="nasplan-floor-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec(max(sizes))))
        state = lab.up(lab_file, workdir / "state")
        try:
            results = measure(state, sizes, args.rounds, workdir)
        finally:
            lab.down(lab_file, workdir / "state")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
