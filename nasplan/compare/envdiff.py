"""A run's environment as named aspects (link speed, MTU, driver, OS, firmware...) and its diff."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.facts import storage, volumes
from nasplan.measure import kinds
from nasplan.units import format_bits_per_second

DASH = "–"
LOOPBACK_NICS = frozenset({"lo", "lo0"})
# Keys another measurement kind may record in HostFacts for the storage layout; the facts'
# own ``storage`` (md RAID, ZFS, disks, filesystems) is spelled out by nasplan/facts/storage.py.
DISK_FACT_KEYS = ("disks", "volumes", "raid", "disk_layout")
_KEY_VALUE = re.compile(r'^\s*([A-Za-z_ ]+?)\s*=\s*"?([^"]*)"?\s*$')


@dataclass(frozen=True)
class Change:
    """One aspect whose value differs between runs: ``values[i]`` is run i's (``–`` if absent)."""

    aspect: str
    values: list[str]


def _speed(bits_per_second: Any) -> str | None:
    if not isinstance(bits_per_second, (int, float)) or isinstance(bits_per_second, bool):
        return None
    for factor, unit in ((10**9, "Gbit/s"), (10**6, "Mbit/s")):
        if bits_per_second >= factor:
            return f"{bits_per_second / factor:g} {unit}"
    return format_bits_per_second(bits_per_second)


def _key_values(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        match = _KEY_VALUE.match(line)
        if match:
            found[match.group(1).strip().lower()] = match.group(2).strip()
    return found


def firmware(facts: Mapping[str, Any]) -> str | None:
    """NAS firmware from the facts' markers: ``DSM 7.2.1-69057``, ``QTS 5.1.0 build 20230822``."""
    if facts.get("firmware"):
        return str(facts["firmware"])
    markers = facts.get("markers") or {}
    synology = _key_values(str(markers.get("/etc.defaults/VERSION") or ""))
    if synology.get("productversion"):
        build = synology.get("buildnumber")
        return f"DSM {synology['productversion']}" + (f"-{build}" if build else "")
    qnap = _key_values(str(markers.get("/etc/config/uLinux.conf") or ""))
    if qnap.get("version"):
        build = qnap.get("build number")
        return f"QTS {qnap['version']}" + (f" build {build}" if build else "")
    return None


def _compact(value: Any) -> str:
    """A fact value as one stable line (dicts with sorted keys)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _host_aspects(name: str, host: Mapping[str, Any]) -> dict[str, str | None]:
    facts = host.get("facts") or {}
    cores = facts.get("cpu_cores")
    aspects: dict[str, str | None] = {
        f"{name}: platform": host.get("platform"),
        f"{name}: OS": host.get("os")
        or facts.get("os_pretty")
        or " ".join(str(p) for p in (facts.get("os_id"), facts.get("os_version")) if p)
        or None,
        f"{name}: firmware": firmware(facts),
        f"{name}: kernel": facts.get("kernel"),
        f"{name}: CPU": ", ".join(
            str(p) for p in (facts.get("cpu_model"), f"{cores} cores" if cores else None) if p
        )
        or None,
        f"{name}: RAM": f"{facts['memory_bytes'] / 2**30:.1f} GiB"
        if isinstance(facts.get("memory_bytes"), int)
        else None,
        f"{name}: iperf3": facts.get("iperf3_version"),
    }
    for key in DISK_FACT_KEYS:
        if facts.get(key):
            aspects[f"{name}: {key}"] = _compact(facts[key])
    found = {**storage.aspects(facts.get("storage") or {}), **volumes.aspects(host)}
    for key, text in found.items():
        aspects[f"{name}: {key}"] = text
    for key, iface in sorted((host.get("interfaces") or {}).items()):
        aspects[f"{name}.{key}: nominal speed"] = _speed(iface.get("speed_bits_per_second"))
    for nic in sorted(facts.get("interfaces") or [], key=lambda n: str(n.get("name"))):
        nic_name = nic.get("name")
        if nic_name in LOOPBACK_NICS:
            continue
        mbps = nic.get("speed_mbps")
        aspects[f"{name} {nic_name}: MTU"] = (
            _compact(nic["mtu_bytes"]) if nic.get("mtu_bytes") else None
        )
        aspects[f"{name} {nic_name}: negotiated speed"] = (
            _speed(mbps * 10**6) if isinstance(mbps, int) else None
        )
        aspects[f"{name} {nic_name}: driver"] = nic.get("driver")
        aspects[f"{name} {nic_name}: addresses"] = ", ".join(nic.get("addresses") or []) or None
    return aspects


def _filesystem(run: Mapping[str, Any], test: Mapping[str, Any]) -> str | None:
    """``btrfs on /dev/md2 (/volume1)``: what holds a disk test's path, from its host's facts."""
    where = kinds.readout(test).storage_path(test)
    if where is None:
        return None
    host, path = where
    facts = ((run.get("hosts") or {}).get(host) or {}).get("facts") or {}
    mount = storage.filesystem_of(path, (facts.get("storage") or {}).get("mounts") or [])
    return f"{mount['fstype']} on {mount['source']} ({mount['mountpoint']})" if mount else None


def environment(run: Mapping[str, Any]) -> dict[str, str]:
    """Aspects of one run's environment, name -> value text, absent ones left out.

    Names look like ``nas: kernel``, ``nas.p2p: nominal speed``, ``nas eth1: MTU``,
    ``path of p2p-single``.
    """
    aspects: dict[str, str | None] = {"nasplan version": run.get("nasplan_version")}
    for name, host in sorted((run.get("hosts") or {}).items()):
        aspects.update(_host_aspects(name, host))
    for test in run.get("tests", []):
        path = test.get("path") or {}
        parts = [
            _speed(path.get("speed_bits_per_second")),
            f"MTU {path['mtu_bytes']}" if path.get("mtu_bytes") else None,
            f"framing {path['framing']}" if path.get("framing") else None,
        ]
        shown = ", ".join(p for p in parts if p)
        aspects[f"path of {test['id']}"] = shown or None
        aspects[f"filesystem of {test['id']}"] = _filesystem(run, test)
    return {k: str(v) for k, v in aspects.items() if v is not None and v != ""}


def environment_diff(runs: Sequence[Mapping[str, Any]]) -> tuple[list[Change], int]:
    """Aspects that differ between runs (first-seen order) and the number that did not."""
    environments = [environment(run) for run in runs]
    names: list[str] = []
    for env in environments:
        names.extend(n for n in env if n not in names)
    changes = []
    for name in names:
        values = [env.get(name, DASH) for env in environments]
        if len(set(values)) > 1:
            changes.append(Change(name, values))
    return changes, len(names) - len(changes)
