"""A run off its first path, for real: a client's wall clock stepped back an hour mid-copy (a
``date`` of its own bound over the real one in that host's mount namespace: only it sees the
step), a run killed between a repetition's directions and resumed, a client of three lost
mid-run (its LAN link set down). Short leases keep each case to seconds."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import LabContext
from lab_helpers import finish, leftovers, nasplan_process, wait_for

from nasplan.lab import LabState, services

FAST = {
    "NASPLAN_CONNECT_S": "2",
    "NASPLAN_CHANNEL_S": "2",
    "NASPLAN_RECONNECT_GRACE_S": "2",
    "NASPLAN_LEASE_S": "4",
    "NASPLAN_RENEW_S": "1",
}
LAB = {
    "name": "s42run",
    "lan": {"prefix": "198.19.140.0/24", "rate": "200M"},
    "hosts": {"cknas": {"services": ["smb"]}, "cka": {}, "ckb": {}, "ckc": {}},
}
CLIENTS = ["cka", "ckb", "ckc"]
SMB = {
    "share": "{{ hosts.cknas.smb.share }}",
    "user": "{{ hosts.cknas.smb.user }}",
    "password_env": "{{ hosts.cknas.smb.password_env }}",
}


@pytest.fixture(scope="module")
def lab(running_lab: LabContext) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def start(
    state: LabState, tmp_path: Path, tests: list[dict[str, Any]], **top: Any
) -> subprocess.Popen[str]:
    """``nasplan apply`` of a plan of ``tests`` into ``tmp_path/run``, started."""
    plan = {"name": "clocks", "inventory": str(state.inventory_path), **top, "tests": tests}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    env = env_of(state)
    return nasplan_process("apply", str(path), "--out", str(tmp_path / "run"), env=env)


def env_of(state: LabState) -> dict[str, str]:
    """The short leases, and the SMB password the plans' ``password_env`` names."""
    return {
        **FAST,
        services.SMB_PASSWORD_ENV: services.read_password(state.host_dir("cknas")) or "",
    }


def run_json(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "run" / "run.json").read_text())
    return loaded


def smb_test(test_id: str, client: str, size: str, repetitions: int, **more: Any) -> dict[str, Any]:
    return {"id": test_id, "kind": "transfer", "method": "smb", "server": "cknas",
            "client": client, "size": size, "repetitions": repetitions, **SMB, **more}  # fmt: skip


# ``date`` as a host whose clock someone sets back an hour: once FLAG exists, an hour less
DATE_SHIM = """#!/bin/sh
now=$(REAL +%s.%N)
[ -e FLAG ] && now=$(echo "$now" | awk '{printf "%.9f", $1 - 3600}')
exec REAL -d "@$now" "$@"
"""


def in_host(state: LabState, host: str, *argv: str) -> None:
    """``argv`` in the lab host's mount namespace (its sshd's)."""
    pid = state.hosts[host].sshd_pid
    assert pid is not None
    subprocess.run(["nsenter", f"--target={pid}", "--mount", "--", *argv], check=True)


def test_a_client_clock_set_back_an_hour_mid_copy_changes_no_rate(
    lab: LabState, tmp_path: Path, shared_dir: Path
) -> None:
    real, shim, flag = shared_dir / "real-date", shared_dir / "date", shared_dir / "stepped"
    shutil.copy2("/usr/bin/date", real)
    text = DATE_SHIM.replace("REAL", str(real)).replace("FLAG", str(flag))
    shim.write_text(text)
    shim.chmod(0o755)
    tests = [
        smb_test("smb", "cka", "32MiB", 2, direction="write"),
        {"id": "after", "kind": "iperf3", "server": "cknas", "client": "cka", "duration_s": 1,
         "repetitions": 1},
    ]  # fmt: skip
    in_host(lab, "cka", "mount", "--bind", str(shim), "/usr/bin/date")
    try:
        proc = start(lab, tmp_path, tests, order="sequential")
        seen = wait_for(proc, "test smb: write, repetition 1/2")
        # 32 MiB at 200 Mbit/s take 1.4 s: the step lands in the middle of the first copy
        subprocess.run(["sleep", "0.5"], check=True)
        flag.touch()
        err = finish(proc, seen)
    finally:
        in_host(lab, "cka", "umount", "/usr/bin/date")
    assert "Traceback" not in err
    assert proc.returncode == 0, err
    run = run_json(tmp_path)
    smb, after = run["tests"]
    top = smb["path"]["theoretical_bits_per_second"]
    first, second = smb["repetitions"]
    assert first["clock_step_s"] == pytest.approx(-3600, abs=1)
    assert "clock_step_s" not in second  # the clock stayed where it was set: no step in it
    for rep in smb["repetitions"]:
        assert rep["status"] == "ok" and 0.5 < rep["duration_s"] < 5, rep
        assert 0.5 * top < rep["bits_per_second"] < 1.02 * top, (rep["bits_per_second"], top)
    said = (
        "cka's wall clock stepped -3600.0 s during write 1; "
        "the copy was timed by its monotonic clock"
    )
    assert smb["warnings"] == [said] and smb["status"] == "ok"
    assert after["status"] == "ok"  # the rest of the plan ran
    assert run["finished_at"] >= run["started_at"] and run["duration_s"] > 1
    assert "clock_steps" not in run  # the control node's clock did not move
    report = (tmp_path / "run" / "report.md").read_text()
    assert said in report


DIRECTIONS = ("write", "read", "cold-read")


@pytest.mark.parametrize(
    ("order", "kill_at"),
    [("sequential", "test smb: read, repetition 1/2"),
     ("interleaved", "test smb: cold-read, repetition 2/2")],
    ids=["writes-done-reads-not", "a-cold-read-missing"],
)  # fmt: skip
def test_a_run_killed_between_directions_resumes_measuring_each_missing_one_once(
    lab: LabState, tmp_path: Path, order: str, kill_at: str
) -> None:
    share = services.smb_files(lab.host_dir("cknas")).share_path
    test = smb_test("smb", "ckb", "4MiB", 2, read_cache="both", server_path=str(share))
    proc = start(lab, tmp_path, [test], order=order)
    seen = wait_for(proc, kill_at)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    killed = run_json(tmp_path)["tests"][0]
    kept = [r for r in killed["repetitions"] if r["status"] == "ok"]
    by_index: dict[int, set[str]] = {}
    for rep in kept:
        by_index.setdefault(rep["index"], set()).add(rep["direction"])
    # killed between a repetition's directions: one of them has some, not all
    assert any(0 < len(found) < len(DIRECTIONS) for found in by_index.values()), seen

    resumed = nasplan_process("apply", "--resume", str(tmp_path / "run"), env=env_of(lab))
    err = finish(resumed)
    assert resumed.returncode == 0, err
    run = run_json(tmp_path)
    record = run["tests"][0]
    pairs = sorted((r["index"], r["direction"]) for r in record["repetitions"])
    assert pairs == sorted((i, d) for i in (1, 2) for d in DIRECTIONS)  # each exactly once
    for rep in kept:  # what finished before the kill, byte for byte
        assert rep in record["repetitions"], rep
    assert record["status"] == "ok" and all(r["status"] == "ok" for r in record["repetitions"])
    for direction in DIRECTIONS:
        assert record["directions"][direction]["n"] == 2
    for rep in record["repetitions"]:
        if rep["direction"] == "cold-read":
            assert rep["cache"].startswith("dropped the page cache of ")
    assert (tmp_path / "run" / "report.md").is_file()
    # (the copy the killed run was making on the NAS is not its to know: left for now)
    for left in share.iterdir():
        left.unlink()
    assert not {x for x in leftovers(lab) if ":/tmp/nasplan-xfer" in x}


def link(state: LabState, host: str, up: bool) -> None:
    """The host's LAN link set down or up at the lab's own root-side port."""
    port = state.hosts[host].lan_root_side
    subprocess.run(["ip", "link", "set", "dev", port, "up" if up else "down"], check=True)


def test_a_lost_client_of_three_leaves_the_kept_repetitions_labelled_with_all_three(
    lab: LabState, tmp_path: Path
) -> None:
    # interleaved with a test of its own: each repetition of net is a part of its own, and the
    # parts after the loss cannot start
    net = {
        "id": "net",
        "kind": "iperf3",
        "server": "cknas",
        "clients": CLIENTS,
        "duration_s": 1,
        "repetitions": 3,
    }
    solo = {"id": "solo", "kind": "iperf3", "server": "cknas", "client": "cka",
            "duration_s": 1, "repetitions": 3}  # fmt: skip
    proc = start(lab, tmp_path, [net, solo], order="interleaved")
    seen = wait_for(proc, "test solo: repetition 1/3")  # net 1 measured all three
    link(lab, "ckc", up=False)
    try:
        err = finish(proc, seen)
    finally:
        link(lab, "ckc", up=True)
    assert "Traceback" not in err
    run = run_json(tmp_path)
    assert run["hosts"]["ckc"]["lost"] is True
    net, solo = run["tests"]
    assert net["status"] == "failed" and solo["status"] == "ok"
    first = net["repetitions"][0]
    assert first["index"] == 1 and first["status"] == "ok"
    assert set(first["clients"]) == set(CLIENTS)
    assert net["params"]["clients"] == CLIENTS and net["params"]["address"]
    assert set(net["together"]["forward"]["clients"]) == set(CLIENTS)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "cka + ckb + ckc → " in report
