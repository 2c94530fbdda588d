"""nasplan against ansible-playbook on the same work, interleaved in one run on the lab (root).

The work: on two lab hosts, gather facts, make sure iperf3 is there (installed only where it is
missing), run one iperf3 test of ``--duration-s`` seconds (5: the server on one host, the client
on the other) and fetch its JSON result to this machine. nasplan does it with ``nasplan apply`` of
a one-test plan; Ansible with ``ansible-playbook`` of the playbook below, tuned as a careful user
would: pipelining on, the SSH connections kept for the whole run (ControlPersist, in a control
directory of each run's own, so no run inherits another's connections), the target's Python
named (no interpreter discovery), strict host-key checking against the lab's known_hosts.
Each runs as a fresh process (interpreter start and imports included: what a user waits for),
which goes first alternating round by round.

Overhead = wall time - the seconds iperf3 itself measured. Printed: each one's overhead (min /
median / max), the ratio of the medians, and the paired ratio (each round's Ansible overhead
over the nasplan overhead right beside it), whose median the goal (>= 5) is judged by.

Usage: .venv/bin/python bench/ansible_playbook.py [--rounds 5] [--duration-s 5] [--json FILE]
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
from overhead_floor import compile_package, run_nasplan, spread  # noqa: E402

GOAL_RATIO = 5.0
PORT = 5411
SERVER, CLIENT = "h01", "h02"


def lab_spec() -> dict[str, Any]:
    return {
        "name": "apb",
        "description": "two hosts on one 1G LAN: nasplan against ansible-playbook",
        "lan": {"prefix": "198.19.138.0/24", "rate": "1G"},
        "hosts": {name: {"personality": "debian"} for name in (SERVER, CLIENT)},
        "links": [],
    }


def nasplan_plan(state: LabState, duration_s: int) -> dict[str, Any]:
    """One iperf3 test, one repetition (nasplan gathers facts and ensures iperf3 itself)."""
    test = {
        "id": "tcp",
        "kind": "iperf3",
        "server": SERVER,
        "client": CLIENT,
        "duration_s": duration_s,
        "repetitions": 1,
    }
    return {"name": "ansible-same-work", "inventory": str(state.inventory_path), "tests": [test]}


def ansible_inventory(state: LabState) -> dict[str, Any]:
    """The two hosts as Ansible reaches them: the lab's key, strict host keys, python3."""
    strict = (
        f"-o UserKnownHostsFile={state.known_hosts_path} -o GlobalKnownHostsFile=/dev/null "
        "-o StrictHostKeyChecking=yes"
    )
    hosts = {name: {"ansible_host": state.hosts[name].ip} for name in (SERVER, CLIENT)}
    common = {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(state.identity_path),
        "ansible_ssh_common_args": strict,
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    return {"all": {"hosts": hosts, "vars": common}}


def playbook(duration_s: int, fetched: str) -> list[dict[str, Any]]:
    """Facts and iperf3 ensured on both hosts; a one-off server; the client's JSON fetched
    to ``fetched`` (a directory of this machine); the file removed from the client."""
    result = f"/tmp/nasplan-bench-iperf3-{PORT}.json"
    listening = (
        f"iperf3 -s -1 -D -p {PORT}\n"
        f"for _ in $(seq 50); do ss -ltn | grep -q ':{PORT} ' && exit 0; sleep 0.1; done; exit 1"
    )
    return [
        {
            "name": "facts and iperf3",
            "hosts": "all",
            "gather_facts": True,
            "tasks": [
                {
                    "name": "iperf3 is there (installed where missing)",
                    "ansible.builtin.shell": "command -v iperf3 || "
                    "DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3",
                    "changed_when": False,
                }
            ],
        },
        {
            "name": "server",
            "hosts": SERVER,
            "gather_facts": False,
            "tasks": [{"name": "a one-off iperf3 server", "ansible.builtin.shell": listening}],
        },
        {
            "name": "client",
            "hosts": CLIENT,
            "gather_facts": False,
            "tasks": [
                {
                    "name": "the client",
                    "ansible.builtin.command": (
                        f"iperf3 -c {{{{ hostvars['{SERVER}'].ansible_host }}}} -p {PORT} "
                        f"-t {duration_s} -J --logfile {result}"
                    ),
                },
                {
                    "name": "its JSON fetched",
                    "ansible.builtin.fetch": {"src": result, "dest": f"{fetched}/", "flat": True},
                },
                {"name": "removed", "ansible.builtin.file": {"path": result, "state": "absent"}},
            ],
        },
    ]


def run_ansible(workdir: Path, inventory: Path, book: Path, fetched: Path) -> dict[str, Any]:
    """``ansible-playbook`` as a new process: wall and the seconds iperf3 measured."""
    playbook_bin = Path(sys.executable).with_name("ansible-playbook")
    control = Path(tempfile.mkdtemp(prefix="cp-", dir=workdir))  # this run's connections only
    env = {
        **os.environ,
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control),
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-tmp"),
    }
    for stale in fetched.glob("*.json"):
        stale.unlink()
    started = time.perf_counter()
    done = subprocess.run(
        [str(playbook_bin), "-i", str(inventory), str(book)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall_s = time.perf_counter() - started
    # its ControlPersist masters go with the run (they would otherwise outlive it by 60 s)
    for socket_path in control.iterdir():
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "x"],
            capture_output=True,
            check=False,
        )
    if done.returncode != 0:
        tail = done.stdout.strip().splitlines()[-5:]
        print(f"ansible-playbook failed ({done.returncode}): {tail}", file=sys.stderr)
        return {"failed": f"exit {done.returncode}"}
    (result,) = fetched.glob("*.json")
    end = json.loads(result.read_text())["end"]
    return {
        "wall_s": wall_s,
        "measured_s": end["sum_sent"]["seconds"],
        "rates": [end["sum_received"]["bits_per_second"]],
    }


def measure(state: LabState, rounds: int, duration_s: int, workdir: Path) -> dict[str, Any]:
    plan_path = workdir / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(nasplan_plan(state, duration_s), sort_keys=False))
    inventory = workdir / "ansible-inventory.yaml"
    inventory.write_text(yaml.safe_dump(ansible_inventory(state), sort_keys=False))
    fetched = workdir / "fetched"
    fetched.mkdir()
    book = workdir / "playbook.yaml"
    book.write_text(yaml.safe_dump(playbook(duration_s, str(fetched)), sort_keys=False))
    overhead: dict[str, list[float]] = {"nasplan": [], "ansible": []}
    rates: dict[str, list[float]] = {"nasplan": [], "ansible": []}
    paired: list[float] = []
    failures: list[str] = []
    for index in range(rounds):
        order = ("nasplan", "ansible") if index % 2 == 0 else ("ansible", "nasplan")
        this_round: dict[str, float] = {}
        for who in order:
            if who == "nasplan":
                result = run_nasplan(plan_path, workdir / f"run-{index}")
            else:
                result = run_ansible(workdir, inventory, book, fetched)
            if "failed" in result:
                failures.append(f"{who}, round {index + 1}: {result['failed']}")
                continue
            this_round[who] = result["wall_s"] - result["measured_s"]
            overhead[who].append(this_round[who])
            rates[who] += result["rates"]
        if len(this_round) == 2:
            paired.append(this_round["ansible"] / this_round["nasplan"])
        print(f"round {index + 1}/{rounds} done", file=sys.stderr)
    return {"overhead": overhead, "paired": paired, "rates": rates, "failures": failures}


def table(results: dict[str, Any], duration_s: int) -> str:
    overhead, paired = results["overhead"], results["paired"]
    lines = [f"the same work (facts, iperf3 ensured, one {duration_s} s iperf3, its JSON fetched):"]
    for who in ("ansible", "nasplan"):
        if overhead[who]:
            lines.append(f"  {who} overhead s (min / median / max): {spread(overhead[who])}")
    if overhead["ansible"] and overhead["nasplan"]:
        ratio = statistics.median(overhead["ansible"]) / statistics.median(overhead["nasplan"])
        lines.append(f"  ratio of the medians (ansible / nasplan): {ratio:.2f}")
    if paired:
        median = statistics.median(paired)
        verdict = "meets" if median >= GOAL_RATIO else "MISSES"
        lines.append(
            f"  paired ratio, median (min / max): {median:.2f} "
            f"({min(paired):.2f} / {max(paired):.2f}); goal >= {GOAL_RATIO:g}: {verdict}"
        )
    for who in ("ansible", "nasplan"):
        if results["rates"][who]:
            rate = statistics.median(results["rates"][who]) / 1e6
            lines.append(f"  iperf3 median, {who}: {rate:.1f} Mbit/s")
    lines += [f"  FAILED (left out of the numbers): {f}" for f in results["failures"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration-s", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="nasplan-ansible-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(lab_spec()))
        state = lab.up(lab_file, workdir / "state")
        try:
            results = measure(state, args.rounds, args.duration_s, workdir)
        finally:
            lab.down(lab_file, workdir / "state")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results, args.duration_s))


if __name__ == "__main__":
    main()
