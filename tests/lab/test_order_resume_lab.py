"""The order of a run's repetitions and ``apply --resume`` against the lab: an interleaved plan
of three 1 s iperf3 tests, whose run.json shows the rounds; a run stopped by Ctrl-C after its
first round and resumed to the end in its own directory, nothing left on the hosts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testinfra
import yaml
from lab_helpers import nic_state

from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "orderlab",
    "lan": {"prefix": "198.19.188.0/24", "rate": "1G"},
    "hosts": {
        "ornas": {"personality": "debian"},
        "orws": {"personality": "debian"},
        "orpc": {"personality": "debian"},
    },
    "links": [
        {"name": "p2p", "rate": "10G", "mtu": 1500,
         "a": {"host": "ornas", "interface": "eth1", "address": "198.19.189.1/30"},
         "b": {"host": "orws", "interface": "eth1", "address": "198.19.189.2/30"}},
    ],
}  # fmt: skip
ENV = {"PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def write_plan(state: LabState, directory: Path, repetitions: int, **top: Any) -> Path:
    pairs = [("a", "ornas", "orws"), ("b", "orws", "orpc"), ("c", "orpc", "ornas")]
    tests = [
        {"id": name, "kind": "iperf3", "server": server, "client": client, "duration_s": 1,
         "repetitions": repetitions}
        for name, server, client in pairs
    ]  # fmt: skip
    plan = {"name": "order", "inventory": str(state.inventory_path), **top, "tests": tests}
    path = directory / "order.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def nasplan(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nasplan", *args],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV},
    )


# The iperf3 processes in the lab host's own network namespace (the lab's hosts share the
# machine's PID space with other labs).
_OWN_IPERF3 = r"""
self=$(readlink /proc/self/ns/net)
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$self" ] || continue
  line=$(tr '\000' ' ' < "$p/cmdline" 2>/dev/null)
  case $line in iperf3\ *|*/iperf3\ *) echo "$line" ;; esac
done
"""


def leftovers(state: LabState) -> set[str]:
    """nasplan's processes (an iperf3 is nasplan's) and /tmp files on each lab host, over SSH."""
    found: set[str] = set()
    for name in state.hosts:
        host = testinfra.get_host(f"ssh://{name}", ssh_config=str(state.ssh_config_path))
        processes = host.check_output(_OWN_IPERF3)
        found |= {f"{name}: {line}" for line in processes.splitlines()}
        found |= {f"{name}: {f}" for f in host.check_output("ls -d /tmp/nasplan-* || true").split()}
    return found


def test_an_interleaved_plan_runs_its_tests_in_rounds(lab: LabState, tmp_path: Path) -> None:
    plan = write_plan(lab, tmp_path, repetitions=2)

    proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["order"] == "interleaved" and isinstance(run["seed"], int)
    assert run["sequence"] == [["a", 1], ["b", 1], ["c", 1], ["a", 2], ["b", 2], ["c", 2]]
    for test in run["tests"]:
        starts = [rep["started_s"] for rep in test["repetitions"]]
        assert test["status"] == "ok" and starts == sorted(starts)
        # the second repetition waited for a round of the other two tests (2 x ~1 s)
        assert starts[1] - test["repetitions"][0]["ended_s"] > 1.5, test["id"]
        assert test["summary"]["n"] == 2 and test["summary"]["median"] > 100e6
    assert "test 2 of 3" in err  # where the run stands, on the console
    assert leftovers(lab) == set()


def test_a_run_stopped_after_its_first_round_is_resumed_to_the_end(
    lab: LabState, tmp_path: Path
) -> None:
    plan = write_plan(lab, tmp_path, repetitions=3, order="shuffled", seed=11)
    run_dir = tmp_path / "run"
    proc = nasplan("apply", str(plan), "--out", str(run_dir))
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:  # the first test of the second round has begun
        seen += line
        if "repetition 2/3" in line:
            proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + err
    stopped = json.loads((run_dir / "run.json").read_text())
    assert stopped["status"] == "interrupted" and stopped["seed"] == 11
    first_round = stopped["sequence"][:3]
    assert sorted(first_round) == [["a", 1], ["b", 1], ["c", 1]]
    assert {len(t["repetitions"]) for t in stopped["tests"]} <= {1, 2}
    assert leftovers(lab) == set(), "the interrupted run left something"

    resumed = nasplan("apply", "--resume", str(run_dir))
    out, err = resumed.communicate(timeout=120)

    assert resumed.returncode == 0, err
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "ok" and run["started_at"] == stopped["started_at"]
    assert len(run["resumed_at"]) == 1 and run["seed"] == 11
    assert run["sequence"][: len(stopped["sequence"])] == stopped["sequence"]
    for test in run["tests"]:
        assert test["status"] == "ok", test["error"]
        assert [r["index"] for r in test["repetitions"]] == [1, 2, 3]
        assert all(r["status"] == "ok" for r in test["repetitions"])
        for rep in test["repetitions"]:
            assert (run_dir / rep["raw_file"]).is_file()
    report = (run_dir / "report.md").read_text()
    assert "Run status: **ok**" in report
    assert leftovers(lab) == set()

    again = nasplan("apply", "--resume", str(run_dir))
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0 and out.startswith("nothing to do"), out + err


def test_cells_with_their_own_mtu_run_group_by_group_each_put_back(
    lab: LabState, tmp_path: Path
) -> None:
    before = {name: nic_state(lab, name) for name in ("ornas", "orws")}
    iperf3 = {"kind": "iperf3", "server": "ornas", "client": "orws", "target": "ornas.p2p",
              "duration_s": 1, "repetitions": 2}  # fmt: skip
    plan = {
        "name": "order-mtu",
        "inventory": str(lab.inventory_path),
        "matrix": {"mtu": [9000, 1500]},
        "network": {"confirm_timeout_s": 20},
        "interfaces": [
            {"host": "ornas", "interface": "p2p", "mtu": "{{ matrix.mtu }}"},
            {"host": "orws", "interface": "p2p", "mtu": "{{ matrix.mtu }}"},
        ],
        "tests": [{**iperf3, "id": "up"}, {**iperf3, "id": "down", "reverse": True}],
    }
    path = tmp_path / "order-mtu.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))

    proc = nasplan("apply", str(path), "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=180)

    assert proc.returncode == 0, err
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    cells = {t["id"]: t["cell"]["mtu"] for t in run["tests"]}
    assert len(cells) == 4 and all(t["status"] == "ok" for t in run["tests"])
    # the cells of one MTU ran together (interleaved), then the other's
    mtus = [cells[test_id] for test_id, _ in run["sequence"]]
    assert len(mtus) == 8 and len(set(mtus[:4])) == 1 and len(set(mtus[4:])) == 1
    assert mtus[0] != mtus[4]
    groups = [*run["network"]["groups"], run["network"]]
    applied = [
        {state["mtu_bytes"] for state in group["hosts"]["ornas"]["applied"].values()}
        for group in groups
    ]
    assert applied == [{mtus[0]}, {mtus[4]}]
    assert all(group["hosts"]["ornas"]["status"] == "restored" for group in groups)
    assert {name: nic_state(lab, name) for name in ("ornas", "orws")} == before
    assert leftovers(lab) == set()
