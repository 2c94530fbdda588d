"""Path findings: a routed or asymmetric path, and the slowest link nasplan knows on the way.

Read from each client -> server test's ``path.route`` (nasplan/measure/route.py): the client's
route to the address it sent to, the TTL of a ping's reply, the trace, and the server's route
back to the client's source address. A test without ``route`` (an old run, a Windows host) has
no path finding: nothing is said that was not measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.diagnose.common import finding, rate_text


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ``routed-path`` and an ``asymmetric-path`` finding per test whose path is so."""
    found: list[dict[str, Any]] = []
    for test in run.get("tests") or []:
        route = (test.get("path") or {}).get("route")
        if not isinstance(route, Mapping) or not isinstance(route.get("to"), Mapping):
            continue
        routed = _routed(test, route)
        if routed is not None:
            found.append(routed)
        asymmetric = _asymmetric(test, route)
        if asymmetric is not None:
            found.append(asymmetric)
    return found


def _ends(test: Mapping[str, Any]) -> tuple[str, str, str]:
    params = test.get("params") or {}
    path = test.get("path") or {}
    client = (
        f"{params.get('client', '?')} {path.get('client_interface') or '(interface not known)'}"
    )
    server = (
        f"{params.get('server', '?')} {path.get('server_interface') or '(interface not known)'}"
    )
    return client, server, str(params.get("address") or (path.get("route") or {})["to"]["address"])


def _routed(test: Mapping[str, Any], route: Mapping[str, Any]) -> dict[str, Any] | None:
    """The client reaches the server through a router: a gateway in its route, or a ping reply
    whose TTL says routers were on the way."""
    to = route["to"]
    gateway, hops = to.get("gateway"), to.get("hops")
    if gateway is None and not hops:
        return None
    client, server, address = _ends(test)
    parts = [f"{client} reaches {address} ({server}) through a router"]
    if gateway is not None:
        router = next(
            (link for link in route.get("links") or [] if link["address"] == gateway), None
        )
        named = f" ({router['host']} {router['interface']})" if router else ""
        parts.append(f"gateway {gateway}{named}")
    if hops is not None:
        hop_word = "hop" if hops == 1 else "hops"
        parts.append(f"{hops} router {hop_word} by the reply's TTL {to.get('ttl')}")
    trace = [hop or "*" for hop in to.get("trace") or []]
    if trace:
        parts.append(f"tracepath {' → '.join(trace)}")
    slowest = _slowest_link(route)
    if slowest is not None:
        parts.append(
            f"slowest link nasplan knows on the way: {slowest['host']} {slowest['interface']} "
            f"at {rate_text(slowest['speed_bits_per_second'])}"
        )
    text = parts[0] + ": " + "; ".join(parts[1:]) + "."
    evidence = {
        "gateway": gateway,
        "ttl": to.get("ttl"),
        "hops": hops,
        "trace": to.get("trace") or [],
        "client_interface": (test.get("path") or {}).get("client_interface"),
        "server_interface": (test.get("path") or {}).get("server_interface"),
        "links": list(route.get("links") or []),
    }
    client_host = (test.get("params") or {}).get("client")
    return finding("routed-path", test.get("id"), client_host, text, evidence)


def _slowest_link(route: Mapping[str, Any]) -> Mapping[str, Any] | None:
    known = [link for link in route.get("links") or [] if link.get("speed_bits_per_second")]
    return min(known, key=lambda link: link["speed_bits_per_second"]) if known else None


def _asymmetric(test: Mapping[str, Any], route: Mapping[str, Any]) -> dict[str, Any] | None:
    """The server's reply leaves by another interface than the one the client's traffic
    arrives on, or by a gateway where the way there had none (or the other way round)."""
    back = route.get("back")
    if not isinstance(back, Mapping) or not back.get("interface"):
        return None
    path = test.get("path") or {}
    arrives = path.get("server_interface")
    other_nic = arrives is not None and back["interface"] != arrives
    other_way = (back.get("gateway") is None) != (route["to"].get("gateway") is None)
    if not other_nic and not other_way:
        return None
    params = test.get("params") or {}
    server = params.get("server", "?")
    via = f" via {back['gateway']}" if back.get("gateway") else " (no gateway)"
    there = route["to"].get("gateway")
    text = (
        f"{server}'s replies to {back['address']} leave by {back['interface']}{via}, "
        f"while {params.get('client', '?')}'s traffic arrives on "
        f"{arrives or '(interface not known)'}"
        f"{f' through {there}' if there else ' directly'}: the path is asymmetric."
    )
    evidence = {
        "reply_interface": back["interface"],
        "reply_gateway": back.get("gateway"),
        "arrival_interface": arrives,
        "gateway_there": there,
        "client_source": back["address"],
    }
    return finding("asymmetric-path", test.get("id"), server, text, evidence)
