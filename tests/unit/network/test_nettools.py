"""NICs without ``ip -j``: parsers of ``ip`` text and ``ifconfig`` on real captures, the choice
of tools from facts, and the state/apply/restore scripts run by real BusyBox and iproute2."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from nasplan.facts.gather import parse_facts
from nasplan.input.network import NicChange
from nasplan.network import checks, ifconfig, iptext, scripts, tools
from nasplan.network.backends import by_mechanism
from nasplan.network.state import NicState, Route, parse_state
from nasplan.network.tools import IFCONFIG, IP_JSON, IP_TEXT, NetTools

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures/nettools"
GATEWAY = "198.19.33.2"
STATIC = Route("198.19.35.0/24", GATEWAY, 5, "static")
DEFAULT = Route("default", GATEWAY, 100)


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def iproute2_json() -> dict[str, NicState]:
    return parse_state(text("iproute2-addr.json"), text("iproute2-route.json"))


def test_iproute2_json_of_the_capture_is_what_the_namespace_was_built_with() -> None:
    states = iproute2_json()
    eth1 = states["eth1"]
    assert (eth1.mtu_bytes, eth1.up) == (9000, True)
    assert eth1.addresses == ("198.19.33.1/30", "198.19.33.5/30", "198.19.33.9/29")
    assert set(eth1.routes) == {STATIC, DEFAULT}  # kernel prefix routes left out
    assert (states["eth9"].up, states["eth9"].addresses) == (False, ("198.19.34.1/24",))
    assert (states["eth2"].up, states["eth2"].addresses) == (True, ())
    assert states["eth3"].up is False


def test_iproute2_text_reads_exactly_what_its_json_says() -> None:
    assert iptext.parse_state(text("iproute2-addr.txt"), text("iproute2-route.txt")) == (
        iproute2_json()
    )


def test_busybox_ip_text_reads_the_same_state_but_prints_no_route_protocol() -> None:
    busybox = iptext.parse_state(text("busybox-ip-addr.txt"), text("busybox-ip-route.txt"))
    expected = {
        name: dataclasses.replace(
            state, routes=tuple(dataclasses.replace(r, protocol=None) for r in state.routes)
        )
        for name, state in iproute2_json().items()
    }
    assert busybox == expected
    # Its kernel prefix routes carry no `proto kernel`: known by being an address's prefix.
    assert all(r.dst != "198.19.33.8/29" for r in busybox["eth1"].routes)


def test_busybox_ip_link_gives_mtu_and_up_flag() -> None:
    links = iptext.parse_addr(text("busybox-ip-link.txt"))
    assert links["eth1"] == (9000, True, ())
    assert links["eth9"] == (1500, False, ())


def test_busybox_has_no_json_output() -> None:
    capture = text("busybox-ip-json.txt")
    assert "exit=1" in capture and not capture.lstrip().startswith("[")


@pytest.mark.parametrize("name", ["busybox-ifconfig-a.txt", "net-tools-ifconfig-a.txt"])
def test_ifconfig_sees_one_ipv4_address_per_label(name: str) -> None:
    states = ifconfig.parse_state(text(name), text("proc-net-route.txt"))
    json = iproute2_json()
    assert {n: (s.mtu_bytes, s.up) for n, s in states.items()} == {
        n: (s.mtu_bytes, s.up) for n, s in json.items()
    }
    # The unlabelled second address 198.19.33.5 is invisible to ifconfig; the alias is not.
    assert states["eth1"].addresses == ("198.19.33.1/30", "198.19.33.9/29")
    assert states["eth9"].addresses == ("198.19.34.1/24",)
    assert states["lo"].addresses[0] == "127.0.0.1/8"
    # /proc/net/route: no protocol; the prefix of the unseen address looks like a user route.
    assert set(states["eth1"].routes) == {
        Route("198.19.35.0/24", GATEWAY, 5),
        Route("default", GATEWAY, 100),
        Route("198.19.33.4/30", None, 0),
    }


def test_route_check_without_ip_matches_the_kernel_table_by_longest_prefix() -> None:
    table = text("proc-net-route.txt")
    assert checks.route_leaves_by(table, GATEWAY) == ("eth1", None)
    assert checks.route_leaves_by(table, "198.19.35.7") == ("eth1", GATEWAY)
    assert checks.route_leaves_by(table, "198.19.99.1") == ("eth1", GATEWAY)  # default
    assert checks.route_leaves_by(text("busybox-ip-route-get.txt")) == ("eth1", None)


def test_old_iproute2_text_recorded_by_others() -> None:
    centos = iptext.parse_state(text("public-centos7-ip-addr.txt"), "")
    assert centos["eth0"] == NicState("eth0", 1500, True, ("192.168.64.145/24",))
    assert centos["lo"].addresses == ("127.0.0.1/8", "::1/128")  # fe80:: (link) left out
    labelled = iptext.parse_addr(text("public-2015-ip-addr-label.txt"))
    assert labelled["eth0"] == (1500, True, ("192.168.0.1/24", "192.168.88.1/24"))
    lines = text("public-centos7-ip-route.txt").splitlines()
    routes = [iptext.parse_route_line(line) for line in lines]
    assert routes[0] == ("ens160", Route("default", "10.16.x.y", 100, "static"), None)
    assert routes[1] is not None and routes[1][1].protocol == "kernel"
    assert routes[2] == ("ens160", Route("10.32.x.y", "10.16.112.1", 100, "dhcp"), None)


@pytest.mark.parametrize(
    ("name", "kind", "ip_tail"),
    [
        ("facts-iproute2.txt", IP_JSON, "/usr/sbin/ip"),
        ("facts-busybox-ip.txt", IP_TEXT, "/ip"),
        ("facts-busybox-ifconfig.txt", IFCONFIG, None),
    ],
)
def test_tools_are_chosen_from_the_facts_round_trip(
    name: str, kind: str, ip_tail: str | None
) -> None:
    facts = parse_facts(text(name))
    chosen = tools.from_facts(facts)
    assert chosen is not None and chosen.kind == kind
    assert facts.ip_json is {IP_JSON: True, IP_TEXT: False, IFCONFIG: None}[kind]
    if ip_tail:
        assert chosen.ip.endswith(ip_tail) and chosen.ip == facts.tool("ip")
    assert chosen.ifconfig == facts.tool("ifconfig")
    assert chosen.route == facts.tool("route")
    assert parse_facts(text(name)).interface("eth1") is not None


def test_no_ip_and_no_ifconfig_means_no_tools() -> None:
    facts = parse_facts(text("facts-busybox-ifconfig.txt"))
    bare = dataclasses.replace(facts, tools={**facts.tools, "ifconfig": None})
    assert tools.from_facts(bare) is None


def test_snapshot_form_round_trips_and_restore_uses_the_recorded_tools() -> None:
    busybox = NetTools(IP_TEXT, "/bin/ip", "/sbin/ifconfig", "/sbin/route")
    assert NetTools.from_dict(busybox.to_dict()) == busybox
    assert NetTools.from_dict(None) == NetTools()  # snapshots written before this field
    backend = by_mechanism("setsid-timer", busybox)
    before = {"eth1": NicState("eth1", 1500, True, ())}
    script = backend.restore_script("/tmp/d", [NicChange("eth1", 9000, ())], before, force=True)
    assert "/bin/ip link set dev eth1 mtu 1500" in script
    assert "/bin/ip addr show" in script and " -j " not in script


def test_ifconfig_puts_a_new_address_on_the_nic_or_on_an_alias_and_takes_it_off() -> None:
    change = NicChange("eth1", 9000, ("198.19.36.1/30",))
    bare = {"eth1": NicState("eth1", 1500, False, ())}
    addressed = {"eth1": NicState("eth1", 1500, True, ("198.19.40.1/24",))}
    assert tools.apply_argvs([change], bare, NetTools(IFCONFIG)) == [
        ["ifconfig", "eth1", "mtu", "9000"],
        ["ifconfig", "eth1", "up"],
        ["ifconfig", "eth1", "198.19.36.1", "netmask", "255.255.255.252", "up"],
    ]
    assert tools.restore_argvs([change], bare, NetTools(IFCONFIG)) == [
        ["ifconfig", "eth1", "0.0.0.0"],
        ["ifconfig", "eth1", "mtu", "1500"],
        ["ifconfig", "eth1", "down"],
    ]
    assert tools.apply_argvs([change], addressed, NetTools(IFCONFIG))[-1] == (
        ["ifconfig", "eth1:0", "198.19.36.1", "netmask", "255.255.255.252", "up"]
    )
    assert tools.restore_argvs([change], addressed, NetTools(IFCONFIG))[0] == (
        ["ifconfig", "eth1:0", "down"]
    )


def test_ifconfig_routes_go_back_with_route_add() -> None:
    routes = (Route("default", GATEWAY, 100), Route("198.19.35.0/24", GATEWAY, 5))
    before = {"eth1": NicState("eth1", 1500, True, ("198.19.33.1/30",), routes)}
    argvs = tools.restore_argvs([NicChange("eth1", 9000, ())], before, NetTools(IFCONFIG))
    assert argvs[-2:] == [
        ["route", "add", "default", "gw", GATEWAY, "metric", "100", "dev", "eth1"],
        ["route", "add", "-net", "198.19.35.0", "netmask", "255.255.255.0", "gw", GATEWAY,
         "metric", "5", "dev", "eth1"],
    ]  # fmt: skip


def test_hostile_tool_paths_and_nic_names_stay_single_words() -> None:
    evil = NetTools(IP_TEXT, "/opt/my ip;$(reboot)")
    script = tools.state_script(["eth1'; reboot #"], evil)
    assert "'/opt/my ip;$(reboot)' addr show" in script
    argvs = tools.apply_argvs([NicChange("x$(id)", 9000, ())], {}, evil)
    body = scripts.restore_body(argvs)
    assert "'/opt/my ip;$(reboot)' link set dev 'x$(id)' mtu 9000" in body


def _applets(tmp_path: Path, *names: str) -> Path:
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox is not installed")
    directory = tmp_path / "applets"
    directory.mkdir()
    for name in names:
        (directory / name).symlink_to(busybox)
    return directory


@pytest.mark.parametrize("kind", [IP_TEXT, IFCONFIG])
def test_state_scripts_run_by_busybox_read_lo_as_iproute2_does(kind: str, tmp_path: Path) -> None:
    applets = _applets(tmp_path, "ip", "ifconfig")
    net_tools = NetTools(kind, str(applets / "ip"), str(applets / "ifconfig"))
    script = tools.state_script(["lo"], net_tools)
    proc = subprocess.run(
        ["busybox", "sh", "-c", script], capture_output=True, text=True, timeout=10, check=True
    )
    ours = tools.parse_state_output(proc.stdout)["lo"]
    reference = subprocess.run(
        ["sh", "-c", tools.state_script(["lo"])], capture_output=True, text=True, check=True
    )
    expected = tools.parse_state_output(reference.stdout)["lo"]
    assert (ours.mtu_bytes, ours.up, ours.addresses) == (
        expected.mtu_bytes,
        expected.up,
        expected.addresses,
    )
    assert ours.mtu_bytes == int(Path("/sys/class/net/lo/mtu").read_text())


@pytest.mark.parametrize(
    ("probe", "expected"),
    [("[[", True), ("[d", False), ("", False)],  # iproute2 4.13-4.16: JSON addr, text routes
)
def test_ip_json_probe_needs_json_from_both_addr_and_route(probe: str, expected: bool) -> None:
    facts = parse_facts(f"@@nasplan:tools@@\nip=/sbin/ip\n@@nasplan:ip-json@@\n{probe}\n")
    assert facts.ip_json is expected
    assert facts.to_dict()["ip_json"] is expected
    chosen = tools.from_facts(facts)
    assert chosen is not None and chosen.kind == (IP_JSON if expected else IP_TEXT)
