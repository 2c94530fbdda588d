"""A client -> server test's path with the routes the run asked (``RunContext.routes``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from nasplan.measure.pair import pair_path

TEST = "  - {id: p2p, kind: iperf3, server: nas, client: ws, duration_s: 2, repetitions: 1}\n"


def test_without_routes_the_path_is_the_facts_own_and_has_no_route(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(TEST)
    path = pair_path(ctx.plan.tests[0], ctx, "198.18.251.1")
    assert (path["client_interface"], path["server_interface"]) == ("eth1", "eth1")
    assert "route" not in path


def test_the_clients_nic_is_the_one_its_route_leaves_by_and_the_way_back_is_recorded(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(TEST)
    # the kernel's answer, not the subnet: a NIC the facts do not hold an address for still
    # names the client's end (never "?")
    to = {
        "interface": "eth7",
        "gateway": "198.18.251.9",
        "source": "198.18.77.1",
        "error": None,
        "ttl": 63,
        "hops": 1,
        "trace": ["198.18.251.9", "198.18.251.1"],
    }
    back = {
        "interface": "eth1",
        "gateway": "198.18.251.10",
        "source": "198.18.251.1",
        "error": None,
    }
    routes = {"ws": {"198.18.251.1": to}, "nas": {"198.18.77.1": back}}
    ctx = dataclasses.replace(ctx, routes=routes)
    path = pair_path(ctx.plan.tests[0], ctx, "198.18.251.1")
    assert path["client_interface"] == "eth7"
    assert path["route"] == {
        "to": {"address": "198.18.251.1", **to},
        "back": {"address": "198.18.77.1", **back},
        "links": [],  # no inventory host holds the gateway
    }
    # the NAS's end alone no longer sets the speed: eth7's is not known, so the NAS's stays
    assert path["speed_bits_per_second"] == 10**10
