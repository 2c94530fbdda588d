"""The network path of a test: which NICs carry it, their speed and MTU, the TCP maximum."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.analysis import theoretical_tcp_bits_per_second

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts, NicFacts
    from nasplan.input.inventory import Host, Interface


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
    """Speed from the inventory's nominal speed when given, else what the NIC negotiated."""
    name = nic.name if nic else None
    declared = _inventory_interface(host, name)
    speed = declared.speed_bits_per_second if declared else None
    if speed is None and nic is not None and nic.speed_mbps:
        speed = nic.speed_mbps * 1_000_000
    framing = declared.framing if declared else host.framing
    return PathEnd(name, speed, nic.mtu_bytes if nic else None, framing)


def describe_path(server: PathEnd, client: PathEnd) -> dict[str, Any]:
    """run.json ``path``: the slower end's speed, the smaller MTU, and the TCP maximum."""
    speeds = [s for s in (server.speed_bits_per_second, client.speed_bits_per_second) if s]
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
