"""The network path of a test: which NICs carry it, their speed and MTU, the TCP maximum."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.analysis import theoretical_tcp_bits_per_second

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts, NicFacts
    from nasplan.input.inventory import Host, Interface, Inventory


@dataclass(frozen=True)
class PathEnd:
    """One end of a path: the NIC's OS name, nominal or negotiated speed, MTU."""

    nic: str | None
    speed_bits_per_second: int | None
    mtu_bytes: int | None
    framing: str


def _inventory_interface(host: Host, nic: str | None) -> Interface | None:
    return next((i for i in host.interfaces.values() if i.name == nic), None)


def nic_holding(facts: HostFacts, address: str) -> NicFacts | None:
    """The NIC that has ``address`` assigned."""
    for nic in facts.interfaces:
        for cidr in nic.addresses:
            if str(ipaddress.ip_interface(cidr).ip) == address:
                return nic
    return None


def first_ipv4(cidrs: Sequence[str]) -> str | None:
    """The first IPv4 address of ``cidrs`` (``198.18.0.10/24`` -> ``198.18.0.10``), or None."""
    for cidr in cidrs:
        address = cidr.split("/")[0]
        if ":" not in address:
            return address
    return None


def nic_towards(facts: HostFacts, address: str) -> NicFacts | None:
    """The NIC whose connected subnet holds ``address`` (how the kernel would send to it)."""
    target = ipaddress.ip_address(address)
    best: tuple[int, NicFacts] | None = None
    for nic in facts.interfaces:
        for cidr in nic.addresses:
            network = ipaddress.ip_interface(cidr).network
            same_family = target.version == network.version
            if same_family and target in network and (best is None or network.prefixlen > best[0]):
                best = (network.prefixlen, nic)
    return best[1] if best else None


def path_end(host: Host, nic: NicFacts | None) -> PathEnd:
    """Speed: the inventory's nominal speed, or what the NIC negotiated when that is lower (or
    the only one known)."""
    name = nic.name if nic else None
    declared = _inventory_interface(host, name)
    speed = declared.speed_bits_per_second if declared else None
    if nic is not None and nic.speed_mbps and nic.speed_mbps > 0:
        negotiated = nic.speed_mbps * 1_000_000
        speed = negotiated if speed is None else min(speed, negotiated)
    framing = declared.framing if declared else host.framing
    return PathEnd(name, speed, nic.mtu_bytes if nic else None, framing)


def links_on_the_way(
    inventory: Inventory, gateway: str | None, address: str
) -> list[dict[str, Any]]:
    """The inventory's interfaces of the router at ``gateway`` (the one holding that address)
    towards the client and towards ``address``: ``[{"host", "interface", "speed_bits_per_second",
    "address"}]``, [] when no inventory host holds the gateway."""
    if gateway is None:
        return []
    for name, host in sorted(inventory.hosts.items()):
        toward_client = next((i for i in host.interfaces.values() if i.address == gateway), None)
        if toward_client is None:
            continue
        found = [toward_client]
        target = ipaddress.ip_address(address)
        for interface in host.interfaces.values():
            if interface is toward_client or interface.address is None:
                continue
            prefix = interface.prefix_len if interface.prefix_len is not None else 32
            network = ipaddress.ip_interface(f"{interface.address}/{prefix}").network
            if target.version == network.version and target in network:
                found.append(interface)
        return [
            {
                "host": name,
                "interface": i.name,
                "address": i.address,
                "speed_bits_per_second": i.speed_bits_per_second,
            }
            for i in found
        ]
    return []


def describe_path(
    server: PathEnd, client: PathEnd, links: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """run.json ``path``: the slowest speed (both ends, and ``links`` on the way: a router's
    interfaces the inventory knows), the smaller MTU, and the TCP maximum."""
    speeds = [s for s in (server.speed_bits_per_second, client.speed_bits_per_second) if s]
    speeds += [link["speed_bits_per_second"] for link in links if link["speed_bits_per_second"]]
    mtus = [m for m in (server.mtu_bytes, client.mtu_bytes) if m]
    speed = min(speeds) if speeds else None
    mtu = min(mtus) if mtus else None
    framing = "tc" if "tc" in (server.framing, client.framing) else "ethernet"
    theoretical = theoretical_tcp_bits_per_second(speed, mtu, framing) if speed and mtu else None
    return {
        "server_interface": server.nic,
        "client_interface": client.nic,
        "speed_bits_per_second": speed,
        "mtu_bytes": mtu,
        "framing": framing,
        "theoretical_bits_per_second": theoretical,
    }
