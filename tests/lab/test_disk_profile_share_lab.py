"""In the lab: a disk profile from a client through the NAS's SMB share, mounted by nasplan on
the client with smbnetfs (FUSE: the lab's kernel has no cifs) and unmounted after the run,
after a failure, and, when nasplan is killed (SIGKILL) with the share mounted, by the next run,
which removes only the client's own files (the NAS's files under the mount are untouched), or,
with no next run, by the mount's watchdog once the killed run's lease ran out; Ctrl-C stops fio
in the share, removes the test's directory there and unmounts.

The link is shaped to 200 Mbit/s (25 MB/s), below the volume's disk: the rate through the share
is the link's."""

from __future__ import annotations

import io
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import (
    FAST_TIMERS,
    client_mounts,
    files_in,
    finish,
    leftovers,
    nasplan_process,
    profile_plan,
)

from nasplan.input.plan import load_plan
from nasplan.lab import LabState, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.request import RunRequest

VOLUME = "/srv/v1"
LINK_BYTES_PER_SECOND = 200e6 / 8
LAB = {
    "name": "shfio",
    "lan": {"prefix": "198.18.241.0/24", "rate": "200M"},
    "hosts": {
        "shnas": {"services": ["smb"],
                  "volumes": {"v1": {"rate": "400MiB/s", "size": "256MiB", "path": VOLUME}}},
        "shws": {},
    },
}  # fmt: skip
FAST = FAST_TIMERS
THROUGH = {
    "method": "smb",
    "client": "shws",
    "share": "v1",
    "user": "{{ hosts.shnas.smb.user }}",
    "password_env": "{{ hosts.shnas.smb.password_env }}",
}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


@pytest.fixture
def password(lab: LabState, monkeypatch: pytest.MonkeyPatch) -> str:
    secret = services.read_password(lab.host_dir("shnas")) or ""
    monkeypatch.setenv(services.SMB_PASSWORD_ENV, secret)
    return secret


def plan_file(lab: LabState, tmp_path: Path, name: str, **test: Any) -> Path:
    return profile_plan(lab, tmp_path, name, "shnas", {"id": name, "through": THROUGH, **test})


def mounts_on_client(lab: LabState) -> list[str]:
    return client_mounts(lab, "shws")


def on_volume(lab: LabState) -> set[str]:
    return files_in(lab, "shnas", VOLUME)


def run_plan(path: Path, out: Path) -> dict[str, Any]:
    apply(RunRequest(load_plan(path), out=out), make_progress(io.StringIO()))
    return load_run(out)


def test_a_profile_through_smb_runs_at_the_links_rate_and_leaves_no_mount(
    lab: LabState, tmp_path: Path, password: str
) -> None:
    before = leftovers(lab)
    run = run_plan(plan_file(lab, tmp_path, "smb", modes=["read", "write"]), tmp_path / "run")
    (test,) = run["tests"]
    assert test["status"] == "ok", test["error"]
    assert test["params"]["through"]["mounted"] == (
        "SMB //198.18.241.10/v1 mounted with smbnetfs (FUSE)"
    )
    cells = test["grid"][0]["cells"]
    for mode in ("read", "write"):
        rate = cells[mode]["bytes_per_second"]
        assert 0.3 * LINK_BYTES_PER_SECOND < rate < 1.1 * LINK_BYTES_PER_SECOND, (mode, rate)
        # one request in flight: each takes about 1/IOPS, all of it while fio submits it
        # (FUSE): the whole request's latency, not completion's few microseconds
        per_request_us = 1e6 / cells[mode]["iops"]
        assert 0.5 * per_request_us < cells[mode]["latency_p50_us"] < 2 * per_request_us
    report = (tmp_path / "run" / "report.md").read_text()
    assert "shws through SMB //198.18.241.10/v1 mounted with smbnetfs (FUSE) of shnas" in report
    assert password not in report and password not in (tmp_path / "run/run.json").read_text()
    assert mounts_on_client(lab) == []
    assert on_volume(lab) == set()
    assert leftovers(lab) - before == set()


def test_a_share_that_will_not_mount_fails_the_test_and_leaves_nothing(
    lab: LabState, tmp_path: Path, password: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(services.SMB_PASSWORD_ENV, password + "wrong")
    before = leftovers(lab)
    run = run_plan(plan_file(lab, tmp_path, "badpw"), tmp_path / "run")
    (test,) = run["tests"]
    assert test["status"] == "failed"
    assert test["error"].startswith("shws: cannot mount SMB //198.18.241.10/v1 (login): "), test
    assert mounts_on_client(lab) == [] and leftovers(lab) - before == set()


def kill_mid_profile(lab: LabState, tmp_path: Path, env: dict[str, str]) -> Path:
    """Start a long profile through the share, SIGKILL nasplan while fio runs through the
    mount; the killed run's directory."""
    long_run = plan_file(lab, tmp_path, "long", duration_s=2, repetitions=20)
    there = on_volume(lab)
    proc = nasplan_process("apply", str(long_run), "--out", str(tmp_path / "long"), env=env)
    deadline = time.monotonic() + 60
    while not on_volume(lab) - there and time.monotonic() < deadline:  # its test directory
        time.sleep(0.2)
    time.sleep(1.0)  # fio under way through the mount
    proc.kill()
    proc.wait()
    assert mounts_on_client(lab), "killed before it mounted: it tests nothing"
    return tmp_path / "long"


def test_killed_with_the_share_mounted_the_next_run_unmounts_it_and_removes_only_its_own(
    lab: LabState, tmp_path: Path, password: str
) -> None:
    nas_file = lab.host_path("shnas", VOLUME) / "nasplan-precious"  # named as nasplan's own
    nas_file.mkdir()
    (nas_file / "photo.jpg").write_bytes(b"\xff" * 4096)
    before = leftovers(lab)
    # a lease longer than the next run takes to start: the mount's watchdog waits, the next
    # run's take-over of the lock is what unmounts
    env = {**FAST, "NASPLAN_LEASE_S": "60", services.SMB_PASSWORD_ENV: password}
    kill_mid_profile(lab, tmp_path, env)

    proc = nasplan_process("apply", str(plan_file(lab, tmp_path, "next")), "--out",
                           str(tmp_path / "next"), env={**os.environ, **env})  # fmt: skip
    said = finish(proc)
    assert proc.returncode == 0, said
    assert "took over the stale lock of run" in said, said
    assert "mount /tmp/nasplan-mnt-" in said, said
    assert "kept " not in said, said
    assert mounts_on_client(lab) == []
    assert (nas_file / "photo.jpg").read_bytes() == b"\xff" * 4096  # the NAS's own files
    # the killed run's test directory on the share is the NAS's: out of the client's reach
    # once unmounted (it is named in what the report says was left)
    left = on_volume(lab) - {"nasplan-precious"}
    assert all(name.startswith("nasplan-fio-") for name in left), left
    deadline = time.monotonic() + 10
    while leftovers(lab) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(lab) - before == set()
    for name in on_volume(lab):  # the killed run's test directory, by hand; the NAS's own
        shutil.rmtree(lab.host_path("shnas", VOLUME) / name)


def test_killed_with_the_share_mounted_and_no_next_run_the_lease_undoes_the_mount(
    lab: LabState, tmp_path: Path, password: str
) -> None:
    """As every process nasplan leaves on a host: once the killed run's lease ran out (4 s),
    the mount's watchdog unmounts it and removes its config, the password with it."""
    before = leftovers(lab)
    env = {**FAST, services.SMB_PASSWORD_ENV: password}
    run_dir = kill_mid_profile(lab, tmp_path, env)
    deadline = time.monotonic() + 20
    while mounts_on_client(lab) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert mounts_on_client(lab) == []
    tmp = {p.name for p in lab.host_path("shws", "/tmp").glob("nasplan-mnt*")}
    assert tmp == set(), tmp
    done = finish(nasplan_process("restore", str(run_dir), env=env))
    assert "removed the killed run's lock" in done, done
    deadline = time.monotonic() + 10
    while leftovers(lab) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(lab) - before == set()
    for left in on_volume(lab):  # the killed run's test directory on the share, by hand
        shutil.rmtree(lab.host_path("shnas", VOLUME) / left)


def test_ctrl_c_mid_profile_removes_the_test_directory_and_unmounts(
    lab: LabState, tmp_path: Path, password: str
) -> None:
    before = leftovers(lab)
    there = on_volume(lab)
    env = {**FAST, services.SMB_PASSWORD_ENV: password}
    long_run = plan_file(lab, tmp_path, "intr", duration_s=2, repetitions=20)
    proc = nasplan_process("apply", str(long_run), "--out", str(tmp_path / "intr"), env=env)
    deadline = time.monotonic() + 60
    while not on_volume(lab) - there and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    assert mounts_on_client(lab)
    proc.send_signal(signal.SIGINT)
    said = finish(proc)
    assert proc.returncode == 130, said
    assert "Traceback" not in said
    assert mounts_on_client(lab) == []
    assert on_volume(lab) == there  # its test directory removed through the mount first
    assert leftovers(lab) - before == set()
