"""Faults a run lives through or ends cleanly, each with every host read back over SSH after it:
an outage of the NAS's SSH path shorter and longer than its lease, the NAS rebooting mid-run,
nasplan itself stopped for longer than a lease, packet loss on the SSH path through a matrix,
a run directory that fills up, two ``--resume`` of one run at once, what a killed run leaves.
Short leases (environment) keep each case to seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import is_file, leftovers, nic_state

from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
FAST = {
    "NASPLAN_CONNECT_S": "2",
    "NASPLAN_CHANNEL_S": "2",
    "NASPLAN_RECONNECT_GRACE_S": "2",
    "NASPLAN_LEASE_S": "4",
    "NASPLAN_RENEW_S": "1",
    "PYTHONUNBUFFERED": "1",
}
LAB = {
    "name": "f4lab",
    "lan": {"prefix": "198.19.176.0/24", "rate": "1G"},
    "hosts": {"f4nas": {"personality": "debian"}, "f4ws": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "a": {"host": "f4nas", "interface": "eth1"},
            "b": {"host": "f4ws", "interface": "eth1"},
        }
    ],
}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def iperf3_test(test_id: str, duration_s: int, repetitions: int, **more: Any) -> dict[str, Any]:
    return {
        "id": test_id,
        "kind": "iperf3",
        "server": "f4nas",
        "client": "f4ws",
        "duration_s": duration_s,
        "repetitions": repetitions,
        **more,
    }


def write_plan(state: LabState, directory: Path, name: str, tests: list[Any], **more: Any) -> Path:
    plan = {"name": name, "inventory": str(state.inventory_path), "tests": tests, **more}
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


JUMBO = {
    "network": {"confirm_timeout_s": 10},
    "links": [
        {
            "name": "p2p",
            "a": {"host": "f4nas", "interface": "p2p"},
            "b": {"host": "f4ws", "interface": "p2p"},
            "prefix": "198.19.177.0/30",
            "mtu": 9000,
        }
    ],
}


def nasplan(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nasplan", *args],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **FAST, **env},
    )


def wait_for(proc: subprocess.Popen[str], text: str) -> str:
    """Read the progress lines until one contains ``text``; return what was read."""
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:
        seen += line
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never came:\n{seen}")


def finish(proc: subprocess.Popen[str], seen: str = "", timeout_s: float = 120) -> str:
    _, err = proc.communicate(timeout=timeout_s)
    return seen + err


def states(state: LabState) -> dict[str, Any]:
    return {name: nic_state(state, name) for name in state.hosts}


def settle(state: LabState, before: set[str], timeout_s: float = 15) -> set[str]:
    """What nasplan left beyond ``before``, once processes had a lease to stop by themselves."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = leftovers(state) - before
        if not any(not is_file(x) for x in left) or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def run_json(run_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return loaded


def link(state: LabState, host: str, up: bool) -> None:
    """The host's LAN link (its SSH path) set down or up at the lab's own root-side port."""
    port = state.hosts[host].lan_root_side
    subprocess.run(["ip", "link", "set", "dev", port, "up" if up else "down"], check=True)


# An outage of the NAS's SSH path (its LAN link down, sshd untouched). With a 12 s lease, an
# 8 s outage is survived: after it, TCP retransmits on the run's connection only after a
# backoff (about as long again as the outage: past the lease), so renewals go through a new
# connection. A 16 s outage outlives the lease: the host is lost, said at the lease's end.
@pytest.mark.parametrize(
    ("outage_s", "survived"),
    [(8, True), (16, False)],
    ids=["shorter-than-the-lease", "longer-than-the-lease"],
)
def test_an_outage_of_the_nas_ssh_path(
    lab: LabState, tmp_path: Path, outage_s: float, survived: bool
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    tests = [iperf3_test("a", 3, 3), iperf3_test("b", 3, 2)]
    plan = write_plan(lab, tmp_path, "outage", tests)
    proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"), NASPLAN_LEASE_S="12")
    seen = wait_for(proc, "test a: repetition 2/3")
    time.sleep(1)
    link(lab, "f4nas", up=False)
    try:
        time.sleep(outage_s)
    finally:
        link(lab, "f4nas", up=True)
    err = finish(proc, seen)
    assert "Traceback" not in err
    run = run_json(tmp_path / "run")
    a, b = run["tests"]
    nas = run["hosts"]["f4nas"]
    # what was measured before the outage is kept either way
    assert a["repetitions"][0]["status"] == "ok" and b["repetitions"][0]["status"] == "ok"
    if survived:
        assert proc.returncode == 1, err  # the repetition under the outage stalled
        assert nas["lost"] is False and nas["reachable"] is True, nas["error"]
        assert a["repetitions"][1]["status"] == "failed", a["repetitions"][1]
        # every repetition after the outage measured
        assert [r["status"] for r in a["repetitions"][2:] + b["repetitions"][1:]] == ["ok", "ok"]
        assert not any("lease" in w for w in run["warnings"]), run["warnings"]
        assert settle(lab, before_files) == set()
    else:
        assert proc.returncode == 3, err
        assert nas["lost"] is True and nas["reachable"] is False
        assert "f4nas: its lease ran out: not renewed for 1" in nas["error"], nas["error"]
        assert f"host f4nas: [lost] {nas['error']}" in err  # said on the console
        assert run["status"] == "unreachable" and run["finished_at"]
        assert a["status"] == b["status"] == "failed"
        assert all(r["status"] != "ok" for r in a["repetitions"][1:] + b["repetitions"][1:])
        # the NAS stopped what the run started there by itself; its lock waits for the next run
        assert {x for x in settle(lab, before_files) if not is_file(x)} == set()
    assert states(lab) == before_state
