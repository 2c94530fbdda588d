"""Two labs with hosts of the same name are as independent as real machines: each lab host has
its own /tmp (where nasplan's host lock lives), which its daemons share and the control node does
not see; ``lab down`` leaves no mount, namespace or process of it behind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan import lab
from nasplan.lab import LabState, netns, nfs, services

ROOT = Path(__file__).resolve().parents[2]
HOSTS = {"nas": {"services": ["smb"]}, "ws": {}, "box": {"personality": "qnap"}}
LAB_A = {"name": "iso-a", "lan": {"prefix": "198.19.204.0/24", "rate": "1G"}, "hosts": HOSTS}
LAB_B = {"name": "iso-b", "lan": {"prefix": "198.19.205.0/24", "rate": "1G"}, "hosts": HOSTS}
# Another run's lock on "nas": a live owner and a lease ten minutes ahead on the host's clock
# (/proc/uptime; the lab's hosts share this kernel). Any other run on a host that sees this
# directory is refused (exit 3) rather than taking it over.
LOCK = "/tmp/nasplan-nas.lock"
OWNER = f"run_id=someone-else\npid={os.getpid()}\ncontrol={os.uname().nodename}\nuser=root\n"


@pytest.fixture(scope="module")
def labs(running_lab: Any) -> Iterator[tuple[LabState, LabState]]:
    with running_lab(LAB_A) as a, running_lab(LAB_B) as b:
        yield a, b


def ssh(state: LabState, host: str, command: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(state.ssh_config_path), "-o", "BatchMode=yes", host, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def write_plan(state: LabState, work: Path, name: str) -> Path:
    plan = {
        "name": name,
        "inventory": str(state.inventory_path),
        "tests": [
            {"kind": "iperf3", "id": "lan", "server": "nas", "client": "ws",
             "duration_s": 1, "repetitions": 1},
        ],
    }  # fmt: skip
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def start(plan: Path, out: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "nasplan", "apply", str(plan), "--out", str(out)]
    return subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    said, _ = proc.communicate(timeout=180)
    return proc.returncode, said


def test_a_lock_on_a_host_of_one_lab_does_not_refuse_a_run_on_its_namesake_in_another(
    labs: tuple[LabState, LabState], tmp_path: Path
) -> None:
    a, b = labs
    lock = a.host_path("nas", LOCK)
    lock.mkdir()
    (lock / "owner").write_text(OWNER)
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    (lock / "lease").write_text(f"{int(uptime_s) + 600}\n")
    try:
        code_b, said_b = finish(start(write_plan(b, tmp_path, "on-b"), tmp_path / "on-b"))
        code_a, said_a = finish(start(write_plan(a, tmp_path, "on-a"), tmp_path / "on-a"))
        assert (lock / "owner").read_text() == OWNER  # untouched
    finally:
        (lock / "owner").unlink()
        (lock / "lease").unlink()
        lock.rmdir()
    assert code_b == 0, said_b
    # The same run on the lab that holds the lock is refused: the lock itself works.
    assert code_a == 3 and "in use by another nasplan" in said_a, said_a
    assert not b.host_path("nas", LOCK).exists()
    assert not Path(LOCK).exists()


def test_runs_against_both_labs_at_the_same_time_are_neither_refused(
    labs: tuple[LabState, LabState], tmp_path: Path
) -> None:
    procs = [start(write_plan(s, tmp_path, s.lab_name), tmp_path / s.lab_name) for s in labs]
    for proc in procs:
        code, said = finish(proc)
        assert code == 0, said
        assert "in use" not in said, said


@pytest.mark.parametrize("host", ["nas", "box"])
def test_a_file_in_a_hosts_tmp_is_seen_by_no_other_host_nor_the_control_node(
    labs: tuple[LabState, LabState], host: str
) -> None:
    a, b = labs
    name = f"iso-probe-{host}-{os.getpid()}"
    done = ssh(a, host, f"echo {a.lab_name} > /tmp/{name} && ls /tmp")
    assert done.returncode == 0, done.stderr
    try:
        assert a.host_path(host, f"/tmp/{name}").read_text() == f"{a.lab_name}\n"
        assert not Path("/tmp", name).exists()  # the control node
        for state in labs:
            for other in state.hosts:
                if (state, other) != (a, host):
                    assert not state.host_path(other, f"/tmp/{name}").exists(), other
        seen_on_b = ssh(b, host, f"ls /tmp/{name}")
        assert seen_on_b.returncode != 0 and seen_on_b.stdout == ""
        if host == "nas":  # the host's smbd runs in its namespaces: the same /tmp
            smbd = int(services.smb_files(a.host_dir("nas")).pid_path.read_text().split()[0])
            assert Path(f"/proc/{smbd}/root/tmp/{name}").read_text() == f"{a.lab_name}\n"
    finally:
        a.host_path(host, f"/tmp/{name}").unlink()


def _mount_namespace(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/mnt")


def _processes_in(mount_namespaces: set[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "mnt") in mount_namespaces:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_lab_down_leaves_no_private_tmp_namespace_or_process(tmp_path: Path) -> None:
    spec = {
        "name": "iso-down",
        "lan": {"prefix": "198.19.206.0/24", "rate": "1G"},
        "hosts": {"nas": {"services": ["nfs", "iscsi"]}, "box": {"personality": "truenas"}},
    }
    lab_file, state_dir = tmp_path / "lab.yaml", tmp_path / "state"
    lab_file.write_text(yaml.safe_dump(spec))
    state = lab.up(lab_file, state_dir)
    try:
        ganesha = int(nfs.nfs_files(state.host_dir("nas")).pid_path.read_text())
        hosts = [h.sshd_pid for h in state.hosts.values() if h.sshd_pid is not None]
        # every lab process's mount namespace but the control node's own (the NFS release
        # watcher runs beside ganesha in it, with no private /tmp of its own)
        spaces = {_mount_namespace(pid) for pid in [*hosts, *state.pids]}
        spaces.discard(_mount_namespace(os.getpid()))
        assert len(spaces) >= 3  # each host's, and nfs-ganesha's own (for its /run)
        for pid in [*hosts, ganesha]:
            assert "nasplan-tmp /tmp tmpfs" in Path(f"/proc/{pid}/mounts").read_text()
        assert "nasplan-tmp" not in Path("/proc/self/mounts").read_text()
        assert _processes_in(spaces)
    finally:
        lab.down(lab_file, state_dir)
    assert _processes_in(spaces) == []  # the private /tmp went with its last process
    assert not any(netns.pid_alive(pid) for pid in state.pids)
    mounts = Path("/proc/self/mounts").read_text()
    assert "nasplan-tmp" not in mounts and str(state_dir) not in mounts
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert "npl-iso-down-" not in listed.stdout
    assert not state_dir.exists()
