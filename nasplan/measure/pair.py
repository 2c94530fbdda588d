"""A client -> server test's two hosts: each checked ready with its tools, the address the
client sends to, and the path between them as run.json records it (``open_pair``, ``Pair``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.errors import CannotStart
from nasplan.facts.gather import NicFacts
from nasplan.measure.netpath import (
    describe_path,
    first_ipv4,
    links_on_the_way,
    nic_holding,
    nic_towards,
    path_end,
)

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import Plan, PlanTest
    from nasplan.measure.kind import Needs, RunContext


def target_address(test: PlanTest, plan: Plan, server: HostSession) -> str:
    """The address the client sends to: the target interface's, else the server's address."""
    target = test.target
    if target.address:
        return target.address
    if target.interface:
        iface = plan.inventory.hosts[target.host or test.server].interfaces[target.interface]
        if iface.address:
            return iface.address
        nic = server.facts.interface(iface.name) if server.facts else None
        for cidr in nic.addresses if nic else ():
            if ":" not in cidr:
                return cidr.split("/")[0]
        raise CannotStart(
            f"interface {target.label()} ({iface.name}) has no IPv4 address in the inventory "
            "or on the host"
        )
    return server.host.address


def target_label(test: PlanTest) -> str:
    """``nas.p2p``, ``link:p2p@nas``, an address, or the server's name when the plan gives none."""
    target = test.target
    return target.label() if target.interface or target.address else test.server


def check_ready(test: PlanTest, ctx: RunContext, needed: Needs) -> None:
    """Raise CannotStart when a host of ``test`` is not ready or lacks a tool in ``needed``."""
    for name in dict.fromkeys(test.hosts):
        session = ctx.sessions[name]
        if not session.ready:
            raise CannotStart(session.error or f"{name} is not ready")
        for tool in needed.get(name, ()):
            if tool not in session.tools:
                raise CannotStart(
                    session.tool_errors.get(tool) or f"{name}: {tool} is not available"
                )


def host_tool(session: HostSession, tool: str) -> str:
    """Full path of ``tool`` on the session's host (prepared, else found by facts); CannotStart."""
    path = session.tools.get(tool) or (session.facts.tool(tool) if session.facts else None)
    if not path:
        raise CannotStart(f"{tool} is not installed on {session.host.name}")
    return path


@dataclass(frozen=True)
class Pair:
    """A client -> server test's two ready hosts, the address sent to, and run.json ``path``."""

    server: HostSession
    client: HostSession
    address: str
    path: dict[str, Any]


def open_pair(test: PlanTest, ctx: RunContext, needed: Needs) -> Pair:
    """Check both hosts, find the target address and the path between them; CannotStart if not."""
    check_ready(test, ctx, needed)
    server, client = ctx.sessions[test.server], ctx.sessions[test.client]
    assert server.facts is not None and client.facts is not None
    assert server.runner is not None and client.runner is not None
    address = target_address(test, ctx.plan, server)
    return Pair(server, client, address, pair_path(test, ctx, address))


def server_names(test: PlanTest, ctx: RunContext, address: str) -> tuple[str, ...]:
    """Every address the plan and inventory give the test's server: the one sent to, its
    inventory address and interfaces' addresses, each plan link's end on it."""
    host = ctx.plan.inventory.hosts[test.server]
    network = test.network or ctx.plan.network
    ends = [end for link in network.links for end in (link.a, link.b) if end.host == host.name]
    found = [address, host.address, *(i.address for i in host.interfaces.values() if i.address)]
    return tuple(dict.fromkeys([*found, *(end.ip for end in ends)]))


def nas_path(server: HostSession, address: str) -> dict[str, Any]:
    """run.json ``path`` of several clients at once: the NAS's own end of it (the NIC holding
    ``address``), whose TCP maximum is the limit of the whole."""
    assert server.facts is not None
    end = path_end(server.host, nic_holding(server.facts, address))
    return describe_path(end, end)


def pair_path(test: PlanTest, ctx: RunContext, address: str) -> dict[str, Any]:
    """run.json ``path`` of a client -> server test: each end's NIC (the client's as its
    kernel routes to ``address``, when the run asked it: ``RunContext.routes``), the links
    on the way, and ``route``: the route there and the server's route back."""
    server, client = ctx.sessions[test.server], ctx.sessions[test.client]
    assert server.facts is not None and client.facts is not None
    sent = ctx.routes.get(client.host.name, {}).get(address)
    client_nic = nic_towards(client.facts, address)
    if sent and sent.get("interface"):
        dev = str(sent["interface"])
        client_nic = client.facts.interface(dev) or NicFacts(name=dev)
    source = (sent or {}).get("source") or first_ipv4(client_nic.addresses if client_nic else ())
    reply = ctx.routes.get(server.host.name, {}).get(source) if source else None
    links = links_on_the_way(ctx.plan.inventory, (sent or {}).get("gateway"), address)
    path = describe_path(
        path_end(server.host, nic_holding(server.facts, address)),
        path_end(client.host, client_nic),
        links,
    )
    if sent is not None:
        path["route"] = {
            "to": {"address": address, **sent},
            "back": None if reply is None else {"address": source, **reply},
            "links": links,
        }
    return path


def open_client_tool(
    test: PlanTest, ctx: RunContext, record: dict[str, Any], tool: str
) -> tuple[Pair, str] | None:
    """The test's pair opened into ``record`` (its address and path), and ``tool``'s path on
    the client (every system has it: nothing installed); None, with why in ``record``, when
    the test cannot start."""
    try:
        pair = open_pair(test, ctx, {})
        path = host_tool(pair.client, tool)
    except CannotStart as exc:
        record["error"] = str(exc)
        return None
    record["params"]["address"] = pair.address
    record["path"] = pair.path
    return pair, path
