"""The path as the hosts route it: the script, its parsers on real captured output, the plan."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nasplan.facts.gather import HostFacts
from nasplan.input.plan import load_plan
from nasplan.measure import route
from nasplan.remote.runner import Result

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.unit.conftest import FakeRunner

PATH = Path(__file__).resolve().parents[2] / "fixtures" / "path"
BSD = Path(__file__).resolve().parents[2] / "fixtures" / "nettools" / "bsd"


def fixture(name: str) -> str:
    return (PATH / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "interface", "gateway", "source"),
    [
        ("ip-route-get-via-gateway.txt", "dgcapc0", "198.19.250.2", "198.19.250.1"),
        ("ip-route-get-direct.txt", "dgcapc0", None, "198.19.250.1"),
        ("ip-route-get-reply-by-other-nic.txt", "dgcapn1", "198.19.250.9", "198.19.250.10"),
    ],
)
def test_ip_route_get_names_the_nic_the_gateway_and_the_source(
    name: str, interface: str, gateway: str | None, source: str
) -> None:
    parsed = route.parse_route(fixture(name), "198.19.250.6")
    assert parsed == {"interface": interface, "gateway": gateway, "source": source, "error": None}


def test_no_route_is_an_error_with_the_kernels_words() -> None:
    parsed = route.parse_route(fixture("ip-route-get-unreachable.txt"), "198.19.251.9")
    assert parsed["interface"] is None
    assert parsed["error"] == "RTNETLINK answers: Network is unreachable"


def test_bsd_route_get_is_read_by_the_network_phases_parser() -> None:
    text = (BSD / "ohai_freebsd-route-n-get-default.txt").read_text(encoding="utf-8")
    parsed = route.parse_route(text, "0.0.0.0")
    assert (parsed["interface"], parsed["gateway"]) == ("vtnet0", "140.211.10.65")


@pytest.mark.parametrize(
    ("name", "ttl", "hops"),
    [("ping-ttl63-one-router.txt", 63, 1), ("ping-ttl64-direct.txt", 64, 0)],
)
def test_a_ping_replys_ttl_gives_the_hops(name: str, ttl: int, hops: int) -> None:
    assert route.parse_ttl(fixture(name)) == ttl
    assert route.initial_ttl(ttl) - ttl == hops


def test_initial_ttls_of_other_systems() -> None:
    assert [route.initial_ttl(t) for t in (1, 64, 65, 126, 128, 200, 255)] == [
        64, 64, 128, 128, 128, 255, 255,
    ]  # fmt: skip


def test_tracepath_lists_each_hop_once() -> None:
    assert route.parse_trace(fixture("tracepath-one-router.txt")) == [
        "198.19.250.2",
        "198.19.250.6",
    ]
    assert route.parse_trace(fixture("tracepath-direct.txt")) == ["198.19.250.2"]


def test_traceroute_hops_that_do_not_answer_are_none() -> None:
    text = (
        "traceroute to 198.18.0.9 (198.18.0.9), 8 hops max, 60 byte packets\n"
        " 1  198.18.0.1  0.321 ms\n"
        " 2  *\n"
        " 3  198.18.0.9  1.020 ms\n"
    )
    assert route.parse_trace(text) == ["198.18.0.1", None, "198.18.0.9"]


def test_the_clients_script_output_gives_route_ttl_and_trace_of_the_routed_address() -> None:
    found = route.parse(fixture("script-client-routed-and-direct.txt"))
    assert found["198.19.250.6"] == {
        "interface": "dgcapc0",
        "gateway": "198.19.250.2",
        "source": "198.19.250.1",
        "error": None,
        "ttl": 63,
        "hops": 1,
        "trace": ["198.19.250.2", "198.19.250.6"],
    }
    direct = found["198.19.250.2"]
    assert direct["hops"] == 0 and direct["gateway"] is None and "trace" not in direct


def test_the_servers_script_output_gives_the_routes_back_only() -> None:
    found = route.parse(fixture("script-server-replies.txt"))
    assert found["198.19.250.1"]["interface"] == "dgcapn0"
    assert found["198.19.250.1"]["gateway"] == "198.19.250.5"
    assert "ttl" not in found["198.19.250.1"]
    assert found["198.19.251.77"]["error"] == "RTNETLINK answers: Network is unreachable"


def test_the_script_traces_only_a_routed_address_and_pings_only_what_it_sends_to() -> None:
    text = route.script(route.Probes({"198.18.1.2"}, {"198.18.9.9"}), route.Asker("ip", "/sbin/ip"))
    assert "/sbin/ip -o route get 198.18.1.2" in text and "/sbin/ip -o route get 198.18.9.9" in text
    assert "ping -c 1 -W 2 198.18.1.2" in text and "ping -c 1 -W 2 198.18.9.9" not in text
    assert '*" via "*' in text and "tracepath -n -m 8 198.18.1.2" in text
    for line in text.splitlines():  # every line is valid sh
        shlex.split(line, comments=False)


def test_a_bsd_host_is_asked_with_route_get_and_pings_with_its_own_timeout() -> None:
    facts = HostFacts(kernel_name="FreeBSD", tools={"route": "/sbin/route"})
    asker = route.Asker.of(facts)
    text = route.script(route.Probes({"198.18.1.2"}), asker)
    assert "/sbin/route -n get 198.18.1.2" in text and "ping -c 1 -t 2 198.18.1.2" in text


def test_a_linux_host_without_ip_reads_the_kernels_table() -> None:
    assert route.Asker.of(HostFacts(kernel_name="Linux", tools={})).kind == "proc"
    assert route.Asker.of(HostFacts(kernel_name="Linux", tools={"ip": "/bin/ip"})).kind == "ip"


def test_probes_ask_the_client_its_route_and_the_server_its_way_back_to_each_client_address() -> (
    None
):
    wanted = route.missing_probes(
        [("ws", "nas", "198.18.1.6"), ("ws", "nas", "nas.example")],
        {},
        {"ws": ["198.18.0.11/24", "198.18.1.1/30", "127.0.0.1/8", "fe80::1/64"]},
    )
    assert wanted["ws"].sends_to == {"198.18.1.6"}  # a host name is not routed here
    assert wanted["nas"].answers == {"198.18.0.11", "198.18.1.1"}


def test_what_the_hosts_said_already_is_not_asked_again() -> None:
    pairs = [("ws", "nas", "198.18.1.6")]
    addresses = {"ws": ["198.18.0.11/24", "198.18.1.1/30", "172.17.0.1/16"]}
    sent = {"interface": "eth1", "gateway": None, "source": "198.18.1.1", "error": None}
    # the client answered (in the facts' round trip): only its source address's way back
    wanted = route.missing_probes(pairs, {"ws": {"198.18.1.6": sent}}, addresses)
    assert list(wanted) == ["nas"] and wanted["nas"].answers == {"198.18.1.1"}
    # both answered: nothing more to ask, no round trip
    back = {"interface": "eth1", "gateway": None, "source": "198.18.1.6", "error": None}
    routes = {"ws": {"198.18.1.6": sent}, "nas": {"198.18.1.1": back}}
    assert route.missing_probes(pairs, routes, addresses) == {}


def test_a_routed_path_asked_without_its_trace_is_asked_again() -> None:
    routed = {"interface": "eth1", "gateway": "198.18.1.9", "source": "198.18.1.1", "error": None}
    back = {"interface": "eth1", "gateway": None, "source": "198.18.1.6", "error": None}
    routes = {"ws": {"198.18.1.6": routed}, "nas": {"198.18.1.1": back}}
    wanted = route.missing_probes([("ws", "nas", "198.18.1.6")], routes, {})
    assert list(wanted) == ["ws"] and wanted["ws"].sends_to == {"198.18.1.6"}
    routes["ws"]["198.18.1.6"] = {**routed, "trace": ["198.18.1.9", "198.18.1.6"]}
    assert route.missing_probes([("ws", "nas", "198.18.1.6")], routes, {}) == {}


def test_the_inventory_names_what_the_facts_round_trip_can_ask(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        "hosts:\n"
        "  nas: {address: 198.18.0.10, interfaces: {p2p: {name: eth1, address: 198.18.1.6/30},"
        " bare: {name: eth2}}}\n"
        "  ws: {address: ws.example, interfaces: {p2p: {name: eth1, address: 198.18.1.5/30}}}\n"
    )
    (tmp_path / "plan.yaml").write_text(
        "name: t\ninventory: inventory.yaml\ntests:\n"
        "  - {id: a, kind: iperf3, server: nas, client: ws, target: nas.p2p}\n"
        "  - {id: b, kind: iperf3, server: nas, client: ws}\n"
        "  - {id: c, kind: iperf3, server: nas, client: ws, target: nas.bare}\n"
        "  - {id: d, kind: disk, host: nas, path: /tmp}\n"
    )
    plan = load_plan(tmp_path / "plan.yaml")
    pairs, addresses = route.inventory_pairs(plan.tests, plan.inventory)
    # nas.bare has no address in the inventory: asked after the facts
    assert pairs == [("ws", "nas", "198.18.1.6"), ("ws", "nas", "198.18.0.10")]
    assert addresses["ws"] == ["ws.example", "198.18.1.5"]
    wanted = route.missing_probes(pairs, {}, addresses)
    assert wanted["nas"].answers == {"198.18.1.5"}  # a host name is no address to route to


def test_in_the_facts_round_trip_the_facts_scripts_own_findings_choose_the_command() -> None:
    text = route.script(route.Probes({"198.18.1.2"}), route.FACTS)
    assert '"$nasplan_ip" -o route get 198.18.1.2' in text
    assert "Darwin|FreeBSD) nasplan_find route" in text
    assert "ping -c 1 -t 2 198.18.1.2" in text and "ping -c 1 -W 2 198.18.1.2" in text
    assert "tracepath" not in text  # a slow trace must not hold the facts' round trip


def test_gather_runs_one_script_and_nothing_when_there_is_nothing_to_ask(
    fake_runner: Callable[[str], FakeRunner],
) -> None:
    captured = fixture("script-server-replies.txt")
    runner = fake_runner("ws").expect(
        "@@nasplan:route:", reply=lambda text: Result(text, captured, "", 0)
    )
    found = route.gather(runner, route.Probes(answers={"198.19.250.1"}), route.Asker())
    assert found["198.19.250.1"]["gateway"] == "198.19.250.5"
    assert route.gather(runner, route.Probes(), route.Asker()) == {}
    assert len(runner.calls) == 1
