"""Helpers shared by lab test modules (on the import path through pytest's ``pythonpath``)."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import testinfra
import yaml

from nasplan.lab import LabState


def nic_state(state: LabState, name: str) -> dict[str, Any]:
    """What a user checks on a lab host over SSH: each NIC's MTU, flags and addresses, the
    routes, and nasplan's revert files (left over when a revert was not cleaned up)."""
    host = testinfra.get_host(f"ssh://{name}", ssh_config=str(state.ssh_config_path))
    nics = json.loads(host.check_output("ip -j addr show"))
    return {
        "nics": {
            n["ifname"]: (n["mtu"], n["flags"], [a["local"] for a in n.get("addr_info", [])])
            for n in nics
        },
        "routes": host.check_output("ip route show"),
        "revert_files": host.check_output("ls -d /tmp/nasplan-revert-* 2>/dev/null || true"),
    }


# Over SSH on a lab host: the command lines of nasplan's processes in the host's own network
# namespace (the lab's hosts share the machine's PID space; each has its own /tmp).
_OWN_PROCESSES = r"""
self=$(readlink /proc/self/ns/net)
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$self" ] || continue
  line=$(tr '\000' ' ' < "$p/cmdline" 2>/dev/null)
  # nasplan's scripts name it; an iperf3 in a lab host is nasplan's too, whatever its arguments
  case $line in *nasplan*|iperf3\ *|*/iperf3\ *) echo "$line" ;; esac
done
"""


def leftovers(state: LabState) -> set[str]:
    """nasplan's processes on each lab host (``host: command line``) and its /tmp files
    (``host:/tmp/nasplan-...``), over SSH."""
    found: set[str] = set()
    for name in state.hosts:
        host = testinfra.get_host(f"ssh://{name}", ssh_config=str(state.ssh_config_path))
        processes = host.check_output(_OWN_PROCESSES)
        # (the checking script itself names nasplan too: it is the one reading ns/net)
        found |= {f"{name}: {line}" for line in processes.splitlines() if "readlink" not in line}
        # a lab host's /tmp is its own: whatever nasplan left there, named or made by mktemp
        files = host.check_output("ls -d /tmp/nasplan-* 2>/dev/null || true").split()
        found |= {f"{name}:{f}" for f in files}
    return found


def is_file(entry: str) -> bool:
    """Whether a ``leftovers`` entry is a file (``host:/tmp/...``), not a process."""
    return entry.split(":", 1)[1].startswith("/tmp/")


def host_tmp_files(state: LabState, pattern: str) -> set[str]:
    """``host:name`` of each file matching ``pattern`` in each lab host's own /tmp."""
    return {
        f"{name}:{path.name}"
        for name in state.hosts
        for path in state.host_path(name, "/tmp").glob(pattern)
    }


def cut_off(device: str) -> list[str]:
    """Drop everything the control node sends on ``device``; return the argv that lifts it.

    ``device`` is the lab's root-side port of the host, an interface the lab created. netem
    loss 100% where the kernel has it, else the port goes down (no sch_netem module here).
    """
    from nasplan.lab.shaping import tbf_argv

    netem = ["tc", "qdisc", "replace", "dev", device, "root", "netem", "loss", "100%"]
    if subprocess.run(netem, capture_output=True, check=False).returncode == 0:
        return tbf_argv(device, 1_000_000_000)
    subprocess.run(["ip", "link", "set", "dev", device, "down"], check=True)
    return ["ip", "link", "set", "dev", device, "up"]


@contextmanager
def watch_argv(secret: str) -> Iterator[list[str]]:
    """Collect every process command line that contains ``secret`` while the block runs."""
    seen: list[str] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            for path in glob.glob("/proc/[0-9]*/cmdline"):
                try:
                    argv = Path(path).read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if secret in argv:
                    seen.append(argv)
            stop.wait(0.01)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()


ROOT = Path(__file__).resolve().parents[2]


def nasplan_process(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``nasplan ARGS`` started from the checkout, its output read through pipes
    (PYTHONFAULTHANDLER: a run that hangs says where, ``finish``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "nasplan", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", **(env or {})},
    )  # fmt: skip


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
    """Its standard error (after ``seen``) once it ended; one that does not end in time is made
    to dump its threads' stacks (SIGABRT), and the test fails with them."""
    try:
        return seen + proc.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"nasplan hung:\n{seen}{err}") from None


def profile_plan(state: LabState, tmp_path: Path, name: str, host: str, *tests: Any) -> Path:
    """A plan of disk-profile ``tests`` on ``host`` (each a dict of its own keys over a short
    default: one 1 MiB job, a 16 MiB file, 1 s, one repetition), written under ``tmp_path``."""
    bodies = [
        {"kind": "disk-profile", "host": host, "jobs": [{"block_size": "1MiB"}],
         "size": "16MiB", "duration_s": 1, "repetitions": 1, **test}
        for test in tests
    ]  # fmt: skip
    plan = {"name": name, "inventory": str(state.inventory_path), "tests": bodies}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def client_mounts(state: LabState, host: str) -> list[str]:
    """The mount points nasplan made on ``host``, from its own mount table."""
    text = Path(f"/proc/{state.hosts[host].sshd_pid}/mountinfo").read_text()
    return [line.split()[4] for line in text.splitlines() if "nasplan-mnt-" in line]


def files_in(state: LabState, host: str, path: str, *besides: str) -> set[str]:
    """The names in ``path`` on ``host`` (a lab volume), ``lost+found`` and ``besides`` left out."""
    return {p.name for p in state.host_path(host, path).iterdir()} - {"lost+found", *besides}


# nasplan's timers shortened for a lab test of faults: connect, a channel, the lease and renewal
FAST_TIMERS = {
    "NASPLAN_CONNECT_S": "3",
    "NASPLAN_CHANNEL_S": "2",
    "NASPLAN_LEASE_S": "4",
    "NASPLAN_RENEW_S": "1",
}
