"""A NIC's state (MTU, up, addresses, routes): pure parsers of ``ip -j addr``, ``ip -j route``.

Text fallbacks: ``iptext`` (BusyBox ``ip``, old iproute2), ``ifconfig`` and ``bsd`` (FreeBSD,
macOS); ``tools`` picks one, and every one builds its states through ``assemble``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from nasplan.errors import UnknownOutput
from nasplan.units import positive_int

# Link-scope addresses (IPv6 fe80::) come and go with the link; nasplan never sets them.
TRACKED_SCOPES = ("global", "host", "site")
# Routes the kernel derives from addresses: they return when the addresses do.
_DERIVED_PROTOCOLS = ("kernel",)


@dataclass(frozen=True)
class Route:
    """A route leaving through one interface: destination, gateway, metric, protocol, scope."""

    dst: str
    gateway: str | None = None
    metric: int | None = None
    protocol: str | None = None
    scope: str | None = None

    def argv(self, nic: str, ip: str = "ip") -> list[str]:
        """``ip route replace`` argv that puts this route back on ``nic`` (``ip``: its path)."""
        argv = [ip, "route", "replace", self.dst]
        if self.gateway:
            argv += ["via", self.gateway]
        argv += ["dev", nic]
        if self.metric is not None:
            argv += ["metric", str(self.metric)]
        if self.protocol:
            argv += ["proto", self.protocol]
        if self.scope and not self.gateway:
            argv += ["scope", self.scope]
        return argv

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NicConfig:
    """A NIC's configuration where a host keeps one apart from its live state (the TrueNAS
    middleware's ``interface.query``): static aliases ``A/prefix``, DHCP, IPv6 autoconf, MTU
    (None: the default). Live addresses beyond ``aliases`` came from DHCP, SLAAC or by hand."""

    aliases: tuple[str, ...]
    ipv4_dhcp: bool
    ipv6_auto: bool
    mtu_bytes: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"aliases": ["198.18.4.1/30"], "ipv4_dhcp": false, ...}``."""
        return {
            "aliases": list(self.aliases),
            "ipv4_dhcp": self.ipv4_dhcp,
            "ipv6_auto": self.ipv6_auto,
            "mtu_bytes": self.mtu_bytes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NicConfig:
        """Inverse of ``to_dict``."""
        mtu = data.get("mtu_bytes")
        return cls(
            aliases=tuple(str(a) for a in data.get("aliases") or ()),
            ipv4_dhcp=bool(data.get("ipv4_dhcp")),
            ipv6_auto=bool(data.get("ipv6_auto")),
            mtu_bytes=mtu if isinstance(mtu, int) else None,
        )


@dataclass(frozen=True)
class NicState:
    """What nasplan may change on a NIC and must put back: MTU, up flag, addresses, routes;
    ``configured``: the host's stored configuration of it, where it has one (TrueNAS)."""

    name: str
    mtu_bytes: int | None
    up: bool
    addresses: tuple[str, ...]
    routes: tuple[Route, ...] = ()
    speed_mbps: int | None = None
    configured: NicConfig | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (snapshot file, run.json ``network.hosts.<h>.before``); ``configured``
        only where the host keeps a configuration."""
        data: dict[str, Any] = {
            "name": self.name,
            "mtu_bytes": self.mtu_bytes,
            "up": self.up,
            "addresses": list(self.addresses),
            "routes": [r.to_dict() for r in self.routes],
            "speed_mbps": self.speed_mbps,
        }
        if self.configured is not None:
            data["configured"] = self.configured.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NicState:
        """Inverse of ``to_dict``."""
        configured = data.get("configured")
        return cls(
            name=str(data["name"]),
            mtu_bytes=data.get("mtu_bytes"),
            up=bool(data.get("up")),
            addresses=tuple(data.get("addresses") or ()),
            routes=tuple(Route(**r) for r in data.get("routes") or ()),
            speed_mbps=data.get("speed_mbps"),
            configured=NicConfig.from_dict(configured) if isinstance(configured, dict) else None,
        )


def _json_list(text: str, command: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """``ip -j``'s JSON array; UnknownOutput unless every entry is an object with ``keys``."""
    expected = "a JSON array of objects, each with " + ", ".join(keys)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise UnknownOutput(command, expected, text) from None
    if not isinstance(data, list) or not all(
        isinstance(entry, dict) and all(key in entry for key in keys) for entry in data
    ):
        raise UnknownOutput(command, expected, text)
    return data


def speed_mbps(value: str | None) -> int | None:
    """A sysfs ``speed`` file's text -> Mbit/s, None when the driver knows no speed."""
    number = positive_int(value)
    # Drivers without a link report speed -1 (or 4294967295 as unsigned).
    return number if number is not None and number < 4_000_000 else None


def parse_routes(route_json: str) -> dict[str, tuple[Route, ...]]:
    """``ip -j route show`` -> routes by device, those the kernel derives left out."""
    routes: dict[str, list[Route]] = {}
    for entry in _json_list(route_json, "ip -j route show table main", ("dst",)):
        dev = entry.get("dev")
        if not dev or entry.get("protocol") in _DERIVED_PROTOCOLS:
            continue
        metric = entry.get("metric")
        routes.setdefault(str(dev), []).append(
            Route(
                dst=str(entry.get("dst", "default")),
                gateway=entry.get("gateway"),
                metric=metric if isinstance(metric, int) else None,
                protocol=entry.get("protocol"),
                scope=entry.get("scope"),
            )
        )
    return {dev: tuple(found) for dev, found in routes.items()}


# What a text parser reads of one NIC: (mtu_bytes, administratively up, addresses "A/prefix").
Link = tuple[int | None, bool, tuple[str, ...]]


def assemble(
    links: Mapping[str, Link],
    routes: Mapping[str, Iterable[Route]],
    speeds: Mapping[str, str] | None = None,
) -> dict[str, NicState]:
    """Parsed links + routes by device + speed texts (sysfs ``speed``) -> ``{nic: NicState}``.

    The one place every reader (``ip -j``, ``ip`` text, ``ifconfig``, BSD ``ifconfig``) builds
    its states, so that they compare equal whenever the NICs are the same.
    """
    return {
        name: NicState(
            name=name,
            mtu_bytes=mtu,
            up=up,
            addresses=addresses,
            routes=tuple(routes.get(name, ())),
            speed_mbps=speed_mbps((speeds or {}).get(name)),
        )
        for name, (mtu, up, addresses) in links.items()
    }


def parse_state(
    addr_json: str, route_json: str, speeds: Mapping[str, str] | None = None
) -> dict[str, NicState]:
    """``ip -j addr show`` + ``ip -j route show`` (+ sysfs speeds) -> ``{nic: NicState}``."""
    links: dict[str, Link] = {}
    entries = _json_list(addr_json, "ip -j addr show", ("ifname", "flags", "mtu"))
    if not entries:  # every Linux has its loopback
        raise UnknownOutput("ip -j addr show", "at least the loopback interface", addr_json)
    for entry in entries:
        name = entry.get("ifname")
        if not name:
            continue
        addresses = tuple(
            f"{info['local']}/{info['prefixlen']}"
            for info in entry.get("addr_info") or []
            if "local" in info and info.get("scope", "global") in TRACKED_SCOPES
        )
        mtu = entry.get("mtu")
        links[str(name)] = (
            mtu if isinstance(mtu, int) else None,
            "UP" in (entry.get("flags") or []),
            addresses,
        )
    return assemble(links, parse_routes(route_json), speeds)


def differences(before: NicState, after: NicState | None) -> list[str]:
    """How ``after`` differs from ``before`` in what nasplan restores (empty: the same)."""
    if after is None:
        return [f"{before.name} is gone"]
    found = []
    if before.mtu_bytes != after.mtu_bytes:
        found.append(f"{before.name} MTU {after.mtu_bytes}, was {before.mtu_bytes}")
    if before.up != after.up:
        found.append(f"{before.name} is {'up' if after.up else 'down'}, was not")
    added = sorted(set(after.addresses) - set(before.addresses))
    missing = sorted(set(before.addresses) - set(after.addresses))
    if added:
        found.append(f"{before.name} has {', '.join(added)} more")
    if missing:
        found.append(f"{before.name} lost {', '.join(missing)}")
    if set(before.routes) != set(after.routes):
        found.append(f"{before.name} routes differ")
    return found


def all_differences(
    before: Mapping[str, NicState], after: Mapping[str, NicState], nics: Iterable[str]
) -> list[str]:
    """``differences`` over several NICs."""
    return [d for nic in nics if nic in before for d in differences(before[nic], after.get(nic))]
