"""Runtime faults against the lab, each with the hosts' state read back over SSH afterwards:
a hung or killed sshd, two applies at once, nasplan killed during a network change, a full run
directory, a link down mid-test. Short timeouts (environment) keep each case to seconds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testinfra
import yaml
from lab_helpers import finish, is_file, leftovers, nasplan_process, nic_state, wait_for

from nasplan.lab import LabState
from nasplan.lab.netns import namespace_pids

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 3
FAST = {
    "NASPLAN_CONNECT_S": "3",
    "NASPLAN_CHANNEL_S": "2",
    "NASPLAN_RECONNECT_GRACE_S": "2",
    "NASPLAN_LEASE_S": str(LEASE_S),
    "NASPLAN_RENEW_S": "1",
    "PYTHONUNBUFFERED": "1",
}
LAB = {
    "name": "ftlab",
    "lan": {"prefix": "198.19.96.0/24", "rate": "1G"},
    "hosts": {
        "ftnas": {"personality": "debian"},
        "ftws": {"personality": "debian"},
        "ftpc": {"personality": "debian"},
    },
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "a": {"host": "ftnas", "interface": "eth1"},
            "b": {"host": "ftws", "interface": "eth1"},
        }
    ],
}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def write_plan(
    state: LabState,
    directory: Path,
    *,
    name: str = "ft",
    duration_s: int = 1,
    repetitions: int = 1,
    jumbo: bool = False,
    other_test: bool = False,
    other_duration_s: int = 1,
) -> Path:
    tests: list[dict[str, Any]] = [
        {
            "id": "nas",
            "kind": "iperf3",
            "server": "ftnas",
            "client": "ftws",
            "duration_s": duration_s,
            "repetitions": repetitions,
        }
    ]
    if other_test:
        tests.append(
            {
                "id": "other",
                "kind": "iperf3",
                "server": "ftws",
                "client": "ftpc",
                "duration_s": other_duration_s,
            }
        )
    plan: dict[str, Any] = {"name": name, "inventory": str(state.inventory_path), "tests": tests}
    if jumbo:
        plan["network"] = {"confirm_timeout_s": 10}
        plan["links"] = [
            {
                "name": "p2p",
                "a": {"host": "ftnas", "interface": "p2p"},
                "b": {"host": "ftws", "interface": "p2p"},
                "prefix": "198.19.97.0/30",
                "mtu": 9000,
            }
        ]
        tests[0]["target"] = "link:p2p@ftnas"
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def start(plan: Path, out: Path, **env: str) -> subprocess.Popen[str]:
    """``nasplan apply PLAN --out OUT`` with this file's short timeouts (``FAST``)."""
    return nasplan_process("apply", str(plan), "--out", str(out), env={**FAST, **env})


def apply_once(plan: Path, out: Path, **env: str) -> tuple[int, str]:
    proc = start(plan, out, **env)
    err = finish(proc)
    return proc.returncode, err


def states(state: LabState) -> dict[str, Any]:
    return {name: nic_state(state, name) for name in state.hosts}


def sshd_pids(state: LabState, host: str, *, master: bool) -> list[int]:
    pids = []
    for pid in namespace_pids(state.hosts[host].namespace):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "sshd" and (master or pid != state.hosts[host].sshd_pid):
            pids.append(pid)
    return pids


def settle(state: LabState, before: set[str], timeout_s: float = LEASE_S + 6) -> set[str]:
    """What nasplan left beyond ``before``, once processes had a lease to stop by themselves."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = leftovers(state) - before
        processes = {x for x in left if not is_file(x)}
        if not processes or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.mark.parametrize("fault", ["stopped", "killed"])
def test_nas_sshd_lost_mid_test_keeps_what_was_measured_and_names_it(
    lab: LabState, tmp_path: Path, fault: str
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    plan = write_plan(lab, tmp_path, repetitions=3, other_test=True)
    started = time.monotonic()
    proc = start(plan, tmp_path / "run")
    seen = wait_for(proc, "repetition 2/3")
    pids = sshd_pids(lab, "ftnas", master=fault == "stopped")
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGSTOP if fault == "stopped" else signal.SIGKILL)
    try:
        err = finish(proc, seen)
    finally:
        if fault == "stopped":
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
    elapsed_s = time.monotonic() - started
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    assert elapsed_s < 40, err
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["status"] == "unreachable" and run["finished_at"]
    nas = run["hosts"]["ftnas"]
    assert nas["reachable"] is False and nas["lost"] is True
    # frozen: silent for a whole lease, said by a command or by the lease renewals, whichever
    # first; killed: its connection ended
    reasons = ["stopped answering: no answer for ", "its lease ran out: not renewed for "]
    if fault == "killed":
        reasons = ["SSH connection lost"]
    assert nas["error"].startswith("ftnas: ") and any(r in nas["error"] for r in reasons), nas
    first, other = run["tests"]
    assert first["status"] == "failed" and "ftnas" in first["error"]
    assert first["repetitions"][0]["status"] == "ok"
    assert first["repetitions"][0]["bits_per_second"] > 100e6
    assert first["summary"]["n"] >= 1
    assert other["status"] == "ok", other["error"]
    assert run["hosts"]["ftws"]["reachable"] is True
    # Processes on the lost host stop by themselves within a lease; files wait for the next run.
    left = settle(lab, before_files)
    assert all(is_file(x) for x in left), left
    code, err2 = apply_once(write_plan(lab, tmp_path, name="after"), tmp_path / "after")
    assert code == 0, err2
    after = json.loads((tmp_path / "after/run.json").read_text())
    actions = " ".join(after["hosts"]["ftnas"]["actions"])
    assert "ftnas:/tmp/nasplan-ftnas.lock" in left  # the lost run could not release it
    assert "took over the stale lock of run" in actions, actions
    if left - {"ftnas:/tmp/nasplan-ftnas.lock"}:
        assert "removed its leftovers" in actions, actions
    assert settle(lab, before_files) == set()
    assert states(lab) == before_state


def test_second_apply_is_refused_naming_the_first_then_takes_over_once_it_is_killed(
    lab: LabState, tmp_path: Path
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    first = start(write_plan(lab, tmp_path, name="first", duration_s=3), tmp_path / "first")
    seen = wait_for(first, "repetition 1/1")
    code, err = apply_once(write_plan(lab, tmp_path, name="second"), tmp_path / "second")
    assert code == 3, err
    assert "Traceback" not in err
    assert "ftnas: in use by another nasplan run first" in err, err
    assert "started " in err and " s ago" in err
    second = json.loads((tmp_path / "second/run.json").read_text())
    assert second["tests"][0]["status"] == "failed"
    assert "in use by another nasplan run" in second["hosts"]["ftnas"]["error"]
    err = finish(first, seen)
    assert first.returncode == 0, err
    result = json.loads((tmp_path / "first/run.json").read_text())
    assert result["status"] == "ok"
    assert settle(lab, before_files) == set()

    # nasplan killed outright mid-test: the next run takes the dead owner's lock over at once.
    killed = start(write_plan(lab, tmp_path, name="killed", duration_s=3), tmp_path / "killed")
    wait_for(killed, "repetition 1/1")
    time.sleep(0.5)
    killed.kill()
    killed.wait()
    code, err = apply_once(write_plan(lab, tmp_path, name="next"), tmp_path / "next")
    assert code == 0, err
    assert "host ftnas: took over the stale lock of run killed" in err, err  # on the console too
    nxt = json.loads((tmp_path / "next/run.json").read_text())
    actions = " ".join(nxt["hosts"]["ftnas"]["actions"])
    assert "took over the stale lock of run killed" in actions, actions
    # its iperf3 server (waiting, or gone and its files left) and sampler (unless its lease ran
    # out first and it stopped and cleaned up by itself)
    assert "removed its leftovers: " in actions and "nasplan-iperf3-" in actions, actions
    assert "removed what this run left" not in actions  # a run that ends well leaves nothing
    assert any("took over the stale lock" in w for w in nxt["warnings"])
    assert settle(lab, before_files) == set()
    assert states(lab) == before_state


def test_a_host_is_released_once_the_plan_is_done_with_it(lab: LabState, tmp_path: Path) -> None:
    # ftnas serves the plan's first test only: while the second (ftws -> ftpc) runs, another
    # run may use ftnas (its lock released as its last test ends, beside its teardown), and
    # the first run's lease renewals there have stopped
    before_files = leftovers(lab)
    plan = write_plan(lab, tmp_path, name="first", other_test=True, other_duration_s=5)
    first = start(plan, tmp_path / "first")
    try:
        seen = wait_for(first, "test other:")
        released_s = lock_released(lab, "ftnas", within_s=3)
        assert released_s < 2.5, released_s  # as its test ended, not at the end
        second_run(lab, tmp_path)
        assert first.poll() is None  # the first run was still measuring ftws -> ftpc
        err = finish(first, seen)
    finally:
        if first.poll() is None:  # a failed assertion above: not left running
            first.kill()
            first.wait()
    assert first.returncode == 0, err
    result = json.loads((tmp_path / "first/run.json").read_text())
    assert result["status"] == "ok" and [t["status"] for t in result["tests"]] == ["ok", "ok"]
    assert not any("took this host's lock" in w for w in result["warnings"]), result["warnings"]
    assert settle(lab, before_files) == set()


def lock_released(lab: LabState, name: str, within_s: float) -> float:
    """Seconds until ``name``'s host lock is gone (fails after ``within_s``)."""
    host = testinfra.get_host(f"ssh://{name}", ssh_config=str(lab.ssh_config_path))
    started = time.monotonic()
    while host.run("ls -d /tmp/nasplan-*.lock").rc == 0:
        assert time.monotonic() - started < within_s, f"{name}: still locked"
        time.sleep(0.05)
    return time.monotonic() - started


def second_run(lab: LabState, tmp_path: Path) -> None:
    """A disk test on ftnas alone, which must not find ftnas in use."""
    disk = {
        "name": "second",
        "inventory": str(lab.inventory_path),
        "tests": [
            {"id": "disk", "kind": "disk", "host": "ftnas", "path": "/var/tmp", "size": "4MiB"}
        ],
    }
    second = tmp_path / "second.yaml"
    second.write_text(yaml.safe_dump(disk, sort_keys=False))
    code, err = apply_once(second, tmp_path / "second")
    assert code == 0, err


def test_nasplan_killed_during_a_network_change_host_reverts_and_restore_works(
    lab: LabState, tmp_path: Path
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    proc = start(write_plan(lab, tmp_path, jumbo=True, duration_s=4), tmp_path / "run")
    wait_for(proc, "repetition 1/1")
    changed = nic_state(lab, "ftnas")
    assert changed != before_state["ftnas"]  # MTU 9000 and the link address are in place
    proc.kill()
    proc.wait()

    # The guard stayed armed on the lease (confirm_timeout_s is 10 s): back within the lease.
    def nics() -> dict[str, Any]:
        return {n: (s["nics"], s["routes"]) for n, s in states(lab).items()}

    deadline = time.monotonic() + LEASE_S + 5
    while nics() != {n: (s["nics"], s["routes"]) for n, s in before_state.items()}:
        assert time.monotonic() < deadline, nics()
        time.sleep(0.5)
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["status"] == "interrupted"
    assert run["network"]["hosts"]["ftnas"]["confirmed"] is True
    restore = subprocess.run(
        [sys.executable, "-m", "nasplan", "restore", str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST},
        timeout=60,
    )
    assert restore.returncode == 0, restore.stderr
    assert "Traceback" not in restore.stderr
    # the killed run's locks (lease run out) and what they listed go with the restore
    assert "host ftnas: removed the killed run's lock" in restore.stderr, restore.stderr
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"reverted-by-host"}
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


@pytest.fixture
def tiny_dir(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs of its own for a run directory, unmounted after the test."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_run_directory_full(lab: LabState, tmp_path: Path, tiny_dir: Path) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    plan = write_plan(lab, tmp_path, jumbo=True, repetitions=3)
    # Up front: 3 MB is below the 10 MB a run needs; nothing is touched on any host.
    code, err = apply_once(plan, tiny_dir / "run")
    assert code == 1, err
    assert "MB free, a run needs at least 10.0 MB" in err and "Traceback" not in err
    assert not (tiny_dir / "run").exists()
    # Mid-run: the disk fills after the first repetition; hosts restored, repetition 1 kept.
    proc = start(plan, tiny_dir / "run", NASPLAN_MIN_FREE_BYTES="100000")
    seen = wait_for(proc, "repetition 2/3")
    filler = tiny_dir / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    err = finish(proc, seen)
    assert proc.returncode == 1, err
    assert "the disk is full" in err and "Traceback" not in err, err
    assert err.count("the disk is full") == 1, err  # said once
    assert "network: restored" in err
    run = json.loads((tiny_dir / "run/run.json").read_text())
    assert run["tests"][0]["repetitions"][0]["status"] == "ok"
    # the last save, into the space held for it, says how the hosts were put back and when the
    # run ended; nothing of that space is left held
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}, run["network"]
    assert run["finished_at"] and run["status"] == "interrupted", run["status"]
    # the test in flight when the disk filled was stopped, not failed by itself (issue 35)
    assert run["tests"][0]["status"] == "interrupted", run["tests"][0]["error"]
    assert "lacking" not in err and not (tiny_dir / "run/.run.json.reserve").exists()
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


def test_link_down_mid_test_fails_the_repetition_as_stalled(lab: LabState, tmp_path: Path) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    port = lab.hosts["ftnas"].lan_root_side  # the lab's own root-side port of ftnas
    plan = write_plan(lab, tmp_path, duration_s=5)
    # a lease that outlives the outage: the server watchdog must not end the test
    proc = start(plan, tmp_path / "run", NASPLAN_CHANNEL_S="8", NASPLAN_LEASE_S="20")
    seen = wait_for(proc, "repetition 1/1")
    time.sleep(1.5)
    subprocess.run(["ip", "link", "set", "dev", port, "down"], check=True)
    try:
        time.sleep(2.5)
    finally:
        subprocess.run(["ip", "link", "set", "dev", port, "up"], check=True)
    err = finish(proc, seen)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    run = json.loads((tmp_path / "run/run.json").read_text())
    test = run["tests"][0]
    rep = test["repetitions"][0]
    assert rep["status"] == "failed" and rep["error"].startswith("stalled: "), rep["error"]
    assert test["status"] == "failed" and "stalled" in test["error"]
    assert test["summary"]["n"] == 0
    assert run["hosts"]["ftnas"]["reachable"] is True
    assert settle(lab, before_files) == set()
    assert states(lab) == before_state


def test_foreign_listener_on_the_iperf3_port_fails_that_test_and_is_left_alone(
    lab: LabState, tmp_path: Path
) -> None:
    before_files = leftovers(lab)
    listener = subprocess.Popen(
        [
            "ip", "netns", "exec", lab.hosts["ftnas"].namespace, sys.executable, "-c",
            "import socket, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('0.0.0.0', 5201)); s.listen(); time.sleep(60)",
        ]
    )  # fmt: skip
    try:
        time.sleep(0.5)
        code, err = apply_once(write_plan(lab, tmp_path, other_test=True), tmp_path / "run")
        assert code == 1, err
        assert "Traceback" not in err
        run = json.loads((tmp_path / "run/run.json").read_text())
        nas, other = run["tests"]
        assert nas["status"] == "failed" and "port 5201 is already in use" in nas["error"]
        assert other["status"] == "ok"
        assert listener.poll() is None  # not ours: left running
    finally:
        listener.kill()
        listener.wait()
    assert settle(lab, before_files) == set()


# Faults, third round: two applies at the same instant, a host
# frozen while its network is changed, SIGTERM and SIGHUP, Ctrl-C pressed again and again.


def _iperf3_started(run_dir: Path) -> int:
    """When a one-repetition iperf3 test of a run began (iperf3's own timestamp, epoch s)."""
    raw = json.loads((run_dir / "raw" / "nas" / "rep-1.json").read_text())
    started: int = raw["start"]["timestamp"]["timesecs"]
    return started


def test_two_applies_started_at_the_same_instant_end_with_exactly_one_measuring(
    lab: LabState, tmp_path: Path
) -> None:
    """Never both refused, never both measuring at once: one yields (exit 3), or waits for the
    other to be done with the host and measures after it."""
    before_files = leftovers(lab)
    duration_s = 3  # long enough that the two runs surely overlap
    for attempt in range(4):
        plans = [
            write_plan(lab, tmp_path, name=f"twin{attempt}{side}", duration_s=duration_s)
            for side in "ab"
        ]
        procs = [start(plan, tmp_path / plan.stem) for plan in plans]
        codes, said = [], []
        for proc in procs:
            said.append(finish(proc, timeout_s=90))
            codes.append(proc.returncode)
        assert sorted(codes) in ([0, 0], [0, 3]), (attempt, codes, said)
        runs = [json.loads((tmp_path / plan.stem / "run.json").read_text()) for plan in plans]
        for run in runs:
            assert not any("took over the stale lock" in w for w in run["warnings"])
        if codes == [0, 0]:  # one after the other, never at the same time
            begun = sorted(_iperf3_started(tmp_path / plan.stem) for plan in plans)
            assert begun[1] >= begun[0] + duration_s - 1, (begun, said)
            assert any("waiting" in text for text in said), said
        else:
            loser = runs[codes.index(3)]
            assert loser["tests"][0]["status"] == "failed"
            assert "in use" in (loser["tests"][0]["error"] or "")
    assert settle(lab, before_files) == set()


def test_a_lock_with_no_readable_owner_is_stale_and_taken_over_saying_so(
    lab: LabState, tmp_path: Path
) -> None:
    """A lock directory with an empty owner and lease (what a run whose /tmp was full left,
    before locks were written whole and renamed into place): no run holds it."""
    lock_dir = lab.host_path("ftnas", "/tmp/nasplan-ftnas.lock")  # in ftnas's own /tmp
    lock_dir.mkdir()
    (lock_dir / "owner").write_text("")
    (lock_dir / "lease").write_text("")
    code, err = apply_once(write_plan(lab, tmp_path, name="late"), tmp_path / "late")
    assert code == 0, err
    assert "host ftnas: took over a lock with no readable owner" in err, err
    run = json.loads((tmp_path / "late/run.json").read_text())
    assert any("took over a lock with no readable owner" in w for w in run["warnings"])
    assert not lock_dir.exists()  # released at the end, as any lock of a run


def test_a_full_tmp_at_lock_time_is_named_and_leaves_nothing_then_the_next_run_works(
    lab: LabState, tmp_path: Path
) -> None:
    """The NAS's /tmp (its own tmpfs, made 1 MiB) full when the run takes its lock: one line
    says so, nothing is left in /tmp, and with the space back the next run takes the lock."""
    nas = testinfra.get_host("ssh://ftnas", ssh_config=str(lab.ssh_config_path))
    before_files = leftovers(lab)
    nas.check_output("mount -o remount,size=1m /tmp")
    try:
        nas.run("dd if=/dev/zero of=/tmp/filler bs=64k")  # until no space is left
        code, err = apply_once(write_plan(lab, tmp_path, name="full"), tmp_path / "full")
        assert code == 3, err
        assert "Traceback" not in err
        line = next(x for x in err.splitlines() if "/tmp is full" in x)
        assert (
            "ftnas: /tmp is full (0 B free): no space left on device for the host's nasplan lock"
        ) in line, line
        assert "in use by" not in err, err
        assert not nas.run("ls -d /tmp/nasplan-*").stdout.strip()  # no lock, nothing beside it
        nas.check_output("rm -f /tmp/filler")
        code, err = apply_once(write_plan(lab, tmp_path, name="back"), tmp_path / "back")
        assert code == 0, err
        assert "took over" not in err, err
    finally:
        nas.run("rm -f /tmp/filler")
        nas.check_output("mount -o remount,size=50% /tmp")
    assert settle(lab, before_files) == set()


def test_a_nearly_full_tmp_fails_the_test_naming_it_not_a_closed_control_socket(
    lab: LabState, tmp_path: Path
) -> None:
    """The NAS's /tmp (a 4 MiB tmpfs) has room for the lock and little more (a QNAP's 64 MB
    /tmp in ordinary use): the test fails naming the full /tmp first, and nothing is left."""
    nas = testinfra.get_host("ssh://ftnas", ssh_config=str(lab.ssh_config_path))
    before_files = leftovers(lab)
    nas.check_output("mount -o remount,size=4m /tmp")
    try:
        nas.run("dd if=/dev/zero of=/tmp/filler bs=64k")
        nas.check_output("truncate -s -16K /tmp/filler")  # the lock's owner and lease fit
        code, err = apply_once(write_plan(lab, tmp_path, name="nearly"), tmp_path / "nearly")
        assert code == 1, err
        assert "Traceback" not in err
        run = json.loads((tmp_path / "nearly/run.json").read_text())
        error = run["tests"][0]["error"]
        assert error.startswith("ftnas: /tmp is full ("), error
    finally:
        nas.run("rm -f /tmp/filler")
        nas.check_output("mount -o remount,size=50% /tmp")
    assert settle(lab, before_files) == set()


def test_a_nas_frozen_during_a_network_change_is_left_to_its_own_revert_and_said_so(
    lab: LabState, tmp_path: Path
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    proc = start(write_plan(lab, tmp_path, jumbo=True, duration_s=3), tmp_path / "run")
    seen = wait_for(proc, "repetition 1/1")
    pids = sshd_pids(lab, "ftnas", master=True)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        err = finish(proc, seen, timeout_s=90)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "paramiko" not in err, err
    run = json.loads((tmp_path / "run/run.json").read_text())
    nas = run["network"]["hosts"]["ftnas"]
    assert nas["status"] == "left-to-host", nas
    assert nas["revert_by"].endswith("Z") and "its own armed revert puts it back by" in nas["error"]
    assert run["network"]["hosts"]["ftws"]["status"] == "restored"
    assert (tmp_path / "run/report.md").is_file()
    # the host's own timer (the lease: it was confirmed) puts its NICs back ...
    deadline = time.monotonic() + LEASE_S + 10
    while nic_state(lab, "ftnas")["nics"] != before_state["ftnas"]["nics"]:
        assert time.monotonic() < deadline, "ftnas did not revert by itself"
        time.sleep(0.5)
    # ... and nasplan restore, once the host answers, finds it so and records it
    restore = subprocess.run(
        [sys.executable, "-m", "nasplan", "restore", str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST},
        timeout=60,
        check=False,
    )
    assert restore.returncode == 0, restore.stderr
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["network"]["hosts"]["ftnas"]["status"] == "reverted-by-host"
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


@pytest.mark.parametrize(
    ("signals", "code", "said"),
    [
        ([signal.SIGTERM], 143, "nasplan: terminated (SIGTERM)"),
        ([signal.SIGHUP], 129, "nasplan: terminated (SIGHUP)"),
        ([signal.SIGINT] * 3, 130, "nasplan: interrupted"),  # Ctrl-C, again and again
    ],
    ids=["sigterm", "sighup", "ctrl-c-three-times"],
)
def test_a_stop_signal_during_a_network_change_restores_and_writes_the_report(
    lab: LabState, tmp_path: Path, signals: list[int], code: int, said: str
) -> None:
    """SIGTERM and SIGHUP end a run as Ctrl-C does; Ctrl-C pressed 0.1 s apart three times
    still lets the restore, run.json and report.md finish."""
    before_state, before_files = states(lab), leftovers(lab)
    proc = start(write_plan(lab, tmp_path, jumbo=True, duration_s=4), tmp_path / "run")
    seen = wait_for(proc, "repetition 1/1")
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.1)
    err = finish(proc, seen)
    assert proc.returncode == code, err
    assert said in err and "Traceback" not in err, err
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert run["status"] == "interrupted" and run["finished_at"]
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}
    assert (tmp_path / "run/report.md").is_file()
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


def test_a_disk_test_on_a_full_nas_volume_measures_no_read_of_what_the_write_left(
    lab: LabState, tmp_path: Path
) -> None:
    """The NAS's volume (an 8 MiB tmpfs, mounted on the host itself) cannot take the 16 MiB
    file: the writes fail with ENOSPC and no read is recorded as a measurement."""
    nas = testinfra.get_host("ssh://ftnas", ssh_config=str(lab.ssh_config_path))
    volume = f"/var/tmp/nasplan-full-{os.getpid()}"
    nas.check_output(f"mkdir -p {volume} && mount -t tmpfs -o size=8m tmpfs {volume}")
    try:
        plan = {
            "name": "full",
            "inventory": str(lab.inventory_path),
            "tests": [
                {
                    "id": "vol",
                    "kind": "disk",
                    "host": "ftnas",
                    "path": volume,
                    "size": "16MiB",
                    "direct": False,
                    "repetitions": 2,
                }
            ],
        }
        path = tmp_path / "full.yaml"
        path.write_text(yaml.safe_dump(plan, sort_keys=False))
        code, err = apply_once(path, tmp_path / "run")
        assert code == 1, err
        assert "Traceback" not in err
        run = json.loads((tmp_path / "run/run.json").read_text())
        reps = run["tests"][0]["repetitions"]
        writes = [r for r in reps if r["direction"] == "write"]
        reads = [r for r in reps if r["direction"] == "read"]
        assert all("No space left on device" in (r["error"] or "") for r in writes), writes
        assert all(r["status"] == "failed" for r in reads), reads
        assert all("not written whole" in (r["error"] or "") for r in reads), reads
        assert run["tests"][0]["directions"]["read"]["n"] == 0
        # nothing of the test left on the volume
        assert nas.check_output(f"ls -A {volume}") == ""
    finally:
        nas.check_output(f"umount {volume} && rmdir {volume}")


def test_restore_right_after_a_kill_stops_what_the_killed_run_left_at_once(
    lab: LabState, tmp_path: Path
) -> None:
    """nasplan killed (SIGKILL) mid-test with a network change and a long lease: `nasplan
    restore` right away puts the network back and stops the killed run's sampler, iperf3 and
    lock there and then, not one lease later."""
    before_state, before_files = states(lab), leftovers(lab)
    plan = write_plan(lab, tmp_path, jumbo=True, duration_s=6)
    proc = start(plan, tmp_path / "run", NASPLAN_LEASE_S="60")
    wait_for(proc, "repetition 1/1")
    time.sleep(1)
    proc.kill()
    proc.wait()
    assert leftovers(lab) - before_files  # its sampler, server, lock: all still there
    restore = subprocess.run(
        [sys.executable, "-m", "nasplan", "restore", str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST, "NASPLAN_LEASE_S": "60"},
        timeout=60,
        check=False,
    )
    assert restore.returncode == 0, restore.stderr
    assert "host ftnas: removed the killed run's lock" in restore.stderr, restore.stderr
    assert leftovers(lab) - before_files == set()  # at once: no lease had run out
    run = json.loads((tmp_path / "run/run.json").read_text())
    assert {h["status"] for h in run["network"]["hosts"].values()} == {"restored"}
    assert states(lab) == before_state


def test_a_killed_sshd_is_named_within_a_renewal_not_at_the_end_of_the_repetition(
    lab: LabState, tmp_path: Path
) -> None:
    before_files = leftovers(lab)
    proc = start(write_plan(lab, tmp_path, duration_s=8), tmp_path / "run")
    seen = wait_for(proc, "repetition 1/1")
    time.sleep(1)
    pids = sshd_pids(lab, "ftnas", master=False)
    assert pids
    killed = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    seen += wait_for(proc, "host ftnas: [lost]")
    named_s = time.monotonic() - killed
    err = finish(proc, seen)
    assert named_s < 4, (named_s, err)  # the renewal interval is 1 s; the repetition 8 s
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    assert all(is_file(x) for x in settle(lab, before_files))
    code, err = apply_once(write_plan(lab, tmp_path, name="after"), tmp_path / "after")
    assert code == 0, err
    assert settle(lab, before_files) == set()
