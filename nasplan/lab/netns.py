"""iproute2 operations of the lab: namespaces, the LAN bridge, veth pairs, addresses, processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from nasplan.errors import LabError

_NETNS_DIR = Path("/run/netns")


def run(argv: Sequence[str], *, netns: str | None = None, check: bool = True) -> str:
    """Run ``argv`` (inside ``netns`` when given); return stdout, raise LabError when it fails."""
    full = ["ip", "netns", "exec", netns, *argv] if netns else list(argv)
    proc = subprocess.run(full, capture_output=True, text=True, check=False, timeout=60)
    if check and proc.returncode != 0:
        detail = proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}"
        raise LabError(f"{' '.join(full)}: {detail}")
    return proc.stdout


def namespace_exists(name: str) -> bool:
    """True when the named network namespace exists (``/run/netns/NAME``)."""
    return (_NETNS_DIR / name).exists()


def list_namespaces() -> list[str]:
    """Names of all named network namespaces (``ip netns list``)."""
    out = run(["ip", "-j", "netns", "list"], check=False).strip()
    return [entry["name"] for entry in json.loads(out or "[]")]


def link_exists(name: str, netns: str | None = None) -> bool:
    """True when interface ``name`` exists (in the root namespace, or in ``netns``)."""
    argv = ["ip", "link", "show", "dev", name]
    if netns:
        argv = ["ip", "-n", netns, "link", "show", "dev", name]
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def root_links() -> list[str]:
    """Names of every interface in the root namespace."""
    return [entry["ifname"] for entry in json.loads(run(["ip", "-j", "link", "show"]) or "[]")]


def root_ipv4_addresses() -> list[tuple[str, str]]:
    """``(interface, address/prefix)`` of every IPv4 address in the root namespace."""
    entries = json.loads(run(["ip", "-j", "-4", "addr", "show"]) or "[]")
    return [
        (entry["ifname"], f"{info['local']}/{info['prefixlen']}")
        for entry in entries
        for info in entry.get("addr_info", [])
    ]


def add_namespace(name: str) -> None:
    """Create a namespace with ``lo`` up and IPv6 off (lab traffic is IPv4 in 198.18.0.0/15)."""
    run(["ip", "netns", "add", name])
    run(["ip", "-n", name, "link", "set", "lo", "up"])
    for scope in ("all", "default"):
        run(["sysctl", "-q", "-w", f"net.ipv6.conf.{scope}.disable_ipv6=1"], netns=name)


def delete_namespace(name: str) -> None:
    """Delete a namespace (its veths go with it); nothing when it is already gone."""
    if namespace_exists(name):
        run(["ip", "netns", "delete", name])


def add_bridge(name: str, address: str) -> None:
    """Create the lab bridge in the root namespace, give it the control address, bring it up."""
    run(["ip", "link", "add", name, "type", "bridge"])
    _disable_ipv6(name)
    run(["ip", "addr", "add", address, "dev", name])
    run(["ip", "link", "set", name, "up"])


def add_veth(name: str, peer: str) -> None:
    """Create a veth pair ``name``/``peer`` in the root namespace."""
    run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer])


def move_and_rename(link: str, netns: str, new_name: str, mtu_bytes: int) -> None:
    """Move root-side ``link`` into ``netns``, rename it there, set its MTU."""
    run(["ip", "link", "set", link, "netns", netns])
    run(["ip", "-n", netns, "link", "set", link, "name", new_name])
    run(["ip", "-n", netns, "link", "set", new_name, "mtu", str(mtu_bytes)])


def set_up(link: str, netns: str | None = None, address: str | None = None) -> None:
    """Optionally address ``link``, then bring it up."""
    prefix = ["ip", "-n", netns] if netns else ["ip"]
    if address:
        run([*prefix, "addr", "add", address, "dev", link])
    run([*prefix, "link", "set", link, "up"])


def enslave(link: str, bridge: str, mtu_bytes: int) -> None:
    """Attach root-side ``link`` to ``bridge`` and bring it up (IPv6 off: a bridge port only)."""
    _disable_ipv6(link)
    run(["ip", "link", "set", link, "mtu", str(mtu_bytes)])
    run(["ip", "link", "set", link, "master", bridge])
    run(["ip", "link", "set", link, "up"])


def delete_link(name: str) -> None:
    """Delete a root-namespace interface (the veth peer goes too); nothing when already gone.

    The kernel removes a veth whose peer's namespace was just deleted on its own, a moment later:
    a delete that loses that race fails with "Cannot find device" and is no failure.
    """
    if not link_exists(name):
        return
    proc = subprocess.run(
        ["ip", "link", "delete", name], capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0 and link_exists(name):
        detail = proc.stderr.strip() or f"exit {proc.returncode}"
        raise LabError(f"ip link delete {name}: {detail}")


def _disable_ipv6(link: str) -> None:
    knob = Path("/proc/sys/net/ipv6/conf") / link / "disable_ipv6"
    if knob.exists():
        knob.write_text("1\n")


def namespace_pids(name: str) -> list[int]:
    """PIDs of every process inside namespace ``name`` (``ip netns pids``)."""
    if not namespace_exists(name):
        return []
    out = run(["ip", "netns", "pids", name], check=False)
    return [int(word) for word in out.split() if word.isdigit()]


def pid_alive(pid: int) -> bool:
    """True when process ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state letter follows the parenthesised command name, which may contain spaces.
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def stop_pids(pids: Sequence[int], timeout_s: float = 5.0) -> None:
    """SIGTERM each live PID, wait (bounded) for them to go, SIGKILL the rest; reap our children."""
    live = [pid for pid in pids if pid_alive(pid)]
    for pid in live:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while live and time.monotonic() < deadline:
        _reap(live)
        live = [pid for pid in live if pid_alive(pid)]
        if live:
            time.sleep(0.05)
    for pid in live:
        _signal(pid, signal.SIGKILL)
    _reap(pids)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pids: Sequence[int]) -> None:
    # Daemons started by this very process (tests, a long-lived caller) stay zombies until reaped.
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
