"""Pure parsers of FreeBSD (TrueNAS CORE, FreeNAS) and macOS facts: ``sysctl`` and ``ifconfig -a``.

Both systems print ``sysctl NAME`` as ``NAME: value`` and describe NICs only through ifconfig
(``mtu`` on the header line, ``ether``, ``inet ... netmask 0xffffff00`` or ``inet A/24``,
``media: ... (1000baseT <full-duplex>)``, ``status: active``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.units import positive_int

BSD_KERNELS = ("Darwin", "FreeBSD")

HEADER = re.compile(r"^(\S+?):\s+flags=\w+<([^>]*)>(?:.*?\bmtu (\d+))?")
_INET = re.compile(r"^inet (\S+?)(?:/(\d+))?(?:\s+netmask (0x[0-9a-fA-F]+|\S+))?(?:\s|$)")
_INET6 = re.compile(r"^inet6 ([0-9a-fA-F:.]+)(?:%\S+)?(?:/(\d+))?(?:.*?\bprefixlen (\d+))?")
# "1000baseT", "10Gbase-SR", "100GBase-SR4", "2500Base-T", "2.5GBase-T", "100baseTX"
_MEDIA_SPEED = re.compile(r"(\d+(?:\.\d+)?)(G?)base", re.IGNORECASE)


def parse_sysctl(lines: Sequence[str]) -> dict[str, str]:
    """``hw.ncpu: 8`` lines -> ``{"hw.ncpu": "8"}``."""
    values: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep and name.strip() and " " not in name.strip():
            values[name.strip()] = value.strip()
    return values


def system_fields(kernel_name: str, sysctl: Mapping[str, str]) -> dict[str, Any]:
    """OS id/version/name, CPU model and count, memory bytes from ``sysctl`` of macOS or FreeBSD.

    Returns HostFacts keyword arguments (``os_id``, ``os_version``, ``os_pretty``, ``cpu_model``,
    ``cpu_cores``, ``memory_bytes``); absent values are None.
    """
    release = sysctl.get("kern.osrelease")
    if kernel_name == "Darwin":
        version = sysctl.get("kern.osproductversion") or None
        os_id, pretty = "macos", f"macOS {version}" if version else "macOS"
        # hw.model is the Mac's model id (MacBookPro16,1); the CPU's name is brand_string.
        cpu = sysctl.get("machdep.cpu.brand_string")
        memory = sysctl.get("hw.memsize")
    else:
        version = release or None
        os_id, pretty = "freebsd", f"FreeBSD {release}" if release else "FreeBSD"
        cpu = sysctl.get("hw.model")
        memory = sysctl.get("hw.physmem")
    return {
        "os_id": os_id,
        "os_version": version,
        "os_pretty": pretty,
        "cpu_model": cpu or None,
        "cpu_cores": positive_int(sysctl.get("hw.ncpu")),
        "memory_bytes": positive_int(memory),
    }


def parse_ifconfig(lines: Sequence[str], kernel_name: str) -> list[dict[str, Any]]:
    """``ifconfig -a`` of FreeBSD or macOS -> one dict per NIC (NicFacts keyword arguments)."""
    nics: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for raw in lines:
        header = HEADER.match(raw)
        if header and not raw[:1].isspace():
            flags = header.group(2).split(",")
            current = {
                "name": header.group(1),
                "mtu_bytes": positive_int(header.group(3)),
                "state": "up" if "UP" in flags and "RUNNING" in flags else "down",
                "mac": None,
                "speed_mbps": None,
                "duplex": None,
                # FreeBSD names a NIC after its driver (ix0, igb1, em0); macOS does not (en0).
                "driver": re.sub(r"\d+$", "", header.group(1))
                if kernel_name == "FreeBSD"
                else None,
                "addresses": [],
            }
            nics.append(current)
            continue
        if current is None:
            continue
        _detail(current, raw.strip())
    return nics


def _detail(nic: dict[str, Any], line: str) -> None:
    if line.startswith("ether "):
        nic["mac"] = line.split()[1].lower()
    elif line.startswith(("inet ", "inet6 ")):
        address = inet_cidr(line)
        if address:
            nic["addresses"].append(address)
    elif "media:" in line:
        active = _active_media(line)
        nic["speed_mbps"] = media_speed_mbps(line)
        if "full-duplex" in active:
            nic["duplex"] = "full"
        elif "half-duplex" in active:
            nic["duplex"] = "half"
    elif line.startswith("status:"):
        status = line.split(":", 1)[1].strip()
        nic["state"] = "up" if status == "active" else "down"


def _active_media(line: str) -> str:
    # FreeBSD may print "hwaddr ...     media: ..." on one line; the active medium is in ().
    media = line.split("media:", 1)[1]
    return media[media.find("(") :] if "(" in media else media


def media_speed_mbps(line: str) -> int | None:
    """A ``media: Ethernet autoselect (10Gbase-T <full-duplex>)`` line -> 10000; None unknown."""
    if "media:" not in line:
        return None
    speed = _MEDIA_SPEED.search(_active_media(line))
    if not speed:
        return None
    return round(float(speed.group(1)) * (1000 if speed.group(2) else 1))


def inet_cidr(line: str) -> str | None:
    """An ``inet``/``inet6`` line of BSD ifconfig (stripped) -> ``A/prefix``; None otherwise.

    ``inet 198.18.4.1 netmask 0xfffffffc ...`` -> ``198.18.4.1/30``;
    ``inet6 fe80::1%lo0 prefixlen 64 scopeid 0x1`` -> ``fe80::1/64``.
    """
    if line.startswith("inet6 "):
        match6 = _INET6.match(line)
        if not match6:
            return None
        prefix6 = match6.group(2) or match6.group(3) or "128"
        try:
            return str(ipaddress.ip_interface(f"{match6.group(1)}/{prefix6}"))
        except ValueError:
            return None
    match = _INET.match(line)
    if not match:
        return None
    address, prefix, netmask = match.groups()
    try:
        if prefix is None and netmask is not None:
            mask = (
                str(ipaddress.IPv4Address(int(netmask, 16)))
                if netmask.startswith("0x")
                else netmask
            )
            return str(ipaddress.ip_interface(f"{address}/{mask}"))
        return str(ipaddress.ip_interface(f"{address}/{prefix or 32}"))
    except ValueError:
        return None
