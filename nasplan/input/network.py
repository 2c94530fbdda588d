"""A plan's declared network changes: point-to-point ``links``, per-interface ``interfaces`` MTUs.

Plan syntax (top level, beside ``tests``)::

    network: {confirm_timeout_s: 60}      # the host undoes the change unless nasplan confirms
    links:
      - name: p2p
        a: {host: nas, interface: p2p}      # an inventory interface key, or the OS's name (eth1)
        b: {host: ws, interface: p2p}
        prefix: 198.18.4.0/30               # a /30 or /31; a larger prefix gives its first free /30
        mtu: 9000
    interfaces:
      - {host: nas, interface: lan, mtu: 9000}

A test reaches a link end with ``target: link:p2p@nas`` (link ``p2p``, the end on host ``nas``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath

if TYPE_CHECKING:
    from nasplan.input.inventory import Inventory

DEFAULT_CONFIRM_TIMEOUT_S = 60
DEFAULT_PREFIX_LENGTH = 30
LINK_TARGET = re.compile(r"^link:(?P<link>[a-z0-9][a-z0-9_-]*)@(?P<host>[^@\s]+)$")


@dataclass(frozen=True)
class LinkEndSpec:
    """One end of a declared link: host, OS interface (``nic``), its inventory key, its address."""

    host: str
    nic: str
    interface_key: str | None
    address: str  # with prefix: 198.18.4.1/30

    @property
    def ip(self) -> str:
        return self.address.split("/", 1)[0]


@dataclass(frozen=True)
class LinkSpec:
    """A point-to-point link between two hosts: its subnet, both ends, the MTU to set (or None)."""

    name: str
    prefix: str
    a: LinkEndSpec
    b: LinkEndSpec
    mtu_bytes: int | None

    def end(self, host: str) -> LinkEndSpec | None:
        """The end on ``host``, or None."""
        return next((e for e in (self.a, self.b) if e.host == host), None)

    def peer(self, host: str) -> LinkEndSpec | None:
        """The end that is not on ``host``, or None when ``host`` is not an end."""
        if self.a.host == host:
            return self.b
        return self.a if self.b.host == host else None


@dataclass(frozen=True)
class MtuSpec:
    """An MTU to set on one interface of one host."""

    host: str
    nic: str
    interface_key: str | None
    mtu_bytes: int


@dataclass(frozen=True)
class NicChange:
    """Everything nasplan changes on one NIC: the MTU (None: keep) and addresses to add."""

    nic: str
    mtu_bytes: int | None
    add_addresses: tuple[str, ...]


@dataclass(frozen=True)
class NetworkSpec:
    """All declared changes of a plan; empty (``active`` false) when it declares none."""

    links: tuple[LinkSpec, ...] = ()
    interfaces: tuple[MtuSpec, ...] = ()
    confirm_timeout_s: int = DEFAULT_CONFIRM_TIMEOUT_S

    @property
    def active(self) -> bool:
        return bool(self.links or self.interfaces)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts with a change, sorted."""
        names = {e.host for link in self.links for e in (link.a, link.b)}
        return tuple(sorted(names | {m.host for m in self.interfaces}))

    def link(self, name: str) -> LinkSpec | None:
        return next((link for link in self.links if link.name == name), None)

    def changes(self, host: str) -> tuple[NicChange, ...]:
        """The changes on ``host``, one per NIC, sorted by NIC name."""
        mtus: dict[str, int | None] = {}
        addresses: dict[str, list[str]] = {}
        for link in self.links:
            end = link.end(host)
            if end is not None:
                mtus[end.nic] = link.mtu_bytes or mtus.get(end.nic)
                addresses.setdefault(end.nic, []).append(end.address)
        for spec in self.interfaces:
            if spec.host == host:
                mtus[spec.nic] = spec.mtu_bytes
        return tuple(
            NicChange(nic, mtus.get(nic), tuple(addresses.get(nic, ())))
            for nic in sorted(set(mtus) | set(addresses))
        )

    def to_dict(self) -> dict[str, Any]:
        """run.json ``network.declared``."""
        return {
            "confirm_timeout_s": self.confirm_timeout_s,
            "links": [
                {
                    "name": link.name,
                    "prefix": link.prefix,
                    "mtu_bytes": link.mtu_bytes,
                    "a": {"host": link.a.host, "interface": link.a.nic, "address": link.a.address},
                    "b": {"host": link.b.host, "interface": link.b.nic, "address": link.b.address},
                }
                for link in self.links
            ],
            "interfaces": [
                {"host": m.host, "interface": m.nic, "mtu_bytes": m.mtu_bytes}
                for m in self.interfaces
            ],
        }


@dataclass
class _Builder:
    document: Document
    inventory: Inventory
    errors: list[str] = field(default_factory=list)

    def error(self, where: JsonPath, message: str) -> None:
        self.errors.append(self.document.error(where, message))

    def nic(self, where: JsonPath, raw: Mapping[str, Any]) -> tuple[str, str | None] | None:
        """(OS interface name, inventory key or None) of ``{host, interface}``."""
        host, name = raw["host"], raw["interface"]
        if host in self.inventory.unusable:  # left out of an Ansible inventory: say why
            self.errors += self.inventory.refusals_of([host])
            return None
        if host not in self.inventory.hosts:
            known = ", ".join(sorted(self.inventory.hosts))
            self.error((*where, "host"), f"unknown host {host!r} (inventory has: {known})")
            return None
        interfaces = self.inventory.hosts[host].interfaces
        if name in interfaces:
            return interfaces[name].name, name
        # Not an inventory key: an OS name, checked against the host's facts before any change.
        key = next((k for k, i in interfaces.items() if i.name == name), None)
        return name, key


def _end_addresses(
    b: _Builder, where: JsonPath, raw: Mapping[str, Any], taken: list[ipaddress.IPv4Network]
) -> tuple[str, str, str] | None:
    """(subnet, address of a, address of b) of a link, from ``prefix`` or ``addresses``."""
    if "addresses" in raw:
        try:
            ends = [ipaddress.IPv4Interface(raw["addresses"][s]) for s in ("a", "b")]
        except ValueError as exc:
            b.error((*where, "addresses"), f"not an IPv4 address/prefix: {exc}")
            return None
        if ends[0].network != ends[1].network or ends[0].ip == ends[1].ip:
            b.error((*where, "addresses"), "a and b need two addresses in one subnet")
            return None
        network = ends[0].network
        for side, end in zip(("a", "b"), ends, strict=True):
            if network.prefixlen < 31 and end.ip in (network.network_address, network[-1]):
                b.error((*where, "addresses", side), f"{end.ip} is not a host address of {network}")
                return None
        return str(network), str(ends[0]), str(ends[1])
    try:
        prefix = ipaddress.IPv4Network(raw["prefix"], strict=True)
    except ValueError as exc:
        b.error((*where, "prefix"), f"not an IPv4 prefix: {exc}")
        return None
    length = raw.get("prefix_length") or (
        prefix.prefixlen if prefix.prefixlen in (30, 31) else DEFAULT_PREFIX_LENGTH
    )
    if prefix.prefixlen > length:
        b.error((*where, "prefix"), f"{prefix} is smaller than a /{length}")
        return None
    subnet = next((s for s in prefix.subnets(new_prefix=length) if not _overlaps(s, taken)), None)
    if subnet is None:
        b.error((*where, "prefix"), f"no free /{length} left in {prefix}")
        return None
    first = subnet.network_address if length == 31 else subnet.network_address + 1
    return str(subnet), f"{first}/{length}", f"{first + 1}/{length}"


def _overlaps(net: ipaddress.IPv4Network, others: Iterable[ipaddress.IPv4Network]) -> bool:
    return any(net.overlaps(other) for other in others)


def _on(link: LinkSpec, host: str, nic: str) -> bool:
    end = link.end(host)
    return end is not None and end.nic == nic


def parse_network(
    document: Document, resolved: Mapping[str, Any], inventory: Inventory
) -> NetworkSpec:
    """The plan's ``links``, ``interfaces`` and ``network``; InputError lists every problem."""
    b = _Builder(document, inventory)
    taken: list[ipaddress.IPv4Network] = []
    links: list[LinkSpec] = []
    used: dict[tuple[str, str], str] = {}
    for index, raw in enumerate(resolved.get("links") or []):
        where: JsonPath = ("links", index)
        if any(link.name == raw["name"] for link in links):
            b.error((*where, "name"), f"duplicate link name {raw['name']!r}")
            continue
        found = [b.nic((*where, side), raw[side]) for side in ("a", "b")]
        if raw["a"]["host"] == raw["b"]["host"]:
            b.error((*where, "b", "host"), "a link joins two different hosts")
            continue
        addressing = _end_addresses(b, where, raw, taken)
        nics = [nic for nic in found if nic is not None]
        if len(nics) != 2 or addressing is None:
            continue
        subnet, address_a, address_b = addressing
        taken.append(ipaddress.IPv4Network(subnet))
        ends = []
        for side, (nic, key), address in zip(("a", "b"), nics, (address_a, address_b), strict=True):
            host = raw[side]["host"]
            if (host, nic) in used:
                b.error(
                    (*where, side, "interface"),
                    f"{host} {nic} is already in link {used[(host, nic)]!r}",
                )
            used[(host, nic)] = raw["name"]
            ends.append(LinkEndSpec(host, nic, key, address))
        links.append(LinkSpec(raw["name"], subnet, ends[0], ends[1], raw.get("mtu")))
    mtus: list[MtuSpec] = []
    for index, raw in enumerate(resolved.get("interfaces") or []):
        where = ("interfaces", index)
        resolved_nic = b.nic(where, raw)
        if resolved_nic is None:
            continue
        nic, key = resolved_nic
        if any(m.host == raw["host"] and m.nic == nic for m in mtus):
            b.error((*where, "interface"), f"{raw['host']} {nic} is declared twice")
            continue
        link = next((lk for lk in links if _on(lk, raw["host"], nic)), None)
        if link is not None and link.mtu_bytes not in (None, raw["mtu"]):
            b.error((*where, "mtu"), f"link {link.name!r} sets MTU {link.mtu_bytes} on {nic}")
        mtus.append(MtuSpec(raw["host"], nic, key, int(raw["mtu"])))
    if b.errors:
        raise InputError(b.errors)
    network = resolved.get("network") or {}
    return NetworkSpec(
        links=tuple(links),
        interfaces=tuple(mtus),
        confirm_timeout_s=int(network.get("confirm_timeout_s", DEFAULT_CONFIRM_TIMEOUT_S)),
    )


def parse_link_target(spec: NetworkSpec, text: str) -> tuple[LinkSpec, LinkEndSpec] | str | None:
    """``link:p2p@nas`` -> (link, the end on nas); an error message; None when not that syntax."""
    match = LINK_TARGET.match(text)
    if match is None:
        return None if not text.startswith("link:") else f"expected link:LINK@HOST, got {text!r}"
    link = spec.link(match["link"])
    if link is None:
        known = ", ".join(lk.name for lk in spec.links) or "none"
        return f"no link {match['link']!r} in the plan's links (has: {known})"
    end = link.end(match["host"])
    if end is None:
        ends = f"{link.a.host}, {link.b.host}"
        return f"host {match['host']!r} is not an end of link {link.name!r} ({ends})"
    return link, end
