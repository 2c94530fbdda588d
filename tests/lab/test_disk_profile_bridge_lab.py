"""In the lab: a disk profile from a client through the NAS's NFS export and through its iSCSI
LUN, with nasplan's user-space bridge (the lab's kernel has no nfs or iscsi_tcp): libnfs or
libiscsi answering nbdfuse's NBD requests, one file on FUSE that fio runs on, every request
crossing the 200 Mbit/s link to the real nfs-ganesha and tgtd. The LUN is a file on the same
shaped volume as the export.

The measured sequential rates are the link's; Ctrl-C mid-grid and a killed run (its watchdog,
then ``nasplan restore``; or the next run) leave no FUSE mount, no bridge process, no iSCSI
session and no file on the export."""

from __future__ import annotations

import io
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
from nasplan.lab import LabState, iscsi
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.request import RunRequest

VOLUME = "/srv/v1"
LINK_BYTES_PER_SECOND = 200e6 / 8
LAB = {
    "name": "bridge",
    "lan": {"prefix": "198.18.184.0/24", "rate": "200M"},
    "hosts": {
        "brnas": {"services": ["nfs", "iscsi"],
                  "iscsi": {"lun_size": "64MiB", "chap": False, "volume": "v1"},
                  "volumes": {"v1": {"read": "120MiB/s", "write": "60MiB/s", "size": "256MiB",
                                     "path": VOLUME}}},
        "brws": {},
    },
}  # fmt: skip
FAST = FAST_TIMERS
THROUGH = {
    "nfs": {"method": "nfs", "client": "brws", "export": "/v1"},
    "iscsi": {"method": "iscsi", "client": "brws", "target": iscsi.target_iqn("brnas"), "lun": 1,
              "scratch": True},
}  # fmt: skip


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def plan_file(lab: LabState, tmp_path: Path, name: str, *tests: dict[str, Any]) -> Path:
    return profile_plan(lab, tmp_path, name, "brnas", *tests)


def mounts_on_client(lab: LabState) -> list[str]:
    return client_mounts(lab, "brws")


def on_volume(lab: LabState) -> set[str]:
    return files_in(lab, "brnas", VOLUME, iscsi.VOLUME_LUN_NAME)


def iscsi_sessions(lab: LabState) -> str:
    """tgtd's connections to its target (empty: none)."""
    pid = int((lab.host_dir("brnas") / "iscsi" / "tgtd.pid").read_text().split()[0])
    shown = iscsi.tgtadm(pid, ["--op", "show", "--mode", "conn", "--tid", str(iscsi.TARGET_ID)])
    return shown.stdout.strip()


def nothing_left(lab: LabState, before: set[str], within_s: float = 15) -> None:
    """No FUSE mount, bridge process, iSCSI session or file on the export (within_s to go)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        found = (
            mounts_on_client(lab),
            on_volume(lab),
            iscsi_sessions(lab),
            leftovers(lab) - before,
        )
        if not any(found):
            return
        time.sleep(0.5)
    assert found == ([], set(), "", set())


def test_profiles_through_the_nfs_and_iscsi_bridges_run_at_the_links_rate(
    lab: LabState, tmp_path: Path
) -> None:
    before = leftovers(lab)
    path = plan_file(lab, tmp_path, "rates",
                     {"id": "nfs", "through": THROUGH["nfs"], "jobs": [
                         {"block_size": "1MiB"}, {"block_size": "1MiB", "queue_depth": 8}]},
                     {"id": "lun", "through": THROUGH["iscsi"]})  # fmt: skip
    apply(RunRequest(load_plan(path), out=tmp_path / "run"), make_progress(io.StringIO()))
    tests = {t["id"]: t for t in load_run(tmp_path / "run")["tests"]}
    for name, library in (("nfs", "libnfs"), ("lun", "libiscsi")):
        test = tests[name]
        assert test["status"] == "ok", test["error"]
        assert test["params"]["through"]["bridge"] is True
        assert test["params"]["through"]["mounted"].endswith(
            f"through the user-space bridge ({library}, nbdfuse)"
        )
        for mode in ("read", "write"):
            rate = test["grid"][0]["cells"][mode]["bytes_per_second"]
            assert 0.3 * LINK_BYTES_PER_SECOND < rate < 1.1 * LINK_BYTES_PER_SECOND, (name, rate)
    assert tests["nfs"]["params"]["through"]["mounted"].startswith("NFS 198.18.184.10:/v1 ")
    # the queue depth the NAS saw is said, not a Q8 it never got
    assert any("SEQ1M Q8T1 ran at Q1 at the NAS" in w for w in tests["nfs"]["warnings"])
    assert not any("ran at Q1" in w for w in tests["lun"].get("warnings") or [])
    report = (tmp_path / "run" / "report.md").read_text()
    assert "brws through NFS 198.18.184.10:/v1 through the user-space bridge" in report
    nothing_left(lab, before, within_s=5)


def start_long(lab: LabState, tmp_path: Path, method: str, env: dict[str, str]) -> Any:
    """A long profile through the bridge, under way (its FUSE mount in place)."""
    long_run = plan_file(lab, tmp_path, "long", {"through": THROUGH[method], "duration_s": 2,
                                                 "repetitions": 20})  # fmt: skip
    proc = nasplan_process("apply", str(long_run), "--out", str(tmp_path / "long"), env=env)
    deadline = time.monotonic() + 60
    while not mounts_on_client(lab) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3.0)  # fio under way through the bridge
    assert mounts_on_client(lab), "no bridge mounted: it tests nothing"
    return proc


@pytest.mark.parametrize("method", ["nfs", "iscsi"])
def test_ctrl_c_mid_grid_leaves_no_mount_bridge_session_or_file(
    lab: LabState, tmp_path: Path, method: str
) -> None:
    before = leftovers(lab)
    proc = start_long(lab, tmp_path, method, FAST)
    proc.send_signal(signal.SIGINT)
    said = finish(proc)
    assert proc.returncode == 130, said
    assert "Traceback" not in said
    nothing_left(lab, before, within_s=5)


@pytest.mark.parametrize("method", ["nfs", "iscsi"])
def test_a_killed_run_s_bridge_is_undone_by_its_watchdog_and_restore(
    lab: LabState, tmp_path: Path, method: str
) -> None:
    """Once the killed run's lease ran out (4 s) the mount's watchdog unmounts: nbdfuse
    disconnects and the bridge removes its NFS file or logs out of the LUN."""
    before = leftovers(lab)
    proc = start_long(lab, tmp_path, method, FAST)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 20
    while mounts_on_client(lab) and time.monotonic() < deadline:
        time.sleep(0.5)
    done = finish(nasplan_process("restore", str(tmp_path / "long"), env=FAST))
    assert "removed the killed run's lock" in done, done
    nothing_left(lab, before)


def test_a_killed_run_s_bridge_is_undone_by_the_next_run(lab: LabState, tmp_path: Path) -> None:
    """A lease longer than the next run takes to start: the next run's take-over of the lock
    stops nbdfuse, which unmounts, and the bridge removes its file from the export."""
    before = leftovers(lab)
    env = {**FAST, "NASPLAN_LEASE_S": "60"}
    proc = start_long(lab, tmp_path, "nfs", env)
    proc.kill()
    proc.wait()
    assert on_volume(lab), "the bridge's file is not on the export: it tests nothing"
    nxt = plan_file(lab, tmp_path, "next", {"through": THROUGH["nfs"]})
    proc = nasplan_process("apply", str(nxt), "--out", str(tmp_path / "next"), env=env)
    said = finish(proc)
    assert proc.returncode == 0, said
    # (nbdfuse, stopped first, unmounts as it ends)
    assert "took over the stale lock of run" in said and "(/tmp/nasplan-mnt-" in said, said
    nothing_left(lab, before)
