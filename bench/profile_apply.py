"""Where the time of one ``nasplan apply`` goes, named (needs root: it uses the lab).

Runs a two-host plan (one 1 s iperf3 test) on a small lab, in-process, after a warm-up run, with
every SSH command nasplan sends timed and named by what it is (the facts script, a tool check, the
iperf3 server start and readiness wait, the client, the server stop and log fetch, the resource
sampler's start and stop) and the local steps timed (connections, run.json, report). Import time
is measured in a fresh interpreter. Prints a table; bench/README.md keeps one before and after.

With ``--hosts N`` (even, up to 30) the plan has N/2 such tests, one per pair of hosts, run one
after another as a plan's tests are; the phase rows ("wall") then show the critical path: the
summed rows add up over hosts, the wall rows do not.

Usage: .venv/bin/python bench/profile_apply.py [--repeat 5] [--hosts 2]
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from nasplan import lab
from nasplan.input.plan import load_plan
from nasplan.progress import PlainProgress
from nasplan.remote import ssh
from nasplan.run.apply import apply
from nasplan.run.request import RunRequest

# What a remote command is, from its text (first match wins).
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # the facts script takes the host lock in the same round trip
    ("facts round trip (with the lock's take)", re.compile(r"nasplan_section hostname")),
    ("host lock: renew, release", re.compile(r'nasplan_owns "\$nasplan_dir/owner"')),
    # the server host's sampler rides along in the server's start and stop (before: its own)
    ("iperf3 server start + readiness", re.compile(r"-s -1 -D|\$iperf3\" -s")),
    ("iperf3 server stop + log", re.compile(r"pidfile")),
    # the client host's sampler rides in the client's script (before: round trips of its own)
    ("iperf3 client", re.compile(r"iperf3\S* -J -c ")),
    ("sampler start", re.compile(r"nasplan-sampler")),
    ("sampler stop", re.compile(r'rm -f "\$flag"')),
    ("tool checks / installs", re.compile(r"--version|apt-get|opkg|synogear|command -v")),
)


# the run's phases (``Outcome.spans``) as the table names them
PHASES = {
    "open_hosts": "connect + facts + lock, all hosts",
    "prepare": "tool checks",
    "network": "network changes",
    "paths": "routes asked",
    "tests": "tests",
    "conclude": "conclusion (last teardown settled, verdicts, diagnosis)",
    "finish": "teardown, run.json + report at the end",
}
# the run's tail: from the last client's result to the report written
TAIL = ("conclude", "finish")


class Quiet(PlainProgress):
    def _print(self, text: str) -> None:
        pass


class Timings:
    """Thread-safe (phase -> durations) of everything timed during one apply."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: dict[str, list[float]] = defaultdict(list)
        # (phase, started, ended) of every remote command: the steps between two clients
        self.events: list[tuple[str, float, float]] = []

    def add(self, phase: str, seconds: float) -> None:
        with self.lock:
            self.spans[phase].append(seconds)
            self.events.append((phase, time.perf_counter() - seconds, time.perf_counter()))

    def wrap(
        self, phase: str | Callable[..., str], function: Callable[..., Any]
    ) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                name = phase(*args, **kwargs) if callable(phase) else phase
                self.add(name, time.perf_counter() - started)

        return timed


CLIENT = "iperf3 client"
START, STOP = "iperf3 server start + readiness", "iperf3 server stop + log"


def steps_ms(events: list[tuple[str, float, float]]) -> dict[str, list[float]]:
    """From one client's end to the next one's start, per test (ms): the whole gap, what of it
    lies before the next server's start begins, the start itself, and from the server
    listening to the client's start (the previous teardown waited for, the samplers)."""
    clients = sorted((start, end) for phase, start, end in events if phase == CLIENT)
    starts = sorted((start, end) for phase, start, end in events if phase == START)
    out: dict[str, list[float]] = defaultdict(list)
    for (_, ended), (begun, _) in itertools.pairwise(clients):
        server = [s for s in starts if ended <= s[0] <= begun]
        out["gap: client end to the next client's start"].append((begun - ended) * 1e3)
        if server:
            out["... to the next server's start"].append((server[0][0] - ended) * 1e3)
            out["... the server's start and readiness"].append((server[0][1] - server[0][0]) * 1e3)
            out["... server listening to the client's start"].append((begun - server[0][1]) * 1e3)
    stops = [end - start for phase, start, end in events if phase == STOP]
    out["a server's stop (beside the next test's start)"] = [s * 1e3 for s in stops]
    return out


def command_kind(_runner: Any, command: str, *_: Any, **__: Any) -> str:
    for name, pattern in KINDS:
        if pattern.search(command):
            return name
    return "other remote commands"


@contextmanager
def instrumented(timings: Timings) -> Iterator[None]:
    """Time SshRunner's exec paths, connections, run.json and the report while inside."""
    from fabric import Connection

    from nasplan.report import render
    from nasplan.run.checkpoint import RunSaver

    patches: list[tuple[Any, str, Any]] = [
        (ssh.SshRunner, "_exec", timings.wrap(command_kind, ssh.SshRunner._exec)),
        # an iperf3 >= 3.7 server is launched on its own channel, until it says it listens
        (ssh.SshRunner, "start_until", timings.wrap(command_kind, ssh.SshRunner.start_until)),
        (Connection, "open", timings.wrap("connect (TCP, SSH handshake, auth)", Connection.open)),
        (RunSaver, "save", timings.wrap("run.json", RunSaver.save)),
        (render, "write_report", timings.wrap("report.md", render.write_report)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def import_seconds(tries: int = 5) -> dict[str, float]:
    """Fresh-interpreter import time of the CLI and of what an apply imports, the report's
    modules included (imported when it writes the report): the least of ``tries`` runs."""
    out: dict[str, float] = {}
    for label, modules in (
        ("import nasplan.cli", "nasplan.cli"),
        ("import what apply needs (report included)", "nasplan.run.apply, nasplan.report.render"),
    ):
        runs = []
        for _ in range(tries):
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import {modules}"],
                capture_output=True,
                text=True,
                check=True,
            )
            total = 0
            for line in done.stderr.splitlines():
                parts = line.split("|")
                top = not parts[-1].startswith("  ")
                if len(parts) == 3 and top and parts[1].strip().isdigit():
                    total += int(parts[1].strip())
            runs.append(total / 1e6)
        out[label] = min(runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hosts", type=int, default=2, help="an even number, 2 to 30")
    args = parser.parse_args()
    if args.hosts < 2 or args.hosts > 30 or args.hosts % 2:
        parser.error("--hosts: an even number from 2 to 30")
    names = [f"h{index:02d}" for index in range(1, args.hosts + 1)]
    spec = {
        "name": "bp",
        "description": f"{args.hosts} hosts on a 1G LAN: where one apply's time goes",
        "lan": {"prefix": "198.19.129.0/24", "rate": "1G"},
        "hosts": {name: {"personality": "debian"} for name in names},
        "links": [],
    }
    walls: list[float] = []
    per_run: dict[str, list[float]] = defaultdict(list)
    steps: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="nasplan-profile-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(spec))
        state = lab.up(lab_file, workdir / "state")
        try:
            plan_path = workdir / "plan.yaml"
            tests = [
                {
                    "id": f"t{index // 2 + 1}",
                    "kind": "iperf3",
                    "server": names[index],
                    "client": names[index + 1],
                    "duration_s": 1,
                    "repetitions": 1,
                }
                for index in range(0, len(names), 2)
            ]
            plan = {"name": "bp", "inventory": str(state.inventory_path), "tests": tests}
            plan_path.write_text(yaml.safe_dump(plan))
            loaded = load_plan(plan_path)
            apply(RunRequest(loaded, out=workdir / "warm-up"), Quiet())
            for index in range(args.repeat):
                timings = Timings()
                started = time.perf_counter()
                load_plan(plan_path)  # (validated before: the memo spares jsonschema)
                timings.add("start-up: plan and inventory loaded", time.perf_counter() - started)
                with instrumented(timings):
                    started = time.perf_counter()
                    outcome = apply(RunRequest(loaded, out=workdir / f"run-{index}"), Quiet())
                    walls.append(time.perf_counter() - started)
                # the run's phases, as it timed them (``Outcome.spans``)
                for phase, seconds in outcome.spans.items():
                    timings.add(f"wall: {PHASES.get(phase, phase)}", seconds)
                tail = sum(outcome.spans.get(phase, 0.0) for phase in TAIL)
                timings.add("tail: the last test's end to the report written", tail)
                for phase, spans in timings.spans.items():
                    per_run[phase].append(sum(spans))
                for step, values in steps_ms(timings.events).items():
                    steps[step] += values
        finally:
            lab.down(lab_file, workdir / "state")
    print("| step | seconds per apply (median; summed over hosts) |")
    print("|---|---|")
    for label, seconds in import_seconds().items():
        print(f"| {label} (fresh interpreter) | {seconds:.3f} |")
    for phase, values in sorted(per_run.items(), key=lambda item: -statistics.median(item[1])):
        print(f"| {phase} | {statistics.median(values):.3f} |")
    wall = statistics.median(walls)
    print(f"| **apply wall time** (in-process, {len(names) // 2} s of iperf3) | {wall:.3f} |")
    if steps:
        print("\n| between two tests, ms | median | min / max | n |\n|---|---|---|---|")
        for step, values in steps.items():
            low, high = min(values), max(values)
            median = statistics.median(values)
            print(f"| {step} | {median:.1f} | {low:.1f} / {high:.1f} | {len(values)} |")


if __name__ == "__main__":
    main()
