"""NICs of FreeBSD (TrueNAS CORE, FreeNAS) and macOS: read with ``ifconfig -a`` and
``netstat -rn -f inet``, changed with ``ifconfig``, checked with ``route -n get``.

``ifconfig NIC mtu N`` and ``ifconfig NIC inet A netmask M alias`` work alike on both systems and
last until the next reboot (or until the system's own network configuration is applied again):
what a test wants. ``networksetup`` (macOS) and ``rc.conf`` (FreeBSD) would make them stick.
Routes are read back and compared but not re-added: neither an MTU change nor an alias, nor
``ifconfig up``/``down``, removes a BSD route, so a difference after restore is reported as one.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

from nasplan.errors import UnknownOutput
from nasplan.facts.bsd import HEADER, inet_cidr, media_speed_mbps
from nasplan.input.network import NicChange
from nasplan.network.ifconfig import link_argvs
from nasplan.network.state import Link, NicState, Route, assemble

# netstat's flags: G gateway, H host, L link-layer (ARP/NDP) entry, W cloned (macOS).
_NOT_USER_ROUTES = ("L", "W")
_INTERFACE = re.compile(r"^\s*interface:\s*(\S+)", re.MULTILINE)
_GATEWAY = re.compile(r"^\s*gateway:\s*(\S+)", re.MULTILINE)
_FLAGS = re.compile(r"^\s*flags:\s*<([^>]*)>", re.MULTILINE)


def parse_ifconfig(text: str) -> tuple[dict[str, Link], dict[str, str]]:
    """``ifconfig -a`` of FreeBSD or macOS -> (``{nic: (mtu, up, addresses)}``, media speeds).

    ``up`` is the administrative ``UP`` flag (what ``ifconfig NIC up/down`` sets); IPv6
    link-local addresses are left out; speeds are Mbit/s as text (``assemble``'s form).
    """
    links: dict[str, tuple[int | None, bool, list[str]]] = {}
    speeds: dict[str, str] = {}
    current: str | None = None
    for raw in text.splitlines():
        header = HEADER.match(raw)
        if header and not raw[:1].isspace():
            current = header.group(1)
            mtu = header.group(3)
            links[current] = (int(mtu) if mtu else None, "UP" in header.group(2).split(","), [])
            continue
        if current is None:
            continue
        line = raw.strip()
        if line.startswith(("inet ", "inet6 ")):
            cidr = inet_cidr(line)
            if cidr and not _link_local(cidr):
                links[current][2].append(cidr)
        elif "media:" in line:
            speed = media_speed_mbps(line)
            if speed:
                speeds[current] = str(speed)
    return {n: (mtu, up, tuple(a)) for n, (mtu, up, a) in links.items()}, speeds


def _link_local(cidr: str) -> bool:
    interface = ipaddress.ip_interface(cidr)
    return interface.version == 6 and interface.ip.is_link_local


def _natural_prefix(first_octet: int) -> int:
    # netstat prints a classful network without its mask: 127 is /8, 169.254 /16, 192.168.1 /24.
    return 8 if first_octet < 128 else 16 if first_octet < 192 else 24


def destination(text: str, host: bool) -> str | None:
    """A netstat ``Destination`` -> ``default`` or a CIDR; None when it is no IPv4 network.

    ``192.168.1`` -> ``192.168.1.0/24``, ``10.1/16`` -> ``10.1.0.0/16``, ``198.18.4.2`` (H) ->
    ``198.18.4.2/32``.
    """
    if text == "default":
        return "default"
    address, _, prefix = text.partition("/")
    octets = address.split(".")
    if not 1 <= len(octets) <= 4 or not all(o.isdigit() for o in octets):
        return None
    if not prefix:
        prefix = "32" if host or len(octets) == 4 else str(_natural_prefix(int(octets[0])))
    padded = ".".join(octets + ["0"] * (4 - len(octets)))
    try:
        network = ipaddress.IPv4Network(f"{padded}/{prefix}", strict=False)
    except ValueError:
        return None
    return "default" if network.prefixlen == 0 else str(network)


def parse_routes(text: str) -> list[tuple[str, Route]]:
    """``netstat -rn -f inet`` (FreeBSD or macOS) -> [(device, Route)] of the routes someone
    set through a gateway; connected (``link#N``) and ARP entries are derived, left out."""
    routes: list[tuple[str, Route]] = []
    netif = None
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "Destination":
            netif = fields.index("Netif") if "Netif" in fields else None
            continue
        if fields[0].startswith("Internet6"):
            break
        if netif is None or len(fields) <= netif:
            continue
        dst, gateway, flags = fields[0], fields[1], fields[2]
        if "G" not in flags or any(f in flags for f in _NOT_USER_ROUTES):
            continue
        try:
            ipaddress.IPv4Address(gateway)
        except ValueError:
            continue
        network = destination(dst, "H" in flags)
        if network is not None:
            routes.append((fields[netif], Route(network, gateway)))
    return routes


def parse_state(ifconfig_text: str, netstat_text: str) -> dict[str, NicState]:
    """``ifconfig -a`` + ``netstat -rn -f inet`` -> ``{nic: NicState}`` (speed from media).

    UnknownOutput for an ``ifconfig`` with no interface, or an unindented line that is no
    interface's header; and for a ``netstat`` without its ``Destination ... Netif`` header.
    """
    links, speeds = parse_ifconfig(ifconfig_text)
    odd = [
        line for line in ifconfig_text.splitlines() if line[:1].strip() and not HEADER.match(line)
    ]
    if not links or odd:
        expected = "interface headers such as `em0: flags=8843<UP,...> metric 0 mtu 1500`"
        raise UnknownOutput("ifconfig -a", expected, odd[0] if odd else ifconfig_text)
    header = re.search(r"^Destination\s.*\bNetif\b", netstat_text, re.MULTILINE)
    if netstat_text.strip() and not header:  # nothing at all: the caller's to judge
        expected = "its `Destination Gateway Flags ... Netif` header"
        raise UnknownOutput("netstat -rn -f inet", expected, netstat_text)
    routes: dict[str, list[Route]] = {}
    for dev, route in parse_routes(netstat_text):
        routes.setdefault(dev, []).append(route)
    return assemble(links, routes, speeds)


def route_get(text: str) -> tuple[str | None, str | None]:
    """``route -n get IP`` -> (interface, gateway or None when the peer is on a direct link)."""
    interface, gateway, flags = _INTERFACE.search(text), _GATEWAY.search(text), _FLAGS.search(text)
    via = gateway[1] if gateway else None
    if via is not None and flags is not None and "GATEWAY" not in flags[1].split(","):
        via = None  # a cloned host route names the peer's link address, not a router
    return (interface[1] if interface else None), via


def _alias_argv(ifconfig: str, nic: str, cidr: str, remove: bool) -> list[str]:
    interface = ipaddress.ip_interface(cidr)
    if interface.version == 4:
        family = [ifconfig, nic, "inet", str(interface.ip)]
        if remove:
            return [*family, "-alias"]
        return [*family, "netmask", f"0x{int(interface.netmask):08x}", "alias"]
    family = [ifconfig, nic, "inet6", str(interface.ip)]
    if remove:
        return [*family, "-alias"]
    return [*family, "prefixlen", str(interface.network.prefixlen), "alias"]


def apply_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState], ifconfig: str = "ifconfig"
) -> list[list[str]]:
    """``ifconfig`` commands that make ``changes``: MTU, ``up`` when needed, each new address as
    an alias (``inet A netmask 0xfffffffc alias``, ``inet6 A prefixlen N alias``)."""
    argvs: list[list[str]] = []
    for change in changes:
        state = before.get(change.nic)
        argvs += link_argvs(ifconfig, change, state)
        for address in change.add_addresses:
            if not (state and address in state.addresses):
                argvs.append(_alias_argv(ifconfig, change.nic, address, remove=False))
    return argvs


def restore_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState], ifconfig: str = "ifconfig"
) -> list[list[str]]:
    """``ifconfig`` commands that put every changed NIC back: ``-alias`` for each address nasplan
    added, the MTU it had, ``up``/``down`` as it was."""
    argvs: list[list[str]] = []
    for change in changes:
        state = before[change.nic]
        for address in change.add_addresses:
            if address not in state.addresses:
                argvs.append(_alias_argv(ifconfig, change.nic, address, remove=True))
        if state.mtu_bytes is not None:
            argvs.append([ifconfig, change.nic, "mtu", str(state.mtu_bytes)])
        argvs.append([ifconfig, change.nic, "up" if state.up else "down"])
    return argvs
