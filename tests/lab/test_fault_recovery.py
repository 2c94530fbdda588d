"""Faults a run lives through or ends cleanly, each with every host read back over SSH after it:
an outage of the NAS's SSH path shorter and longer than its lease, the NAS rebooting mid-run,
nasplan itself stopped for longer than a lease, packet loss on the SSH path through a matrix,
a run directory that fills up, two ``--resume`` of one run at once, what a killed run leaves.
Short leases (environment) keep each case to seconds."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import finish, is_file, leftovers, nasplan_process, nic_state, wait_for

from nasplan.lab import LabState, sshd
from nasplan.lab.netns import namespace_pids

FAST = {
    "NASPLAN_CONNECT_S": "2",
    "NASPLAN_CHANNEL_S": "2",
    "NASPLAN_RECONNECT_GRACE_S": "2",
    "NASPLAN_LEASE_S": "4",
    "NASPLAN_RENEW_S": "1",
    "PYTHONUNBUFFERED": "1",
}


def nasplan(*args: str, **env: str) -> subprocess.Popen[str]:
    """``nasplan ARGS`` with this file's short timeouts (``FAST``)."""
    return nasplan_process(*args, env={**FAST, **env})


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


def kill_during(proc: subprocess.Popen[str], text: str, after_s: float = 1.0) -> str:
    """SIGKILL ``proc`` ``after_s`` after its progress said ``text``; what it had said."""
    seen = wait_for(proc, text)
    time.sleep(after_s)
    proc.kill()
    _, err = proc.communicate(timeout=30)
    return seen + err


def multi_dirs(state: LabState, host: str) -> set[str]:
    """The outputs' directories of parallel iperf3 clients on ``host`` (in its own /tmp)."""
    return {p.name for p in state.host_path(host, "/tmp").glob("nasplan-iperf3-multi.*")}


def test_what_a_killed_parallel_run_left_is_removed_by_the_next_run_its_resume_and_restore(
    lab: LabState, tmp_path: Path
) -> None:
    """``parallel: 2`` with iperf3 3.12 runs one client process per stream, their outputs in a
    directory of their own on the client: a killed run leaves it (and its lock) behind; the next
    run takes the lock over and removes both, so do ``--resume`` and ``nasplan restore``; the
    resumed run keeps the warnings its run had before it was killed."""
    before_state, before_files = states(lab), leftovers(lab)
    plan = write_plan(lab, tmp_path, "par", [iperf3_test("par", 2, 2, parallel=2)])
    runs = {name: tmp_path / name for name in ("killed", "next", "last")}

    kill_during(nasplan("apply", str(plan), "--out", str(runs["killed"])), "repetition 1/2")
    left = multi_dirs(lab, "f4ws")
    assert left, "the killed run left no client outputs' directory: the case is not there"
    # the next run takes the dead run's lock over and removes what it lists, then is killed too
    seen = kill_during(nasplan("apply", str(plan), "--out", str(runs["next"])), "repetition 1/2")
    assert "host f4ws: took over the stale lock of run killed" in seen, seen
    assert "nasplan-iperf3-multi." in seen and not left & multi_dirs(lab, "f4ws")
    left = multi_dirs(lab, "f4ws")
    assert left
    # its --resume removes what it left, and keeps what it had warned of
    warned = run_json(runs["next"])["warnings"]
    assert any("took over the stale lock of run killed" in w for w in warned), warned
    resumed = nasplan("apply", "--resume", str(runs["next"]))
    err = finish(resumed)
    assert resumed.returncode == 0, err
    assert "took over the stale lock of run next" in err and not left & multi_dirs(lab, "f4ws")
    run = run_json(runs["next"])
    assert set(warned) <= set(run["warnings"]), run["warnings"]
    assert any("took over the stale lock of run next" in w for w in run["warnings"])
    assert [r["status"] for r in run["tests"][0]["repetitions"]] == ["ok", "ok"]
    # nasplan restore after a killed run: what it left removed at once (its process is gone)
    kill_during(nasplan("apply", str(plan), "--out", str(runs["last"])), "repetition 1/2")
    assert multi_dirs(lab, "f4ws")
    restore = nasplan("restore", str(runs["last"]))
    err = finish(restore)
    assert restore.returncode == 0, err
    assert "host f4ws: removed the killed run's lock and " in err and "iperf3-multi" in err, err
    assert "host f4nas: removed the killed run's lock" in err, err
    assert leftovers(lab) - before_files == set()
    assert states(lab) == before_state


def test_two_resumes_of_one_run_at_once_one_runs_the_other_writes_nothing(
    lab: LabState, tmp_path: Path
) -> None:
    """The refused one is refused before it writes anything into the run directory (the run
    directory's own lock), not after it connected and recorded the hosts as in use."""
    before_files = leftovers(lab)
    run_dir = tmp_path / "run"
    plan = write_plan(lab, tmp_path, "twice", [iperf3_test("twice", 1, 3)])
    kill_during(nasplan("apply", str(plan), "--out", str(run_dir)), "repetition 2/3", 0.2)
    seen: list[dict[str, Any]] = []
    first, second = (nasplan("apply", "--resume", str(run_dir)) for _ in range(2))
    while first.poll() is None or second.poll() is None:  # every run.json anyone could read
        with contextlib.suppress(ValueError, OSError):
            seen.append(run_json(run_dir))
        time.sleep(0.05)
    errs = {proc.returncode: finish(proc) for proc in (first, second)}
    assert sorted(errs) == [0, 3], errs
    refused = errs[3]
    assert "in use by another nasplan process" in refused and "nothing written" in refused
    assert "connecting" not in refused and "Traceback" not in refused, refused
    assert all(r["status"] != "unreachable" for r in seen), {r["status"] for r in seen}
    assert not any(r["hosts"].get("f4nas", {}).get("error") for r in seen)
    run = run_json(run_dir)
    assert run["status"] == "ok" and len(run["resumed_at"]) == 1
    assert [r["status"] for r in run["tests"][0]["repetitions"]] == ["ok", "ok", "ok"]
    assert settle(lab, before_files) == set()


# --- the NAS reboots mid-run ------------------------------------------------------------------


def boot_configuration(state: LabState, host: str) -> list[dict[str, Any]]:
    """The host's interfaces as ``ip -j addr`` shows them now (what its boot brings back)."""
    namespace = state.hosts[host].namespace
    shown = subprocess.run(
        ["ip", "-n", namespace, "-j", "addr", "show"], capture_output=True, text=True, check=True
    )
    nics: list[dict[str, Any]] = json.loads(shown.stdout)
    return nics


def reboot(state: LabState, host: str, boot: list[dict[str, Any]], down_s: float) -> None:
    """The lab's version of a reboot: every process of the host killed (sshd, what nasplan
    started, and with its mount namespace its private /tmp), its interfaces back to ``boot``,
    then, ``down_s`` later, its sshd started again with the same host key."""
    running = state.hosts[host]
    for pid in namespace_pids(running.namespace):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while namespace_pids(running.namespace):
        assert time.monotonic() < deadline, "the host's processes did not die"
        time.sleep(0.05)
    ip = ["ip", "-n", running.namespace]
    for nic in boot:
        if nic["ifname"] == "lo":
            continue
        subprocess.run(
            [*ip, "link", "set", "dev", nic["ifname"], "mtu", str(nic["mtu"])], check=True
        )
        subprocess.run([*ip, "addr", "flush", "dev", nic["ifname"]], check=True)
        for address in nic.get("addr_info", []):
            if address["family"] == "inet":
                where = f"{address['local']}/{address['prefixlen']}"
                subprocess.run([*ip, "addr", "add", where, "dev", nic["ifname"]], check=True)
    time.sleep(down_s)
    host_dir = state.host_dir(host)
    running.sshd_pid = sshd.start(
        running.namespace, host_dir / "start-sshd.sh", host_dir / "sshd.log"
    )
    state.save()
    sshd.wait_ready(running.ip, running.sshd_pid, host_dir / "sshd.log")


def test_the_nas_rebooting_mid_run_is_named_what_was_measured_kept_and_nothing_left_to_undo(
    lab: LabState, tmp_path: Path
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    boot = boot_configuration(lab, "f4nas")
    tests = [iperf3_test("reboot", 2, 3, target="link:p2p@f4nas")]
    plan = write_plan(lab, tmp_path, "reboot", tests, **JUMBO)
    # the run's own restore at its end waits long enough for the NAS to be back
    proc = nasplan(
        "apply", str(plan), "--out", str(tmp_path / "run"), NASPLAN_RECONNECT_GRACE_S="8"
    )
    seen = wait_for(proc, "repetition 2/3")
    time.sleep(0.5)
    reboot(lab, "f4nas", boot, down_s=1)
    err = finish(proc, seen)
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    assert "test reboot: failed f4nas: SSH connection lost" in err, err
    run = run_json(tmp_path / "run")
    nas, test = run["hosts"]["f4nas"], run["tests"][0]
    assert nas["lost"] is True and "SSH connection lost" in nas["error"]
    assert test["repetitions"][0]["status"] == "ok"  # measured before the reboot: kept
    assert test["status"] == "failed" and test["summary"]["n"] == 1
    assert run["finished_at"] and run["status"] == "unreachable"
    network = run["network"]["hosts"]
    # the NAS found as it booted: as before the run; the workstation put back
    assert {h["status"] for h in network.values()} == {"restored"}, network
    assert states(lab) == before_state
    restore = nasplan("restore", str(tmp_path / "run"))
    said = finish(restore)
    assert restore.returncode == 0, said
    assert "removed" not in said and "failed" not in said, said
    assert "host f4nas: nothing left of this run" in said, said
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


# --- nasplan itself stopped for longer than a lease --------------------------------------------


def test_nasplan_stopped_longer_than_a_lease_the_hosts_revert_and_nothing_across_the_gap_counts(
    lab: LabState, tmp_path: Path
) -> None:
    before_state, before_files = states(lab), leftovers(lab)
    tests = [iperf3_test("gap", 2, 4, target="link:p2p@f4nas")]
    plan = write_plan(lab, tmp_path, "gap", tests, **JUMBO)
    proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"))  # a lease of 4 s
    seen = wait_for(proc, "repetition 2/4")
    time.sleep(0.5)
    changed = nic_state(lab, "f4nas")
    assert changed != before_state["f4nas"]  # the MTU change is in force
    proc.send_signal(signal.SIGSTOP)
    try:
        # the hosts put themselves back by their own watchdogs, nasplan frozen meanwhile, and
        # stop what the run started there
        deadline = time.monotonic() + 20
        while {n: nic_state(lab, n)["nics"] for n in lab.hosts} != {
            n: s["nics"] for n, s in before_state.items()
        } or {x for x in leftovers(lab) - before_files if not is_file(x)}:
            assert time.monotonic() < deadline, "the hosts did not revert by themselves"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGCONT)
    err = finish(proc, seen)
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    run = run_json(tmp_path / "run")
    reps = run["tests"][0]["repetitions"]
    assert reps[0]["status"] == "ok"
    # no measurement across the gap, none after it
    assert [r["status"] for r in reps[1:]] == ["failed"] * (len(reps) - 1), reps
    assert "its lease ran out" in (reps[1]["error"] or ""), reps[1]
    assert run["tests"][0]["summary"]["n"] == 1
    for name in ("f4nas", "f4ws"):
        host = run["hosts"][name]
        assert host["lost"] is True and "its lease ran out" in host["error"], host
    assert f"host f4nas: [lost] {run['hosts']['f4nas']['error']}" in err
    network = run["network"]["hosts"]
    assert {h["status"] for h in network.values()} <= {"reverted-by-host", "restored"}, network
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()


# --- packet loss on the SSH path through a whole matrix ----------------------------------------


def test_five_percent_loss_on_the_nas_ssh_path_through_a_matrix_slows_it_and_loses_nothing(
    lab: LabState, tmp_path: Path
) -> None:
    """5 % of the packets arriving on the NAS's LAN (its SSH path) dropped, by an nftables
    ``numgen random`` rule in its namespace; the tests measure over the cable."""
    before_state, before_files = states(lab), leftovers(lab)
    namespace = lab.hosts["f4nas"].namespace
    nft = ["ip", "netns", "exec", namespace, "nft"]
    rules = (
        "table inet f4loss {\n chain input {\n  type filter hook input priority 0;\n"
        '  iifname "eth0" numgen random mod 100 < 5 counter drop\n }\n}\n'
    )
    subprocess.run([*nft, "-f", "-"], input=rules, text=True, check=True)
    try:
        matrix = {"parallel": [1, 2], "reverse": [False, True]}
        tests = [iperf3_test("lossy", 1, 2, target="link:p2p@f4nas", matrix=matrix)]
        plan = write_plan(lab, tmp_path, "lossy", tests, **JUMBO)
        # a lost SYN or handshake segment costs a retransmission timeout of 1 s or more: this
        # file's 2 s connect would lose the host to the loss itself, not to a fault
        proc = nasplan("apply", str(plan), "--out", str(tmp_path / "run"), NASPLAN_CONNECT_S="8")
        err = finish(proc)
        dropped = subprocess.run([*nft, "list", "table", "inet", "f4loss"], capture_output=True,
                                 text=True, check=True).stdout  # fmt: skip
    finally:
        subprocess.run([*nft, "delete", "table", "inet", "f4loss"], check=True)
    assert proc.returncode == 0, err
    assert "[lost]" not in err and "Traceback" not in err, err
    assert " 0 packets" not in dropped, dropped  # the rule did drop packets meanwhile
    run = run_json(tmp_path / "run")
    assert len(run["tests"]) == 4
    for test in run["tests"]:
        assert test["status"] == "ok", (test["id"], test["error"])
        assert [r["status"] for r in test["repetitions"]] == ["ok", "ok"]
    assert all(not h["lost"] and h["reachable"] for h in run["hosts"].values())
    assert states(lab) == before_state
    assert settle(lab, before_files) == set()
