"""The network as it was while the tests ran: facts gathered before the plan's changes, with
the MTU and addresses the plan set (run.json ``network.hosts.<host>.applied``) laid over them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def applied_states(run: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """host -> NIC name -> the state the plan applied (``mtu_bytes``, ``addresses``); empty
    when the plan changed nothing or its change never took effect."""
    network = run.get("network") or {}
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for host, record in (network.get("hosts") or {}).items():
        applied = (record or {}).get("applied") or {}
        if applied and (record.get("confirmed") or network.get("status") == "ok"):
            found[host] = {str(name): dict(state) for name, state in applied.items()}
    return found


def nics_in_force(run: Mapping[str, Any], host: str) -> list[dict[str, Any]]:
    """The host's NIC facts with the plan's MTU and addresses where it changed them; a changed
    NIC gets ``changed_by_plan: True`` and ``before`` (``{"mtu_bytes", "addresses"}``)."""
    facts = ((run.get("hosts") or {}).get(host) or {}).get("facts") or {}
    applied = applied_states(run).get(host, {})
    nics = []
    for nic in facts.get("interfaces") or []:
        state = applied.get(str(nic.get("name")))
        if state is None:
            nics.append(dict(nic))
            continue
        before = {"mtu_bytes": nic.get("mtu_bytes"), "addresses": list(nic.get("addresses") or [])}
        during = {
            **nic,
            "mtu_bytes": state.get("mtu_bytes", nic.get("mtu_bytes")),
            "addresses": list(state.get("addresses") or []),
        }
        changed = {k: during[k] for k in before} != before
        nics.append({**during, "changed_by_plan": changed, "before": before})
    return nics


def run_in_force(run: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``run`` whose hosts' NIC facts are those in force during the tests."""
    hosts = {
        name: {
            **host,
            "facts": {**(host.get("facts") or {}), "interfaces": nics_in_force(run, name)},
        }
        if host.get("facts")
        else host
        for name, host in (run.get("hosts") or {}).items()
    }
    return {**run, "hosts": hosts}


def network_rows(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per NIC the plan touched: host, NIC, MTU and addresses before, during, after."""
    rows = []
    for host, record in sorted(((run.get("network") or {}).get("hosts") or {}).items()):
        before = (record or {}).get("before") or {}
        applied = (record or {}).get("applied") or {}
        after = (record or {}).get("after") or {}
        for name in sorted(set(before) | set(applied)):
            rows.append(
                {
                    "host": host,
                    "nic": name,
                    "before": before.get(name),
                    "during": applied.get(name),
                    "after": after.get(name),
                }
            )
    return rows
