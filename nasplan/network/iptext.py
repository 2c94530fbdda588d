"""NIC state from ``ip addr show`` / ``ip route show`` text: BusyBox's ``ip`` and iproute2 < 4.17.

Both print iproute2's classic layout (``2: eth1@if5: <BROADCAST,UP> mtu 9000 ...`` then indented
``inet 198.18.4.1/30 ... scope global eth1`` lines); BusyBox leaves ``proto`` out of routes.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping

from nasplan.errors import UnknownOutput
from nasplan.network.state import TRACKED_SCOPES, Link, NicState, Route, assemble

_LINK = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$")
_MTU = re.compile(r"\bmtu (\d+)")
_ADDRESS = re.compile(r"^\s+(?P<family>inet6?)\s+(?P<local>\S+)(?P<rest>.*)$")
_PEER = re.compile(r"\bpeer \S+/(\d+)")
_SCOPE = re.compile(r"\bscope (\S+)")
# Route lines start with a type for routes that leave by no device (unreachable, blackhole...).
_ROUTE_TYPES = ("unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit")
_ROUTE_KEYS = ("via", "dev", "proto", "scope", "metric", "src")


def parse_addr(text: str) -> dict[str, Link]:
    """``ip addr show`` text -> ``{nic: (mtu_bytes, up, addresses)}`` (link-scope left out)."""
    found: dict[str, tuple[int | None, bool, list[str]]] = {}
    current: str | None = None
    for line in text.splitlines():
        link = _LINK.match(line)
        if link:
            current = link["name"]
            mtu = _MTU.search(link["rest"])
            found[current] = (
                int(mtu[1]) if mtu else None,
                "UP" in link["flags"].split(","),
                [],
            )
            continue
        address = _ADDRESS.match(line)
        if current is None or address is None:
            continue
        scope = _SCOPE.search(address["rest"])
        if (scope[1] if scope else "global") not in TRACKED_SCOPES:
            continue
        local = address["local"]
        if "/" not in local:  # `inet 10.0.0.1 peer 10.0.0.2/32`: the prefix is the peer's
            peer = _PEER.search(address["rest"])
            local = f"{local}/{peer[1] if peer else (32 if address['family'] == 'inet' else 128)}"
        found[current][2].append(local)
    return {name: (mtu, up, tuple(addrs)) for name, (mtu, up, addrs) in found.items()}


def parse_route_line(line: str) -> tuple[str, Route, str | None] | None:
    """One ``ip route show`` line -> (device, Route, source address), None without a device."""
    tokens = line.split()
    if tokens and tokens[0] in _ROUTE_TYPES:
        tokens = tokens[1:]
    if not tokens:
        return None
    dst, values = tokens[0], dict[str, str]()
    index = 1
    while index < len(tokens):
        key = tokens[index]
        if key in _ROUTE_KEYS and index + 1 < len(tokens):
            values[key] = tokens[index + 1]
            index += 2
        else:  # flags such as linkdown, onlink, dead
            index += 1
    if "dev" not in values:
        return None
    metric = values.get("metric")
    route = Route(
        dst=dst,
        gateway=values.get("via"),
        metric=int(metric) if metric and metric.isdigit() else None,
        protocol=values.get("proto"),
        scope=values.get("scope"),
    )
    return values["dev"], route, values.get("src")


def is_derived(route: Route, src: str | None, addresses: Iterable[str]) -> bool:
    """True for the prefix route the kernel adds with an address (``proto kernel``).

    BusyBox prints no ``proto``: such a route is then known by being the prefix of one of the
    NIC's addresses, direct, link scope, with that address as its source.
    """
    if route.protocol is not None:
        return route.protocol == "kernel"
    if route.gateway is not None or route.scope != "link" or src is None:
        return False
    for cidr in addresses:
        interface = ipaddress.ip_interface(cidr)
        if str(interface.ip) == src and str(interface.network) == route.dst:
            return True
    return False


def parse_state(
    addr_text: str, route_text: str, speeds: Mapping[str, str] | None = None
) -> dict[str, NicState]:
    """``ip addr show`` + ``ip route show`` text (+ sysfs speeds) -> ``{nic: NicState}``.

    UnknownOutput when ``ip addr show`` holds no interface, or a line that is neither an
    interface's nor indented under one.
    """
    links = parse_addr(addr_text)
    odd = [line for line in addr_text.splitlines() if line[:1].strip() and not _LINK.match(line)]
    if not links or odd:
        expected = "interface lines such as `1: lo: <LOOPBACK,UP> mtu 65536 ...`"
        raise UnknownOutput("ip addr show", expected, odd[0] if odd else addr_text)
    routes: dict[str, list[Route]] = {}
    for line in route_text.splitlines():
        parsed = parse_route_line(line)
        if parsed is None:
            continue
        dev, route, src = parsed
        if is_derived(route, src, links.get(dev, (None, False, ()))[2]):
            continue
        routes.setdefault(dev, []).append(route)
    return assemble(links, routes, speeds)
