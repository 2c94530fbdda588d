"""Helpers shared by lab test modules (on the import path through pytest's ``pythonpath``)."""

from __future__ import annotations

import glob
import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import testinfra

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
