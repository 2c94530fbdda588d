#!/usr/bin/python3
"""The lab's ``midclt`` for TrueNAS hosts: a stand-in for the middleware's interface API.

Copied into a lab host's root as /usr/bin/midclt; standard library only. Like the middleware
(truenas/middleware ``plugins/network.py`` and ``plugins/interface/configure.py``, SCALE 24.04.2
7ae91f2c9eea2bc19bf9ed774304a39c26fe4a5c) it keeps each NIC's configuration apart from its
live state: static ``aliases``, ``ipv4_dhcp``, ``ipv6_auto``, ``mtu`` (None: 1500).
``interface.update`` merges into that configuration (the tables are saved first);
``interface.commit`` configures the updated NICs with ``ip``: the MTU, exactly the configured
aliases plus, with DHCP (autoconf), the dynamic IPv4 (IPv6) addresses the NIC holds; with
rollback a detached timer puts the saved tables and NICs back after ``checkin_timeout`` unless
``interface.checkin`` comes first. ``interface.query`` answers in the middleware's shape:
configured ``aliases`` at the top, live addresses in ``state.aliases``.

Lab simplifications: on first use every NIC with static global addresses is taken as
configured with them (a NAS set up through its UI); a NIC without configuration is left as it
is by a commit (the real sync would unconfigure it) and put back as it was by a rollback.
Results print as the real midclt prints them (ints and strings bare, else JSON).
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
    """The state (config, saved, dirty, timer) under an exclusive lock; written back on exit."""
    os.makedirs(STATE_DIR, mode=0o700, exist_ok=True)
    with open(LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(STATE_FILE) as f:
                state: dict[str, Any] = json.load(f)
        except (OSError, ValueError):
            state = {}
        if "config" not in state:
            state["config"] = seed_config()
        state.setdefault("saved", None)
        state.setdefault("dirty", [])
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
    """Every NIC but lo: MTU, up flag, MAC, global addresses ``A/prefix`` and the dynamic ones."""
    found = {}
    for nic in ip("-j", "addr", "show"):
        if nic["ifname"] == "lo":
            continue
        infos = [a for a in nic.get("addr_info", []) if a.get("scope") == "global"]
        found[nic["ifname"]] = {
            "mtu": nic.get("mtu"),
            "up": "UP" in nic.get("flags", []),
            "flags": nic.get("flags", []),
            "mac": nic.get("address", ""),
            "addresses": [f"{a['local']}/{a['prefixlen']}" for a in infos],
            "dynamic": [f"{a['local']}/{a['prefixlen']}" for a in infos if a.get("dynamic")],
            "broadcast": {a["local"]: a["broadcast"] for a in infos if a.get("broadcast")},
        }
    return found


def seed_config() -> dict[str, dict[str, Any]]:
    """The first configuration: each NIC with static global addresses, configured with them."""
    config = {}
    for name, nic in live().items():
        static = [a for a in nic["addresses"] if a not in nic["dynamic"]]
        if static:
            mtu = nic["mtu"] if nic["mtu"] != 1500 else None
            config[name] = {"aliases": static, "ipv4_dhcp": False, "ipv6_auto": False, "mtu": mtu}
    return config


def alias_dict(address: str) -> dict[str, Any]:
    """``198.18.4.1/30`` -> ``{"type": "INET", "address": "198.18.4.1", "netmask": 30}``."""
    host, _, prefix = address.partition("/")
    return {"type": "INET6" if ":" in host else "INET", "address": host, "netmask": int(prefix)}


def alias_text(alias: Any) -> str:
    """``{"type": "INET", "address": ..., "netmask": 30}`` -> ``address/30``; validated as the
    middleware's ``interface_alias`` (type defaults to INET, netmask an int)."""
    if not isinstance(alias, dict) or set(alias) - {"type", "address", "netmask"}:
        raise CallError(f"[EINVAL] interface_update.aliases: bad alias {alias!r}")
    if alias.get("type", "INET") not in ("INET", "INET6") or not isinstance(
        alias.get("netmask"), int
    ):
        raise CallError(f"[EINVAL] interface_update.aliases: bad type or netmask in {alias!r}")
    return f"{alias['address']}/{alias['netmask']}"


def configured(state: dict[str, Any], name: str) -> dict[str, Any]:
    """A NIC's configuration as ``interface.query`` shows it (``iface_extend``): a NIC without
    one has no aliases, no MTU and DHCP only while no NIC at all is configured."""
    default = {"aliases": [], "ipv4_dhcp": not state["config"], "ipv6_auto": False, "mtu": None}
    found: dict[str, Any] = state["config"].get(name, default)
    return found


def put(name: str, mtu: int | None, addresses: list[str] | None, up: bool | None) -> None:
    """Make NIC ``name`` have this MTU, exactly these global addresses, this up flag."""
    if mtu is not None:
        ip("link", "set", "dev", name, "mtu", str(mtu))
    if addresses is not None:
        now = live()[name]["addresses"]
        for address in now:
            if address not in addresses:
                ip("addr", "del", address, "dev", name)
        for address in addresses:
            if address not in now:  # a present one keeps its lifetime (a DHCP lease's)
                ip("addr", "add", address, "dev", name)
    if up is not None:
        ip("link", "set", "dev", name, "up" if up else "down")


def configure(state: dict[str, Any], name: str) -> None:
    """``interface.configure``: the configured MTU (else 1500), exactly the configured aliases
    plus what DHCP or autoconf holds (the NIC's dynamic addresses), the link up."""
    config = state["config"][name]
    nic = live()[name]
    held = [
        a
        for a in nic["dynamic"]
        if (config["ipv6_auto"] if ":" in a else config["ipv4_dhcp"]) and a not in config["aliases"]
    ]
    put(name, config["mtu"] or 1500, [*config["aliases"], *held], True)


def interface_update(state: dict[str, Any], name: str, data: Any) -> dict[str, Any]:
    nics = live()
    if name not in nics:
        raise CallError(f"[ENOENT] interface.update: Interface {name!r} does not exist")
    known = {"mtu", "aliases", "ipv4_dhcp", "ipv6_auto"}
    if not isinstance(data, dict) or set(data) - known:
        raise CallError(f"[EINVAL] interface_update: this lab knows {sorted(known)}, not {data!r}")
    mtu = data.get("mtu")
    if mtu is not None and (not isinstance(mtu, int) or not 68 <= mtu <= 9216):
        raise CallError(f"[EINVAL] interface_update.mtu: {mtu!r} is not in 68..9216")
    new = {**configured(state, name)}
    if "aliases" in data:
        if not isinstance(data["aliases"], list):
            raise CallError("[EINVAL] interface_update.aliases: not a list")
        new["aliases"] = [alias_text(a) for a in data["aliases"]]
    for key in ("mtu", "ipv4_dhcp", "ipv6_auto"):
        if key in data:
            new[key] = data[key]
    if new["ipv4_dhcp"] and any(c["ipv4_dhcp"] for n, c in state["config"].items() if n != name):
        raise CallError(
            "[EINVAL] interface_update.ipv4_dhcp: Only one interface can be used for DHCP."
        )
    if state["saved"] is None:  # __save_datastores: the tables as they were before any update
        state["saved"] = {"config": state["config"], "live": nics}
    state["config"] = {**state["config"], name: new}
    state["dirty"] = sorted({*state["dirty"], name})
    return query_entry(state, name, nics[name])


def interface_commit(state: dict[str, Any], options: Any) -> None:
    options = options if isinstance(options, dict) else {}
    for name in state["dirty"]:
        configure(state, name)
    state["dirty"] = []
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
        state["saved"] = None


def cancel_timer(state: dict[str, Any]) -> None:
    timer = state.get("timer")
    state["timer"] = None
    if timer:
        with suppress(OSError):  # the timer may have ended already
            os.kill(int(timer["pid"]), signal.SIGTERM)


def interface_rollback(state: dict[str, Any]) -> None:
    cancel_timer(state)
    saved = state["saved"]
    state["saved"], state["dirty"] = None, []
    if saved is None:
        return
    state["config"] = saved["config"]
    for name, nic in saved["live"].items():
        if name in state["config"]:
            configure(state, name)
        else:
            put(name, nic["mtu"], nic["addresses"], nic["up"])


def checkin_waiting(state: dict[str, Any]) -> int | None:
    timer = state.get("timer")
    remaining = timer["deadline"] - time.time() if timer else 0
    return int(remaining) if remaining > 0 else None


def query_entry(state: dict[str, Any], name: str, nic: dict[str, Any]) -> dict[str, Any]:
    """One ``interface.query`` entry: ``iface_extend`` around the netif ``asdict`` state."""
    live_aliases: list[dict[str, Any]] = [{"type": "LINK", "address": nic["mac"]}]
    for address in nic["addresses"]:
        entry = alias_dict(address)
        if entry["address"] in nic["broadcast"]:
            entry["broadcast"] = nic["broadcast"][entry["address"]]
        live_aliases.append(entry)
    link = "LINK_STATE_UP" if "LOWER_UP" in nic["flags"] else "LINK_STATE_DOWN"
    config = configured(state, name)
    return {
        "id": name,
        "name": name,
        "fake": False,
        "type": "PHYSICAL",
        "state": {
            "name": name,
            "orig_name": name,
            "description": name,
            "mtu": nic["mtu"],
            "cloned": False,
            "flags": nic["flags"],
            "nd6_flags": [],
            "capabilities": [],
            "link_state": link,
            "media_type": "",
            "media_subtype": "",
            "active_media_type": "",
            "active_media_subtype": "",
            "supported_media": [],
            "media_options": None,
            "link_address": nic["mac"],
            "permanent_link_address": None,
            "hardware_link_address": nic["mac"],
            "aliases": live_aliases,
            "vrrp_config": None,
        },
        "aliases": [alias_dict(a) for a in config["aliases"]],
        "ipv4_dhcp": config["ipv4_dhcp"],
        "ipv6_auto": config["ipv6_auto"],
        "description": "",
        "mtu": config["mtu"],
    }


def matches(entry: dict[str, Any], filters: Any) -> bool:
    """Query filters ``[["id", "=", "eth1"]]``, ``[["name", "in", [...]]]`` (all must hold)."""
    for field, op, value in filters if isinstance(filters, list) else []:
        if op == "=" and entry.get(field) != value:
            return False
        if op == "in" and entry.get(field) not in value:
            return False
        if op not in ("=", "in"):
            raise CallError(f"[EINVAL] this lab knows the = and in filters, not {op!r}")
    return True


def interface_query(state: dict[str, Any], args: list[Any]) -> Any:
    filters = args[0] if args else []
    options = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    found = [
        entry
        for name, nic in sorted(live().items())
        if matches(entry := query_entry(state, name, nic), filters)
    ]
    if options.get("get"):
        if not found:
            raise CallError("[ENOENT] Object not found")
        return found[0]
    return found


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
    with locked() as state:
        if method == "interface.query":
            return interface_query(state, args)
        if method == "interface.update" and len(args) == 2:
            return interface_update(state, str(args[0]), args[1])
        if method == "interface.commit":
            return interface_commit(state, args[0] if args else {})
        if method == "interface.checkin":
            cancel_timer(state)
            state["saved"] = None
            return None
        if method == "interface.cancel_rollback":
            return cancel_timer(state)
        if method == "interface.checkin_waiting":
            return checkin_waiting(state)
        if method == "interface.rollback":
            return interface_rollback(state)
        if method == "interface.has_pending_changes":
            return state["saved"] is not None
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
