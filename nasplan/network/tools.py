"""Which commands read and change a host's NICs: ``ip -j``, ``ip`` text, or ``ifconfig``.

Chosen from the facts round trip (``HostFacts.ip_json``, tool paths), so no extra probe:
``ip-json`` (iproute2 4.17+), ``ip-text`` (BusyBox's ``ip`` or an older iproute2: the same
``ip link``/``ip addr``/``ip route`` commands, state read as text), ``ifconfig`` (Linux without
``ip``), ``bsd-ifconfig`` (FreeBSD, TrueNAS CORE, macOS: ``ifconfig``, ``netstat``, ``route``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from nasplan.errors import UnknownOutput
from nasplan.facts.bsd import BSD_KERNELS
from nasplan.input.network import NicChange
from nasplan.network import bsd, ifconfig, iptext
from nasplan.network.state import NicState, parse_state
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

IP_JSON, IP_TEXT, IFCONFIG, BSD_IFCONFIG = "ip-json", "ip-text", "ifconfig", "bsd-ifconfig"
KINDS = (IP_JSON, IP_TEXT, IFCONFIG, BSD_IFCONFIG)


@dataclass(frozen=True)
class NetTools:
    """How one host's NICs are read and changed: ``kind`` and the paths of the commands."""

    kind: str = IP_JSON
    ip: str = "ip"
    ifconfig: str = "ifconfig"
    route: str = "route"
    netstat: str = "netstat"

    @property
    def ping_needs_root(self) -> bool:
        """True where ping refuses a jumbo payload to a plain user (BSD: more than 56 bytes)."""
        return self.kind == BSD_IFCONFIG

    def to_dict(self) -> dict[str, str]:
        """JSON form (snapshot file): ``{"kind": "ip-text", "ip": "/sbin/ip", ...}``; ``netstat``
        only for ``bsd-ifconfig``, the one kind that reads with it."""
        data = asdict(self)
        if self.kind != BSD_IFCONFIG:
            del data["netstat"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> NetTools:
        """Inverse of ``to_dict``; ``ip-json`` with bare names for snapshots older than this."""
        data = data or {}
        kind = str(data.get("kind", IP_JSON))
        return cls(
            kind=kind if kind in KINDS else IP_JSON,
            ip=str(data.get("ip") or "ip"),
            ifconfig=str(data.get("ifconfig") or "ifconfig"),
            route=str(data.get("route") or "route"),
            netstat=str(data.get("netstat") or "netstat"),
        )


def from_facts(facts: HostFacts | None) -> NetTools | None:
    """The tools a host has, best first; None when it has neither ``ip`` nor ``ifconfig``.

    Facts without the ``ip -j`` probe (None) keep ``ip-json``, as nasplan did before the probe.
    """
    if facts is None:
        return NetTools()
    ip, ifconfig_path = facts.tool("ip"), facts.tool("ifconfig")
    route = facts.tool("route") or "route"
    if facts.kernel_name in BSD_KERNELS:
        if not ifconfig_path:
            return None
        netstat = facts.tool("netstat") or "netstat"
        return NetTools(BSD_IFCONFIG, "ip", ifconfig_path, route, netstat)
    if ip:
        kind = IP_TEXT if facts.ip_json is False else IP_JSON
        return NetTools(kind, ip, ifconfig_path or "ifconfig", route)
    if ifconfig_path:
        return NetTools(IFCONFIG, "ip", ifconfig_path, route)
    return None


def _section(name: str) -> str:
    return f"printf %s {shlex.quote(f'{chr(10)}@@nasplan:{name}@@{chr(10)}')}"


def state_script(nics: Iterable[str], tools: NetTools | None = None) -> str:
    """Print the NICs' state in sections (``parse_state_output`` reads any of the three kinds)."""
    tools = tools or NetTools()
    ip = shlex.quote(tools.ip)
    if tools.kind == BSD_IFCONFIG:
        # No sysfs: the media line of ifconfig gives the speed.
        return (
            f"{_section('bsd-ifconfig')}; {shlex.quote(tools.ifconfig)} -a\n"
            f"{_section('bsd-netstat')}; {shlex.quote(tools.netstat)} -rn -f inet\n"
        )
    if tools.kind == IP_TEXT:
        lines = [
            f"{_section('addr-text')}; {ip} addr show",
            f"{_section('route-text')}; {ip} route show table main",
        ]
    elif tools.kind == IFCONFIG:
        lines = [
            f"{_section('ifconfig')}; {shlex.quote(tools.ifconfig)} -a",
            f"{_section('proc-net-route')}; cat /proc/net/route",
        ]
    else:
        lines = [
            f"{_section('addr')}; {ip} -j addr show",
            f"{_section('route')}; {ip} -j route show table main",
        ]
    for nic in nics:
        speed = shlex.quote(f"/sys/class/net/{nic}/speed")
        lines.append(f"{_section(f'speed:{nic}')}; cat {speed} 2>/dev/null; echo")
    return "\n".join(lines) + "\n"


# The first section of each kind -> the sections of that kind that are never empty, and the
# commands that print them.
_NEVER_EMPTY = {
    "bsd-ifconfig": {"bsd-ifconfig": "ifconfig -a", "bsd-netstat": "netstat -rn -f inet"},
    "addr-text": {"addr-text": "ip addr show"},
    "ifconfig": {"ifconfig": "ifconfig -a", "proc-net-route": "cat /proc/net/route"},
    "addr": {"addr": "ip -j addr show", "route": "ip -j route show table main"},
}


def parse_state_output(text: str) -> dict[str, NicState]:
    """The output of ``state_script`` (any kind) -> ``{nic: NicState}``.

    UnknownOutput when a command whose output is never empty printed nothing (or the output
    holds none of the kinds' sections).
    """
    sections = split_sections(text)
    kind = next((k for k in _NEVER_EMPTY if k in sections), "addr")
    for section, command in _NEVER_EMPTY[kind].items():
        if not sections.get(section, "").strip():
            raise UnknownOutput(command, "what it prints on every host", "")
    speeds = {k.split(":", 1)[1]: v for k, v in sections.items() if k.startswith("speed:")}
    if "bsd-ifconfig" in sections:
        return bsd.parse_state(sections["bsd-ifconfig"], sections.get("bsd-netstat", ""))
    if "addr-text" in sections:
        return iptext.parse_state(sections["addr-text"], sections.get("route-text", ""), speeds)
    if "ifconfig" in sections:
        routes = sections.get("proc-net-route", "")
        return ifconfig.parse_state(sections["ifconfig"], routes, speeds)
    return parse_state(sections.get("addr", ""), sections.get("route", ""), speeds)


def apply_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState], tools: NetTools | None = None
) -> list[list[str]]:
    """The commands that make ``changes`` (MTU first: an address on a down link stays unused)."""
    tools = tools or NetTools()
    if tools.kind == BSD_IFCONFIG:
        return bsd.apply_argvs(changes, before, tools.ifconfig)
    if tools.kind == IFCONFIG:
        return ifconfig.apply_argvs(changes, before, tools.ifconfig)
    argvs: list[list[str]] = []
    for change in changes:
        if change.mtu_bytes is not None:
            argvs.append([tools.ip, "link", "set", "dev", change.nic, "mtu", str(change.mtu_bytes)])
        state = before.get(change.nic)
        if change.add_addresses and not (state and state.up):
            argvs.append([tools.ip, "link", "set", "dev", change.nic, "up"])
        for address in change.add_addresses:
            # BusyBox's ip has `addr replace` too (not in its usage text; checked on 1.35).
            argvs.append([tools.ip, "addr", "replace", address, "dev", change.nic])
    return argvs


def restore_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState], tools: NetTools | None = None
) -> list[list[str]]:
    """The commands that put every changed NIC back to ``before`` (each one may fail alone)."""
    tools = tools or NetTools()
    if tools.kind == BSD_IFCONFIG:
        return bsd.restore_argvs(changes, before, tools.ifconfig)
    if tools.kind == IFCONFIG:
        return ifconfig.restore_argvs(changes, before, tools.ifconfig, tools.route)
    ip = tools.ip
    argvs: list[list[str]] = []
    for change in changes:
        state = before[change.nic]
        for address in change.add_addresses:
            if address not in state.addresses:
                argvs.append([ip, "addr", "del", address, "dev", change.nic])
        if state.mtu_bytes is not None:
            argvs.append([ip, "link", "set", "dev", change.nic, "mtu", str(state.mtu_bytes)])
        for address in state.addresses:
            argvs.append([ip, "addr", "replace", address, "dev", change.nic])
        argvs.append([ip, "link", "set", "dev", change.nic, "up" if state.up else "down"])
        argvs.extend(route.argv(change.nic, ip) for route in state.routes)
    return argvs
