"""In the lab: a share's mount watchdog is the mount's own, not something the run left behind.
A clean run through SMB (smbnetfs) and through NFS (the user-space bridge: nbdfuse) says
nothing was left (its unmount waits for the watchdog and nbdfuse to end with the mount), while
a run killed with the share mounted leaves its watchdog, which the next run finds, stops and
names (as every process a killed run leaves)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import client_mounts, files_in, finish, leftovers, nasplan_process, profile_plan

from nasplan.lab import LabState, services

VOLUME = "/srv/v1"
LAB = {
    "name": "mwatch",
    "lan": {"prefix": "198.18.190.0/24", "rate": "1G"},
    "hosts": {
        "mwnas": {"services": ["smb", "nfs"],
                  "volumes": {"v1": {"rate": "400MiB/s", "size": "256MiB", "path": VOLUME}}},
        "mwws": {},
    },
}  # fmt: skip
FAST = {"NASPLAN_CONNECT_S": "3", "NASPLAN_CHANNEL_S": "2", "NASPLAN_RENEW_S": "1"}
THROUGH = {
    "smb": {"method": "smb", "client": "mwws", "share": "v1",
            "user": "{{ hosts.mwnas.smb.user }}",
            "password_env": "{{ hosts.mwnas.smb.password_env }}"},
    "nfs": {"method": "nfs", "client": "mwws", "export": "/v1"},
}  # fmt: skip
LEFT = "removed what this run left"


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


@pytest.fixture
def env(lab: LabState) -> dict[str, str]:
    secret = services.read_password(lab.host_dir("mwnas")) or ""
    return {**os.environ, **FAST, "NASPLAN_LEASE_S": "60", services.SMB_PASSWORD_ENV: secret}


def plan_file(lab: LabState, tmp_path: Path, name: str, method: str, **test: Any) -> Path:
    return profile_plan(
        lab, tmp_path, name, "mwnas", {"id": method, "through": THROUGH[method], **test}
    )


def mounts_on_client(lab: LabState) -> list[str]:
    return client_mounts(lab, "mwws")


def on_volume(lab: LabState) -> set[str]:
    return files_in(lab, "mwnas", VOLUME)


def apply(path: Path, out: Path, env: dict[str, str]) -> str:
    """``nasplan apply`` to the end; what it said (the run must succeed)."""
    proc = nasplan_process("apply", str(path), "--out", str(out), env=env)
    said = finish(proc)
    assert proc.returncode == 0, said
    return said


@pytest.mark.parametrize("method", ["smb", "nfs"])
def test_a_clean_run_through_a_share_says_nothing_was_left_behind(
    lab: LabState, tmp_path: Path, env: dict[str, str], method: str
) -> None:
    before = leftovers(lab)
    said = apply(plan_file(lab, tmp_path, "clean", method), tmp_path / "run", env)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    (test,) = run["tests"]
    assert test["status"] == "ok", test["error"]
    assert ("bridge" in test["params"]["through"]["mounted"]) == (method == "nfs")
    actions = " ".join(run["hosts"]["mwws"]["actions"])
    assert LEFT not in said and LEFT not in actions, (said, actions)
    assert LEFT not in (tmp_path / "run" / "report.md").read_text()
    assert mounts_on_client(lab) == [] and on_volume(lab) == set()
    assert leftovers(lab) - before == set()


def test_a_killed_runs_watchdog_is_still_found_and_named_by_the_next_run(
    lab: LabState, tmp_path: Path, env: dict[str, str]
) -> None:
    """Killed with the share mounted (a lease of 60 s: the watchdog waits): the next run takes
    the lock over, stops the killed run's watchdog and unmounts, and says so; it ends clean."""
    before = leftovers(lab)
    long_run = plan_file(lab, tmp_path, "long", "smb", duration_s=2, repetitions=20)
    proc = nasplan_process("apply", str(long_run), "--out", str(tmp_path / "long"), env=env)
    deadline = time.monotonic() + 60
    while not on_volume(lab) and time.monotonic() < deadline:  # its test directory
        time.sleep(0.2)
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    (mount_point,) = mounts_on_client(lab)

    said = apply(plan_file(lab, tmp_path, "next", "smb"), tmp_path / "next", env)
    run = json.loads((tmp_path / "next" / "run.json").read_text())
    actions = " ".join(run["hosts"]["mwws"]["actions"])
    assert "took over the stale lock of run" in actions, actions
    # the killed run's watchdog, a real leftover: named by its PID and mount point
    assert "removed its leftovers: process " in actions, actions
    assert f"({mount_point})" in actions and f"mount {mount_point}" in actions, actions
    assert "took over the stale lock" in said, said
    assert LEFT not in said and LEFT not in actions, (said, actions)  # the next run's own: none
    assert mounts_on_client(lab) == []
    deadline = time.monotonic() + 10
    while leftovers(lab) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(lab) - before == set()
    for name in on_volume(lab):  # the killed run's test directory on the share, by hand
        path = lab.host_path("mwnas", VOLUME) / name
        for child in sorted(path.rglob("*"), reverse=True):
            child.unlink() if child.is_file() else child.rmdir()
        path.rmdir()
