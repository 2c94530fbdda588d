"""Checks after a change: DF ping at MTU − 28 bytes, ``ip route get``, link speed, MTU of both ends.

BSD (FreeBSD, macOS): ``route -n get`` and ``ping -D``, run as root: FreeBSD's ping sends more
than 56 data bytes only for root (``packet size too large``). No ``-i``: the default 1 s interval
is allowed everywhere (FreeBSD lets only root go under 1 s, macOS under 0.1 s).

A script per host prints every probe in sections; pure functions turn them into check records
``{"check", "host", "interface", "peer", "ok", "detail"}`` and warnings.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.facts.gather import HostFacts
from nasplan.input.network import LinkEndSpec, LinkSpec, MtuSpec, NetworkSpec
from nasplan.network import bsd, ifconfig
from nasplan.network.state import NicState
from nasplan.network.tools import BSD_IFCONFIG, IFCONFIG, NetTools, state_script
from nasplan.sections import split_sections

IPV4_ICMP_HEADERS_BYTES = 28  # 20 IPv4 + 8 ICMP: ping -s MTU-28 fills the MTU exactly
_RECEIVED = re.compile(r"(\d+) (?:packets )?received")
_LOCAL_MTU = re.compile(r"mtu[= ](\d+)", re.IGNORECASE)
_ROUTE_DEV = re.compile(r"\bdev (\S+)")
_ROUTE_VIA = re.compile(r"\bvia (\S+)")


@dataclass(frozen=True)
class Probe:
    """What one host checks towards a link peer: the NIC it must leave by, the DF ping size."""

    link: str
    nic: str
    peer_host: str
    peer_nic: str
    peer_ip: str
    mtu_bytes: int

    @property
    def label(self) -> str:
        return f"{self.link}:{self.peer_ip}"

    @property
    def payload_bytes(self) -> int:
        return self.mtu_bytes - IPV4_ICMP_HEADERS_BYTES


def probes(links: Sequence[LinkSpec], host: str, mtus: dict[str, int | None]) -> list[Probe]:
    """The probes ``host`` runs: one per link end it holds; ``mtus`` are its NICs' MTUs now."""
    found = []
    for link in links:
        end, peer = link.end(host), link.peer(host)
        if end is None or peer is None:
            continue
        mtu = link.mtu_bytes or mtus.get(end.nic) or 1500
        found.append(Probe(link.name, end.nic, peer.host, peer.nic, peer.ip, mtu))
    return found


def mtu_probes(
    interfaces: Sequence[MtuSpec],
    host: str,
    own: Mapping[str, NicState],
    neighbours: Mapping[str, Mapping[str, Sequence[str]]],
) -> list[Probe]:
    """The probes ``host`` runs for the MTUs ``interfaces:`` set on it: a DF ping of the new
    MTU to each other host of the run with an address on the same IPv4 network, as for a link.

    ``own``: this host's NICs after the change; ``neighbours``: host -> NIC -> its addresses.
    """
    found = []
    for spec in interfaces:
        if spec.host != host or spec.nic not in own:
            continue
        networks = [_network(a) for a in own[spec.nic].addresses]
        for peer_host, nics in sorted(neighbours.items()):
            if peer_host == host:
                continue
            for peer_nic, addresses in sorted(nics.items()):
                for address in addresses:
                    if _network(address) is not None and _network(address) in networks:
                        ip = address.split("/", 1)[0]
                        found.append(
                            Probe(
                                f"mtu-{spec.nic}", spec.nic, peer_host, peer_nic, ip, spec.mtu_bytes
                            )
                        )
    return found


def _network(cidr: str) -> ipaddress.IPv4Network | None:
    try:
        interface = ipaddress.ip_interface(cidr)
    except ValueError:
        return None
    return interface.network if isinstance(interface, ipaddress.IPv4Interface) else None


def verify_script(
    host_probes: Sequence[Probe], nics: Sequence[str], tools: NetTools | None = None
) -> str:
    """Per probe: ``ip -o route get`` and a DF ping; then the NICs' state (MTU, speed)."""
    lines = []
    for probe in host_probes:
        peer = shlex.quote(probe.peer_ip)
        route_header = shlex.quote("\n@@nasplan:route:" + probe.label + "@@\n")
        ping_header = shlex.quote("\n@@nasplan:ping:" + probe.label + "@@\n")
        lines.append(f"printf %s {route_header}")
        if tools is not None and tools.kind == BSD_IFCONFIG:
            lines.append(f"{shlex.join([tools.route, '-n', 'get', probe.peer_ip])} 2>&1")
            lines.append(f"printf %s {ping_header}")
            lines.append(f'{shlex.join(bsd_ping_argv(probe))} 2>&1; echo "exit=$?"')
            continue
        if tools is not None and tools.kind == IFCONFIG:
            # No `ip route get` without ip: the kernel's table, matched here (longest prefix).
            lines.append("cat /proc/net/route")
        else:
            lines.append(f"{shlex.quote(tools.ip if tools else 'ip')} -o route get {peer} 2>&1")
        lines.append(f"printf %s {ping_header}")
        ping = ["ping", "-M", "do", "-s", str(probe.payload_bytes), "-c", "2", "-i", "0.2"]
        lines.append(f'{shlex.join([*ping, "-W", "2", probe.peer_ip])} 2>&1; echo "exit=$?"')
    return "\n".join(lines) + "\n" + state_script(nics, tools)


def bsd_ping_argv(probe: Probe) -> list[str]:
    """FreeBSD / macOS DF ping: ``-D`` sets don't-fragment, ``-t`` ends it after seconds."""
    return ["ping", "-D", "-s", str(probe.payload_bytes), "-c", "2", "-t", "3", probe.peer_ip]


def route_leaves_by(text: str, peer_ip: str = "") -> tuple[str | None, str | None]:
    """``ip -o route get`` output (or ``/proc/net/route`` and the peer, or BSD ``route -n get``)
    -> (device, gateway)."""
    if "route to:" in text:
        return bsd.route_get(text)
    if text.startswith("Iface"):
        return ifconfig.route_to(text, peer_ip)
    dev, via = _ROUTE_DEV.search(text), _ROUTE_VIA.search(text)
    return (dev[1] if dev else None), (via[1] if via else None)


def ping_passed(text: str) -> tuple[bool, str]:
    """iputils, BusyBox or BSD ping output -> (at least one reply, a short reason when none)."""
    received = _RECEIVED.search(text)
    if received and int(received[1]) > 0:
        return True, f"{received[1]} replies"
    if "local error" in text or "too long" in text:
        # iputils names the MTU (`mtu=1500`); BSD ping only says `sendto: Message too long`.
        local = _LOCAL_MTU.search(text)
        if local is None:
            return False, "refused locally: message too long (larger than this NIC's MTU)"
        return False, f"refused locally: message too long (local MTU {local[1]})"
    if "invalid" in text.lower() or "usage" in text.lower():
        return False, "this ping cannot set don't-fragment (-M do); install iputils ping"
    return False, "no reply"


def _check(kind: str, host: str, probe: Probe, ok: bool, detail: str) -> dict[str, Any]:
    return {
        "check": kind,
        "host": host,
        "interface": probe.nic,
        "peer": f"{probe.peer_host} {probe.peer_ip}",
        "ok": ok,
        "detail": detail,
    }


def evaluate(
    host: str,
    host_probes: Sequence[Probe],
    output: str,
    states: Mapping[str, Mapping[str, NicState]],
) -> list[dict[str, Any]]:
    """Check records of one host's verify output; ``states`` are every host's NICs after apply."""
    sections = split_sections(output)
    checks = []
    for probe in host_probes:
        dev, via = route_leaves_by(sections.get(f"route:{probe.label}", ""), probe.peer_ip)
        ok = dev == probe.nic and via is None
        detail = f"{probe.peer_ip} leaves by {dev or '?'}" + (f" via {via}" if via else "")
        if not ok:
            detail += f", expected directly by {probe.nic}"
        checks.append(_check("route", host, probe, ok, detail))
        passed, why = ping_passed(sections.get(f"ping:{probe.label}", ""))
        peer_state = states.get(probe.peer_host, {}).get(probe.peer_nic)
        peer_mtu = peer_state.mtu_bytes if peer_state else None
        detail = (
            f"DF ping of {probe.payload_bytes} bytes (MTU {probe.mtu_bytes}) from {host} "
            f"{probe.nic} to {probe.peer_host} {probe.peer_nic} {probe.peer_ip} "
            f"(MTU {peer_mtu or '?'}): "
        )
        if passed:
            detail += why
        else:
            detail += f"failed, {why}"
            if peer_mtu and peer_mtu < probe.mtu_bytes:
                detail += f"; {probe.peer_host} {probe.peer_nic} has the smaller MTU {peer_mtu}"
            else:
                detail += "; a switch or NIC on the path drops frames this large"
        checks.append(_check("df-ping", host, probe, passed, detail))
    return checks


def link_warnings(
    link: LinkSpec,
    states: dict[str, dict[str, NicState]],
    nominal_bits_per_second: dict[tuple[str, str], int | None],
) -> list[str]:
    """Warnings of a link after apply: ends disagree on MTU, a negotiated speed below nominal."""
    warnings = []
    ends: list[tuple[LinkEndSpec, NicState | None]] = [
        (end, states.get(end.host, {}).get(end.nic)) for end in (link.a, link.b)
    ]
    mtus = {e.host: s.mtu_bytes for e, s in ends if s is not None}
    if len(set(mtus.values())) > 1:
        shown = ", ".join(f"{h} {m}" for h, m in mtus.items())
        warnings.append(f"link {link.name}: the two ends disagree on MTU ({shown})")
    speeds = []
    for end, state in ends:
        negotiated = state.speed_mbps * 1_000_000 if state and state.speed_mbps else None
        speeds.append(negotiated)
        nominal = nominal_bits_per_second.get((end.host, end.nic))
        if negotiated and nominal and negotiated < nominal:
            warnings.append(
                f"link {link.name}: {end.host} {end.nic} negotiated {negotiated // 1_000_000} "
                f"Mbit/s, below its nominal {nominal // 1_000_000} Mbit/s (cable, switch port "
                "or NIC?)"
            )
    if None not in speeds and speeds[0] != speeds[1]:
        warnings.append(
            f"link {link.name}: the ends negotiated different speeds "
            f"({link.a.host} {speeds[0]}, {link.b.host} {speeds[1]} bit/s)"
        )
    return warnings


def fact_errors(spec: NetworkSpec, facts: Mapping[str, HostFacts]) -> list[str]:
    """Problems of the declared changes against the hosts as they are (empty: go ahead)."""
    errors: list[str] = []
    for host in spec.hosts:
        host_facts = facts.get(host)
        if host_facts is None:
            continue
        for change in spec.changes(host):
            if host_facts.interface(change.nic) is None:
                known = ", ".join(n.name for n in host_facts.interfaces)
                errors.append(f"{host}: no interface {change.nic!r} (has: {known})")
    for link in spec.links:
        subnet = ipaddress.IPv4Network(link.prefix)
        for host, host_facts in sorted(facts.items()):
            for nic in host_facts.interfaces:
                for cidr in nic.addresses:
                    existing = ipaddress.ip_interface(cidr)
                    if existing.version == 4 and existing.network.overlaps(subnet):
                        errors.append(
                            f"link {link.name}: {link.prefix} overlaps {cidr} already on "
                            f"{host} {nic.name}"
                        )
    return errors
