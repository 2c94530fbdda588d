"""Lab daemons (sshd, smbd, ...): started in a host's namespace, waited for, tracked by PID."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import netns


def spawn(namespace: str, argv: Sequence[str], log_path: Path) -> int:
    """Start ``argv`` inside ``namespace`` in its own session, output to ``log_path``; its PID.

    ``ip netns exec`` execs its command (as do ``unshare`` and ``sh ... exec``), so the PID
    returned ends up being the daemon's own.
    """
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", namespace, *argv],
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
