"""The path as the hosts route it: ``ip route get`` (BSD ``route -n get``), ping TTL, tracepath.

One script per host (``script``): for each address the host sends to as a client, the route,
the TTL of a ping's reply (its hop count) and, when the route names a gateway, ``tracepath -n``
(else ``traceroute -n``); for each address of a client it serves, the route its replies take.
It rides in the facts' round trip for the addresses the inventory gives (``inventory_pairs``,
``FACTS``); what that could not ask runs after the network phase (``missing_probes``,
``gather``; nasplan/run/apply.py). Pure parsers here.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasplan.facts.bsd import BSD_KERNELS
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.input.inventory import Inventory
    from nasplan.input.plan import PlanTest
    from nasplan.remote.runner import Runner

# The network phase's modules (nasplan.network.*) are not imported here: a plan that changes no
# network setting does not load them (tests/unit/test_start_up_imports.py); only BSD's and
# /proc/net/route's answers are handed to their parser (nasplan.network.checks).
_DEV = re.compile(r"\bdev (\S+)")
_VIA = re.compile(r"\bvia (\S+)")
_SRC = re.compile(r"\bsrc (\S+)")
_TTL = re.compile(r"\bttl[=:](\d+)", re.IGNORECASE)
# tracepath: " 1:  198.18.0.2   0.030ms"; traceroute: " 1  198.18.0.2  0.030 ms"
_HOP = re.compile(r"^\s*(\d+)[:?]?\s+(\d{1,3}(?:\.\d{1,3}){3}|\*|no reply)", re.MULTILINE)
# the first TTL a system sets: Linux, macOS and BSD 64, Windows 128, some routers 255
_INITIAL_TTLS = (64, 128, 255)
PROBE_TIMEOUT_S = 30.0
TRACE_MAX_HOPS = 8
TRACE_TIMEOUT_S = 6


@dataclass
class Probes:
    """What one host is asked: addresses it sends to (route, TTL, trace) and addresses it
    answers (the reply's route only)."""

    sends_to: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)


def is_ipv4(address: str) -> bool:
    """True for a dotted IPv4 address (a host name is not routed here)."""
    try:
        return isinstance(ipaddress.ip_address(address), ipaddress.IPv4Address)
    except ValueError:
        return False


@dataclass(frozen=True)
class Asker:
    """How a host is asked its route: ``ip -o route get`` (Linux), ``route -n get`` (FreeBSD,
    macOS) or, with neither, the kernel's table (``/proc/net/route``)."""

    kind: str = "ip"  # ip | bsd | proc | in-facts
    command: str = "ip"
    # tracepath a routed address; not in the facts' round trip, whose time a slow trace
    # (hops that do not answer) must not eat
    traces: bool = True

    @classmethod
    def of(cls, facts: HostFacts | None) -> Asker:
        """The way ``facts``' host answers (``ip`` when its facts are not known)."""
        if facts is None:
            return cls()
        if facts.kernel_name in BSD_KERNELS:
            return cls("bsd", facts.tool("route") or "route")
        ip = facts.tool("ip")
        return cls("ip", ip) if ip else cls("proc", "cat")

    def route_line(self, address: str) -> str:
        """Shell text printing the route to ``address``."""
        if self.kind == IN_FACTS:
            # in the facts' round trip (facts_script_with), before the facts are known: the
            # facts script's own findings say which ($nasplan_ip, $nasplan_os, nasplan_find)
            quoted = shlex.quote(address)
            return (
                f'if [ -n "$nasplan_ip" ]; then "$nasplan_ip" -o route get {quoted} 2>&1; else '
                f'case "$nasplan_os" in Darwin|FreeBSD) nasplan_find route; '
                f'"${{nasplan_p:-route}}" -n get {quoted} 2>&1;; '
                "*) cat /proc/net/route 2>&1;; esac; fi"
            )
        if self.kind == "bsd":
            return f"{shlex.quote(self.command)} -n get {shlex.quote(address)} 2>&1"
        if self.kind == "proc":
            return "cat /proc/net/route 2>&1"
        return f"{shlex.quote(self.command)} -o route get {shlex.quote(address)} 2>&1"

    def ping_line(self, address: str) -> str:
        """Shell text pinging ``address`` once (FreeBSD's and macOS's ping: ``-t`` ends it)."""
        linux = shlex.join(["ping", "-c", "1", "-W", "2", address]) + " 2>&1"
        bsd = shlex.join(["ping", "-c", "1", "-t", "2", address]) + " 2>&1"
        if self.kind == IN_FACTS:
            return f'case "$nasplan_os" in Darwin|FreeBSD) {bsd};; *) {linux};; esac'
        return bsd if self.kind == "bsd" else linux


IN_FACTS = "in-facts"
# in the facts' round trip: asked the way the facts script found (``Asker.route_line``)
FACTS = Asker(IN_FACTS, "", traces=False)


def script(probes: Probes, asker: Asker) -> str:
    """POSIX sh printing ``route:ADDR``, ``ttl:ADDR`` and ``trace:ADDR`` sections."""
    lines = ["nasplan_to=; command -v timeout >/dev/null 2>&1 && nasplan_to=timeout"]
    for address in sorted(probes.sends_to | probes.answers):
        quoted = shlex.quote(address)
        lines.append(f"nasplan_r=$({asker.route_line(address)})")
        lines.append(f"printf '\\n@@nasplan:route:%s@@\\n%s\\n' {quoted} \"$nasplan_r\"")
        if address not in probes.sends_to:
            continue
        lines.append(f"printf '\\n@@nasplan:ttl:%s@@\\n' {quoted}; {asker.ping_line(address)}")
        if not asker.traces:
            continue
        # a trace only for a routed path: a direct one has nothing to show and costs a probe
        trace = (
            f"if command -v tracepath >/dev/null 2>&1; then ${{nasplan_to:+$nasplan_to "
            f"{TRACE_TIMEOUT_S}}} tracepath -n -m {TRACE_MAX_HOPS} {quoted} 2>&1; "
            f"elif command -v traceroute >/dev/null 2>&1; then ${{nasplan_to:+$nasplan_to "
            f"{TRACE_TIMEOUT_S}}} traceroute -n -q 1 -w 1 -m {TRACE_MAX_HOPS} {quoted} 2>&1; fi"
        )
        lines.append(
            f'case "$nasplan_r" in *" via "*|*"gateway:"*) '
            f"printf '\\n@@nasplan:trace:%s@@\\n' {quoted}; {trace};; esac"
        )
    return "\n".join(lines) + "\n"


def initial_ttl(ttl: int) -> int:
    """The TTL the sender most likely started from: the smallest usual one at or above."""
    return next((start for start in _INITIAL_TTLS if ttl <= start), 255)


def parse_ttl(text: str) -> int | None:
    """The TTL of the first reply in ping's output (iputils, BusyBox, BSD), None without one."""
    match = _TTL.search(text)
    return int(match[1]) if match else None


def parse_trace(text: str) -> list[str | None]:
    """tracepath / traceroute output -> each hop's address in order (None: no reply)."""
    hops: dict[int, str | None] = {}
    for number, where in _HOP.findall(text):
        hop = int(number)
        address = where if where[0].isdigit() else None
        if hops.get(hop) is None:
            hops[hop] = address
    return [hops[n] for n in sorted(hops)]


def parse_route(text: str, address: str) -> dict[str, Any]:
    """One ``route:ADDR`` section -> ``{"interface", "gateway", "source", "error"}``."""
    text = text.strip()
    if "route to:" in text or text.startswith("Iface"):  # BSD route -n get, /proc/net/route
        from nasplan.network.checks import route_leaves_by

        dev, via = route_leaves_by(text, address)
    else:
        found_dev, found_via = _DEV.search(text), _VIA.search(text)
        dev = found_dev[1] if found_dev else None
        via = found_via[1] if found_via else None
    error = None if dev else (text.splitlines()[0] if text else "no route")
    src = _SRC.search(text)
    return {"interface": dev, "gateway": via, "source": src[1] if src else None, "error": error}


def parse(text: str) -> dict[str, dict[str, Any]]:
    """The script's output -> address -> evidence: ``{"interface", "gateway", "source",
    "error"}``, and for an address the host sends to ``ttl``, ``hops`` (routers on the reply's
    way, from the TTL) and ``trace`` (hop addresses, when traced)."""
    sections = split_sections(text)
    found: dict[str, dict[str, Any]] = {}
    for name, body in sections.items():
        kind, _, address = name.partition(":")
        if kind == "route":
            found.setdefault(address, {}).update(parse_route(body, address))
    for address, evidence in found.items():
        if f"ttl:{address}" in sections:
            ttl = parse_ttl(sections[f"ttl:{address}"])
            evidence["ttl"] = ttl
            evidence["hops"] = None if ttl is None else initial_ttl(ttl) - ttl
        if f"trace:{address}" in sections:
            evidence["trace"] = parse_trace(sections[f"trace:{address}"])
    return found


def gather(runner: Runner, probes: Probes, asker: Asker) -> dict[str, dict[str, Any]]:
    """Run the script on one host: address -> evidence (``parse``); {} when nothing to ask,
    or when the host did not answer in time (not marked lost: the path is then not known)."""
    if not probes.sends_to and not probes.answers:
        return {}
    result = runner.try_script(script(probes, asker), timeout_s=PROBE_TIMEOUT_S)
    return {} if result is None else parse(result.stdout)


def ipv4_addresses(cidrs: Iterable[str]) -> set[str]:
    """The IPv4 addresses of ``cidrs`` (``198.18.0.10/24``), loopback left out."""
    found = set()
    for cidr in cidrs:
        address = cidr.split("/")[0]
        if is_ipv4(address) and not ipaddress.ip_address(address).is_loopback:
            found.add(address)
    return found


def missing_probes(
    pairs: Iterable[tuple[str, str, str]],
    routes: Mapping[str, Mapping[str, Any]],
    addresses: Mapping[str, Iterable[str]],
) -> dict[str, Probes]:
    """(client, server, address sent to) of each test -> what each host has not been asked yet
    (``routes``: what the hosts said already): the client its route to the address, the server
    its way back to the client's source address (to each of the client's ``addresses`` while
    that is not known)."""
    wanted: dict[str, Probes] = {}
    for client, server, address in pairs:
        if not is_ipv4(address):
            continue
        sent = routes.get(client, {}).get(address)
        # a routed path asked in the facts' round trip has no trace yet: asked again with one
        if sent is None or (sent.get("gateway") and "trace" not in sent):
            wanted.setdefault(client, Probes()).sends_to.add(address)
        source = (sent or {}).get("source")
        candidates = {source} if source else ipv4_addresses(addresses.get(client, ()))
        unasked = {a for a in candidates if a not in routes.get(server, {})}
        if unasked:
            wanted.setdefault(server, Probes()).answers.update(unasked)
    return wanted


def inventory_pairs(
    tests: Iterable[PlanTest], inventory: Inventory
) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """The (client, server, address) of each test whose address the inventory gives, and each
    host's addresses there: what the facts' round trip can ask before any fact is known."""
    pairs = []
    for test in tests:
        if not test.client or test.server not in inventory.hosts:
            continue
        server, target = inventory.hosts[test.server], test.target
        if target.address:
            address: str | None = target.address
        elif target.interface and target.interface in server.interfaces:
            address = server.interfaces[target.interface].address
        else:
            address = server.address
        if address and is_ipv4(address):
            pairs.append((test.client, test.server, address))
    addresses = {
        name: [host.address, *(i.address for i in host.interfaces.values() if i.address)]
        for name, host in inventory.hosts.items()
    }
    return pairs, addresses
