"""NICs through ``ifconfig`` and ``route`` alone (a NAS shell without ``ip``): read, change, undo.

``ifconfig`` sees one IPv4 address per label: an interface's first address, and each alias
(``eth1:0``) as an interface of its own. So a second IPv4 address goes on an alias label, and
the state read back lists the addresses ``ifconfig -a`` shows (labelled ones included).
Routes come from ``/proc/net/route``, which every Linux has.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import struct
from collections.abc import Mapping, Sequence

from nasplan.errors import UnknownOutput
from nasplan.input.network import NicChange
from nasplan.network.state import Link, NicState, Route, assemble

_MTU = re.compile(r"\bMTU[: ](\d+)", re.IGNORECASE)
_INET = re.compile(r"\binet (?:addr:)?(\d+\.\d+\.\d+\.\d+)\s.*?(?:Mask:|netmask )(\S+)")
_INET6 = re.compile(
    r"\binet6 (?:addr:\s*)?([0-9a-fA-F:.]+)(?:/(\d+))?.*?(?:Scope:(\w+)|scopeid \S+<(\w+)>|$)"
)
_INET6_PREFIXLEN = re.compile(r"\bprefixlen (\d+)")
_NEW_FLAGS = re.compile(r"\bflags=\d+<([^>]*)>")
_TRACKED_V6_SCOPES = ("global", "site", "host")
_RTF_GATEWAY = 0x2
_RTF_HOST = 0x4


def alias(nic: str, index: int) -> str:
    """``eth1:0``: the label a second IPv4 address goes on (``ifconfig`` has no ``add``)."""
    return f"{nic}:{index}"


def parse_ifconfig(text: str) -> dict[str, Link]:
    """``ifconfig -a`` (BusyBox / net-tools, old and new layout) -> ``{nic: (mtu, up, addrs)}``.

    Alias blocks (``eth1:0``) add their address to ``eth1``; IPv6 link-scope addresses are left out.
    """
    mtus: dict[str, int | None] = {}
    ups: dict[str, bool] = {}
    addresses: dict[str, list[str]] = {}
    current: str | None = None
    is_alias = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            label = line.split()[0].rstrip(":")
            current, is_alias = label.split(":")[0], ":" in label
            addresses.setdefault(current, [])
            mtus.setdefault(current, None)
            ups.setdefault(current, False)
            new_flags = _NEW_FLAGS.search(line)  # net-tools 2.10: "eth1: flags=4163<UP,...>  mtu"
            if new_flags and not is_alias:
                ups[current] = "UP" in new_flags[1].split(",")
                mtu = _MTU.search(line)
                mtus[current] = int(mtu[1]) if mtu else None
            continue
        if current is None:
            continue
        inet, inet6, mtu = _INET.search(line), _INET6.search(line), _MTU.search(line)
        if inet:
            prefix = ipaddress.IPv4Network(f"0.0.0.0/{inet[2]}").prefixlen
            addresses[current].append(f"{inet[1]}/{prefix}")
        elif inet6:
            scope = (inet6[3] or inet6[4] or "global").lower()
            found = _INET6_PREFIXLEN.search(line)
            prefixlen = inet6[2] or (found[1] if found else "128")
            if scope in _TRACKED_V6_SCOPES:
                addresses[current].append(str(ipaddress.ip_interface(f"{inet6[1]}/{prefixlen}")))
        elif mtu and not is_alias:  # BusyBox / older net-tools: "UP BROADCAST ...  MTU:1500"
            mtus[current] = int(mtu[1])
            ups[current] = "UP" in line.split()
    return {name: (mtus[name], ups[name], tuple(addresses[name])) for name in addresses}


def _hex_ipv4(value: str) -> str:
    """``/proc/net/route`` hex (host byte order, little-endian here) -> dotted quad."""
    return socket.inet_ntoa(struct.pack("<I", int(value, 16)))


def parse_proc_route(text: str) -> list[tuple[str, Route]]:
    """``/proc/net/route`` -> [(device, Route)] (IPv4, main table as the kernel shows it)."""
    routes = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        dev, dst, gateway, flags, metric, mask = (fields[i] for i in (0, 1, 2, 3, 6, 7))
        try:
            network = ipaddress.IPv4Network(f"{_hex_ipv4(dst)}/{_hex_ipv4(mask)}")
            gateway_ip = _hex_ipv4(gateway) if int(flags, 16) & _RTF_GATEWAY else None
        except ValueError:
            continue
        routes.append(
            (
                dev,
                Route(
                    dst="default" if network.prefixlen == 0 else str(network),
                    gateway=gateway_ip,
                    metric=int(metric) if metric.isdigit() else None,
                ),
            )
        )
    return routes


def route_to(proc_route: str, peer_ip: str) -> tuple[str | None, str | None]:
    """The route the kernel takes to ``peer_ip`` (longest prefix, then lowest metric):
    (device, gateway or None); (None, None) when none matches."""
    try:
        peer = ipaddress.IPv4Address(peer_ip)
    except ValueError:
        return None, None
    best: tuple[int, int, str, str | None] | None = None
    for dev, route in parse_proc_route(proc_route):
        network = ipaddress.IPv4Network("0.0.0.0/0" if route.dst == "default" else route.dst)
        if peer not in network:
            continue
        rank = (-network.prefixlen, route.metric or 0, dev, route.gateway)
        if best is None or rank[:2] < best[:2]:
            best = rank
    return (best[2], best[3]) if best else (None, None)


def parse_state(
    ifconfig_text: str, route_text: str, speeds: Mapping[str, str] | None = None
) -> dict[str, NicState]:
    """``ifconfig -a`` + ``/proc/net/route`` (+ sysfs speeds) -> ``{nic: NicState}``.

    UnknownOutput for an ``ifconfig`` layout with no interface or one without its MTU, and for a
    ``/proc/net/route`` that is not empty and has no header line.
    """
    links = parse_ifconfig(ifconfig_text)
    if not links or any(mtu is None for mtu, _, _ in links.values()):
        expected = "blocks of BusyBox or net-tools `ifconfig -a`, each with its MTU"
        raise UnknownOutput("ifconfig -a", expected, ifconfig_text)
    if route_text.strip() and not route_text.startswith("Iface"):  # nothing: the caller's
        raise UnknownOutput("cat /proc/net/route", "its `Iface Destination ...` header", route_text)
    routes: dict[str, list[Route]] = {}
    for dev, route in parse_proc_route(route_text):
        addresses = links.get(dev, (None, False, ()))[2]
        # The kernel's own prefix route of an address: direct, metric 0, the address's network.
        derived = (
            route.gateway is None
            and not route.metric
            and any(str(ipaddress.ip_interface(a).network) == route.dst for a in addresses)
        )
        if not derived:
            routes.setdefault(dev, []).append(route)
    return assemble(links, routes, speeds)


def _v4(cidr: str) -> ipaddress.IPv4Interface | None:
    interface = ipaddress.ip_interface(cidr)
    return interface if isinstance(interface, ipaddress.IPv4Interface) else None


def _labels(change: NicChange, before: NicState | None) -> dict[str, str]:
    """Address -> the label ``apply_argvs`` puts it on (the NIC itself while it has no IPv4)."""
    has_v4 = any(_v4(a) for a in (before.addresses if before else ()))
    labels: dict[str, str] = {}
    aliases = 0
    for address in change.add_addresses:
        if _v4(address) is None or (before and address in before.addresses):
            continue
        if has_v4:
            labels[address] = alias(change.nic, aliases)
            aliases += 1
        else:
            labels[address] = change.nic
            has_v4 = True
    return labels


def _set_v4(label: str, cidr: str) -> list[str]:
    interface = _v4(cidr)
    assert interface is not None
    return [label, str(interface.ip), "netmask", str(interface.netmask)]


def link_argvs(ifconfig: str, change: NicChange, state: NicState | None) -> list[list[str]]:
    """``ifconfig NIC mtu N`` first, then ``up`` where an address goes on a down NIC (Linux and
    BSD ``ifconfig`` alike; an address on a down link stays unused)."""
    argvs: list[list[str]] = []
    if change.mtu_bytes is not None:
        argvs.append([ifconfig, change.nic, "mtu", str(change.mtu_bytes)])
    if change.add_addresses and not (state and state.up):
        argvs.append([ifconfig, change.nic, "up"])
    return argvs


def apply_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState], ifconfig: str = "ifconfig"
) -> list[list[str]]:
    """``ifconfig`` commands that make ``changes`` (MTU first, as with ``ip``)."""
    argvs: list[list[str]] = []
    for change in changes:
        state = before.get(change.nic)
        argvs += link_argvs(ifconfig, change, state)
        labels = _labels(change, state)
        for address in change.add_addresses:
            if state and address in state.addresses:
                continue
            if address in labels:
                argvs.append([ifconfig, *_set_v4(labels[address], address), "up"])
            else:
                argvs.append([ifconfig, change.nic, "add", address])
    return argvs


def route_argv(route: Route, nic: str, route_tool: str = "route") -> list[str]:
    """``route add`` argv that puts ``route`` back on ``nic``."""
    if route.dst == "default":
        argv = [route_tool, "add", "default"]
    else:
        network = ipaddress.IPv4Network(route.dst)
        kind = "-host" if network.prefixlen == 32 else "-net"
        argv = [route_tool, "add", kind, str(network.network_address)]
        if kind == "-net":
            argv += ["netmask", str(network.netmask)]
    if route.gateway:
        argv += ["gw", route.gateway]
    if route.metric:
        argv += ["metric", str(route.metric)]
    return [*argv, "dev", nic]


def restore_argvs(
    changes: Sequence[NicChange],
    before: Mapping[str, NicState],
    ifconfig: str = "ifconfig",
    route_tool: str = "route",
) -> list[list[str]]:
    """``ifconfig``/``route`` commands that put every changed NIC back to ``before``."""
    argvs: list[list[str]] = []
    for change in changes:
        state = before[change.nic]
        labels = _labels(change, state)
        for address in change.add_addresses:
            if address in state.addresses:
                continue
            label = labels.get(address)
            if label == change.nic:  # the NIC's only IPv4 address: 0.0.0.0 removes it
                argvs.append([ifconfig, change.nic, "0.0.0.0"])
            elif label is not None:  # an alias goes when its label goes down
                argvs.append([ifconfig, label, "down"])
            else:
                argvs.append([ifconfig, change.nic, "del", address])
        if state.mtu_bytes is not None:
            argvs.append([ifconfig, change.nic, "mtu", str(state.mtu_bytes)])
        first_v4 = next((a for a in state.addresses if _v4(a)), None)
        if first_v4 is not None:  # setting the address it still has is a no-op
            argvs.append([ifconfig, *_set_v4(change.nic, first_v4)])
        argvs.append([ifconfig, change.nic, "up" if state.up else "down"])
        argvs.extend(route_argv(route, change.nic, route_tool) for route in state.routes)
    return argvs
