"""What every test kind starts with: its record, whether its hosts can run it, its target."""

from __future__ import annotations

from typing import Any

from nasplan.analysis import summarize
from nasplan.context import RunContext
from nasplan.hosts import HostSession
from nasplan.plan import Plan, TestSpec


def target_address(test: TestSpec, plan: Plan, server: HostSession) -> str:
    """The address the client sends to: the target interface's, else the server's address."""
    target = test.target
    if target.address:
        return target.address
    if target.interface:
        iface = plan.inventory.hosts[test.server].interfaces[target.interface]
        if iface.address:
            return iface.address
        nic = server.facts.interface(iface.name) if server.facts else None
        for cidr in nic.addresses if nic else ():
            if ":" not in cidr:
                return cidr.split("/")[0]
        raise ValueError(
            f"interface {target.label()} ({iface.name}) has no IPv4 address in the inventory "
            "or on the host"
        )
    return server.host.address


def path_params(test: TestSpec, target: str | None = None) -> dict[str, Any]:
    """The params every client -> server kind records; ``address`` is filled in once known."""
    return {
        "server": test.server,
        "client": test.client,
        "target": target or test.target.label(),
        "address": None,
        "repetitions": test.repetitions,
    }


def new_record(test: TestSpec, params: dict[str, Any], metric: str) -> dict[str, Any]:
    """A test record that has not run yet (status failed until it succeeds)."""
    return {
        "id": test.id,
        "kind": test.kind,
        "name": test.name,
        "status": "failed",
        "error": None,
        "params": params,
        "path": None,
        "repetitions": [],
        "summary": summarize([], metric),
        "efficiency": None,
    }


def not_ready(test: TestSpec, ctx: RunContext) -> str | None:
    """Why a test's hosts cannot run it (unreachable, tools missing), or None."""
    from nasplan.measure import kinds

    needed = kinds()[test.kind].needs(test)
    for name in dict.fromkeys(test.hosts):
        session = ctx.sessions[name]
        if not session.ready:
            return session.error or f"{name} is not ready"
        for tool in needed.get(name, ()):
            if tool not in session.tools:
                return session.tool_errors.get(tool) or f"{name}: {tool} is not available"
    return None
