"""Lab daemons (sshd, smbd, ...): started in a host's namespace, waited for, tracked by PID."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import cgroups, netns

# Prefix for a daemon that mounts (a /run of its own): a mount namespace that is a copy of the
# host's, so what it mounts stays its own while it still sees the host's private /tmp.
OWN_MOUNTS = ("unshare", "--mount", "--propagation", "private")


def spawn(
    namespace: str, argv: Sequence[str], log_path: Path, *, cgroup: Path | None = None
) -> int:
    """Start ``argv`` inside ``namespace`` in its own session, output to ``log_path``; its PID;
    in the lab ``cgroup`` (a host's memory limit) when given.

    ``ip netns exec`` execs its command (as do ``unshare`` and ``sh ... exec``), so the PID
    returned ends up being the daemon's own.
    """
    # before `ip netns exec`, which mounts a /sys of the namespace's own without cgroups
    join = [] if cgroup is None else cgroups.join_argv(cgroup)
    return _popen([*join, "ip", "netns", "exec", namespace, *argv], log_path)


def spawn_here(argv: Sequence[str], log_path: Path) -> int:
    """Start ``argv`` on the machine itself (no namespace of a host), in its own session."""
    return _popen(argv, log_path)


def spawn_on_host(sshd_pid: int, argv: Sequence[str], log_path: Path) -> int:
    """Start ``argv`` as a daemon of the lab host whose sshd is ``sshd_pid``; its PID.

    It joins the sshd's network, mount and UTS namespaces: the host's interfaces, its private
    /tmp (nasplan/lab/hostfs.py) and its name, outside a vendor's root; and the sshd's memory
    limit (``nasplan.lab.cgroups``), so its page cache is the host's. ``nsenter`` execs its
    command when it enters no PID namespace, so the PID is the daemon's own.
    """
    enter = ["nsenter", f"--target={sshd_pid}", "--net", "--mount", "--uts", "--"]
    return _popen([*cgroups.join_prefix(sshd_pid), *enter, *argv], log_path)


def _popen(argv: Sequence[str], log_path: Path) -> int:
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc.pid


def wait_listening(
    what: str, address: str, port: int, pid: int, log_path: Path, timeout_s: float
) -> None:
    """Poll ``address:port`` until it accepts; LabError if ``pid`` dies or the time runs out."""
    deadline = time.monotonic() + timeout_s
    delay_s = 0.02
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0):
                return
        except OSError:
            pass
        if not netns.pid_alive(pid):
            raise LabError(f"{what} for {address} exited: {log_tail(log_path)}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} for {address} not listening on {port} after {timeout_s:g} s")
        time.sleep(delay_s)
        delay_s = min(delay_s * 2, 0.2)


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a daemon's log, joined on one line for an error message."""
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
