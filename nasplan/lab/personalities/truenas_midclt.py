#!/usr/bin/python3
"""The lab's ``midclt`` for TrueNAS hosts: a stand-in for the middleware's interface API.

Copied into a lab host's root as /usr/bin/midclt; standard library only. ``interface.update``
stages a change (the NIC's live state is saved first, as the middleware saves its tables),
``interface.commit`` applies staged changes with ``ip`` and, with rollback, starts a detached
timer that puts the saved state back after ``checkin_timeout`` unless ``interface.checkin``
comes first. Results print as the real midclt prints them (ints and strings bare, else JSON).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

VERSION = "@VERSION@"
STATE_DIR = "/var/lib/nasplan-lab-midclt"
STATE_FILE = f"{STATE_DIR}/interfaces.json"
LOCK_FILE = f"{STATE_DIR}/lock"
# Every call's method, one a line: lets a lab test see which API a run used.
CALL_LOG = f"{STATE_DIR}/calls.log"
TIMER_ARG = "--rollback-timer"


class CallError(Exception):
    """A middleware error: printed to stderr as ``[ERRNO] message``, exit 1."""


@contextmanager
def locked() -> Iterator[dict[str, Any]]:
    """The state (staged, original, timer) under an exclusive lock; written back on exit."""
    os.makedirs(STATE_DIR, mode=0o700, exist_ok=True)
    with open(LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(STATE_FILE) as f:
                state: dict[str, Any] = json.load(f)
        except (OSError, ValueError):
            state = {}
        state.setdefault("staged", {})
        state.setdefault("original", {})
        state.setdefault("timer", None)
        yield state
        with open(STATE_FILE + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(STATE_FILE + ".tmp", STATE_FILE)


def ip(*args: str) -> Any:
    """Run ``ip``; parsed JSON for ``-j`` calls."""
    out = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CallError(f"[EFAULT] ip {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout or "[]") if args[0] == "-j" else None


def live() -> dict[str, dict[str, Any]]:
    """Every NIC's MTU, up flag and global addresses (``198.18.4.1/30``), by name."""
    found = {}
    for nic in ip("-j", "addr", "show"):
        addresses = [
            f"{a['local']}/{a['prefixlen']}"
            for a in nic.get("addr_info", [])
            if a.get("scope") == "global"
        ]
        found[nic["ifname"]] = {
            "mtu": nic.get("mtu"),
            "up": "UP" in nic.get("flags", []),
            "addresses": addresses,
        }
    return found


def alias_text(alias: Any) -> str:
    """``{"type": "INET", "address": ..., "netmask": 30}`` -> ``address/30``; validated."""
    if not isinstance(alias, dict) or set(alias) - {"type", "address", "netmask"}:
        raise CallError(f"[EINVAL] interface_update.aliases: bad alias {alias!r}")
    if alias.get("type") not in ("INET", "INET6") or not isinstance(alias.get("netmask"), int):
        raise CallError(f"[EINVAL] interface_update.aliases: bad type or netmask in {alias!r}")
    return f"{alias['address']}/{alias['netmask']}"


def put(name: str, mtu: int | None, addresses: list[str] | None, up: bool | None) -> None:
    """Make NIC ``name`` have this MTU, exactly these global addresses, this up flag."""
    if mtu is not None:
        ip("link", "set", "dev", name, "mtu", str(mtu))
    if addresses is not None:
        for address in live()[name]["addresses"]:
            if address not in addresses:
                ip("addr", "del", address, "dev", name)
        for address in addresses:
            ip("addr", "replace", address, "dev", name)
    if up is not None:
        ip("link", "set", "dev", name, "up" if up else "down")


def interface_update(state: dict[str, Any], name: str, data: Any) -> dict[str, Any]:
    nics = live()
    if name not in nics:
        raise CallError(f"[ENOENT] interface.update: Interface {name!r} does not exist")
    if not isinstance(data, dict) or set(data) - {"mtu", "aliases"}:
        raise CallError(f"[EINVAL] interface_update: this lab knows mtu and aliases, not {data!r}")
    mtu = data.get("mtu")
    if mtu is not None and (not isinstance(mtu, int) or not 68 <= mtu <= 9216):
        raise CallError(f"[EINVAL] interface_update.mtu: {mtu!r} is not in 68..9216")
    staged = state["staged"].setdefault(name, {})
    if mtu is not None:
        staged["mtu"] = mtu
    if "aliases" in data:
        staged["aliases"] = [alias_text(a) for a in data["aliases"]]
    state["original"].setdefault(name, nics[name])
    return {"id": name, "name": name, **staged}


def interface_commit(state: dict[str, Any], options: Any) -> None:
    options = options if isinstance(options, dict) else {}
    for name, staged in state["staged"].items():
        aliases = staged.get("aliases")
        put(name, staged.get("mtu"), aliases, True if aliases else None)
    state["staged"] = {}
    timeout = int(options.get("checkin_timeout", 60))
    if options.get("rollback", True) and timeout:
        cancel_timer(state)
        token = secrets.token_hex(8)
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), TIMER_ARG, token, str(timeout)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        state["timer"] = {"token": token, "pid": proc.pid, "deadline": time.time() + timeout}
    else:
        state["original"] = {}


def cancel_timer(state: dict[str, Any]) -> None:
    timer = state.get("timer")
    state["timer"] = None
    if timer:
        with suppress(OSError):  # the timer may have ended already
            os.kill(int(timer["pid"]), signal.SIGTERM)


def interface_rollback(state: dict[str, Any]) -> None:
    cancel_timer(state)
    for name, saved in state["original"].items():
        put(name, saved["mtu"], saved["addresses"], saved["up"])
    state["staged"], state["original"] = {}, {}


def checkin_waiting(state: dict[str, Any]) -> int | None:
    timer = state.get("timer")
    remaining = timer["deadline"] - time.time() if timer else 0
    return int(remaining) if remaining > 0 else None


def interface_query() -> list[dict[str, Any]]:
    result = []
    for name, nic in sorted(live().items()):
        aliases = []
        for address in nic["addresses"]:
            host, _, prefix = address.partition("/")
            family = "INET6" if ":" in host else "INET"
            aliases.append({"type": family, "address": host, "netmask": int(prefix)})
        link = "LINK_STATE_UP" if nic["up"] else "LINK_STATE_DOWN"
        result.append(
            {
                "id": name,
                "name": name,
                "type": "PHYSICAL",
                "mtu": nic["mtu"],
                "aliases": aliases,
                "state": {"name": name, "mtu": nic["mtu"], "link_state": link, "aliases": aliases},
            }
        )
    return result


def rollback_timer(token: str, timeout_s: float) -> None:
    """The detached timer: roll back unless checkin or another commit replaced it."""
    time.sleep(timeout_s)
    with locked() as state:
        timer = state.get("timer")
        if timer and timer.get("token") == token:
            state["timer"] = None
            interface_rollback(state)


def call(method: str, args: list[Any]) -> Any:
    if method == "system.version":
        return f"TrueNAS-SCALE-{VERSION}"
    if method == "system.info":
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        return {
            "version": f"TrueNAS-SCALE-{VERSION}",
            "hostname": socket.gethostname(),
            "physmem": kib * 1024,
            "cores": os.cpu_count(),
        }
    if method == "interface.query":
        return interface_query()
    with locked() as state:
        if method == "interface.update" and len(args) == 2:
            return interface_update(state, str(args[0]), args[1])
        if method == "interface.commit":
            return interface_commit(state, args[0] if args else {})
        if method == "interface.checkin":
            cancel_timer(state)
            state["original"] = {}
            return None
        if method == "interface.cancel_rollback":
            return cancel_timer(state)
        if method == "interface.checkin_waiting":
            return checkin_waiting(state)
        if method == "interface.rollback":
            return interface_rollback(state)
        if method == "interface.has_pending_changes":
            return bool(state["original"])
    raise CallError("[ENOMETHOD] Method does not exist")


def from_json(text: str) -> Any:
    """An argument as midclt reads it: JSON when it parses, else the string itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == TIMER_ARG:
        rollback_timer(argv[1], float(argv[2]))
        return 0
    if os.geteuid() != 0:
        print("Not authenticated", file=sys.stderr)
        return 1
    if len(argv) < 2 or argv[0] != "call":
        print("usage: midclt call METHOD [ARG ...]", file=sys.stderr)
        return 2
    os.makedirs(STATE_DIR, mode=0o700, exist_ok=True)
    with open(CALL_LOG, "a") as log:
        log.write(argv[1] + "\n")
    try:
        result = call(argv[1], [from_json(a) for a in argv[2:]])
    except CallError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(result if isinstance(result, (int, str)) else json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
