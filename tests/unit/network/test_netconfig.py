"""Network changes: plan model, ip -j parsers on captured output, scripts, check verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.errors import InputError
from nasplan.input.network import NicChange
from nasplan.input.plan import load_plan
from nasplan.network import checks, scripts, tools
from nasplan.network.state import differences, parse_state
from nasplan.network.tools import parse_state_output

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures/ip"
INVENTORY = {
    "hosts": {
        "nas": {
            "address": "198.18.3.10",
            "interfaces": {
                "lan": {"name": "eth0", "address": "198.18.3.10/24", "speed": "1G"},
                "p2p": {"name": "eth1", "speed": "10G"},
            },
        },
        "ws": {"address": "198.18.3.11", "interfaces": {"p2p": {"name": "eth1", "speed": "10G"}}},
    }
}


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def plan_file(tmp_path: Path, **extra: Any) -> Path:
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(INVENTORY))
    plan = {
        "name": "p",
        "inventory": "inv.yaml",
        "links": [
            {
                "name": "p2p",
                "a": {"host": "nas", "interface": "p2p"},
                "b": {"host": "ws", "interface": "eth1"},
                "prefix": "198.18.4.0/24",
                "mtu": 9000,
            }
        ],
        "tests": [{"kind": "iperf3", "server": "nas", "client": "ws", "target": "link:p2p@nas"}],
        **extra,
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def test_link_takes_the_first_slash_30_and_a_test_targets_its_end(tmp_path: Path) -> None:
    plan = load_plan(plan_file(tmp_path))
    link = plan.network.links[0]
    assert (link.prefix, link.a.address, link.b.address) == (
        "198.18.4.0/30",
        "198.18.4.1/30",
        "198.18.4.2/30",
    )
    assert plan.tests[0].target.address == "198.18.4.1"
    assert plan.tests[0].target.label() == "link:p2p@nas"
    assert plan.network.changes("ws") == (NicChange("eth1", 9000, ("198.18.4.2/30",)),)


def test_link_target_on_the_client_side_is_refused_with_its_position(tmp_path: Path) -> None:
    path = plan_file(
        tmp_path,
        tests=[{"kind": "iperf3", "server": "nas", "client": "ws", "target": "link:p2p@ws"}],
    )
    with pytest.raises(InputError, match=r"plan.yaml:\d+:\d+: tests\[0\].target: .*server host"):
        load_plan(path)


@pytest.mark.parametrize("mtu", [575, 9217])
def test_mtu_outside_576_to_9216_is_refused(tmp_path: Path, mtu: int) -> None:
    path = plan_file(tmp_path, interfaces=[{"host": "nas", "interface": "lan", "mtu": mtu}])
    with pytest.raises(InputError, match=r"interfaces\[0\]\.mtu"):
        load_plan(path)


def test_parses_captured_ip_json_of_a_p2p_link_at_mtu_9000() -> None:
    states = parse_state(
        fixture("p2p-mtu9000-addr.json"), fixture("p2p-mtu9000-route.json"), {"eth1": "10000\n"}
    )
    eth1 = states["eth1"]
    assert (eth1.mtu_bytes, eth1.up, eth1.addresses, eth1.speed_mbps) == (
        9000,
        True,
        ("198.18.33.1/30",),
        10000,
    )
    # The kernel's connected route is derived from the address; the static one is kept.
    assert [r.dst for r in eth1.routes] == ["198.18.33.128/25"]
    assert eth1.routes[0].argv("eth1") == [
        "ip", "route", "replace", "198.18.33.128/25", "via", "198.18.33.2", "dev", "eth1",
    ]  # fmt: skip
    before = parse_state(fixture("unaddressed-addr.json"), fixture("unaddressed-route.json"))
    assert differences(before["eth1"], eth1) == [
        "eth1 MTU 9000, was 1500",
        "eth1 has 198.18.33.1/30 more",
        "eth1 routes differ",
    ]


def test_restore_script_undoes_the_change_with_every_value_quoted() -> None:
    before = parse_state(fixture("unaddressed-addr.json"), fixture("unaddressed-route.json"))
    change = NicChange("eth1", 9000, ("198.18.33.1/30",))
    lines = scripts.restore_body(tools.restore_argvs([change], before)).splitlines()
    assert "ip addr del 198.18.33.1/30 dev eth1 || nasplan_failed=1" in lines
    assert "ip link set dev eth1 mtu 1500 || nasplan_failed=1" in lines
    evil = NicChange("eth1; reboot", 9000, ())
    script = scripts.arm_and_apply_script("/tmp/x y", 8, [], tools.apply_argvs([evil], {}), [])
    assert "ip link set dev 'eth1; reboot' mtu 9000 || nasplan_failed=1" in script
    assert "mkdir -m 700 '/tmp/x y'" in script


def test_state_output_sections_parse_back() -> None:
    text = (
        "@@nasplan:armed@@\n123\n\n@@nasplan:addr@@\n"
        + fixture("p2p-mtu9000-addr.json")
        + "\n@@nasplan:route@@\n"
        + fixture("p2p-mtu9000-route.json")
        + "\n@@nasplan:speed:eth1@@\n10000\n"
    )
    assert parse_state_output(text)["eth1"].speed_mbps == 10000


def test_df_ping_and_route_verdicts_from_captured_output() -> None:
    assert checks.ping_passed(fixture("ping-df-8972-ok.txt")) == (True, "2 replies")
    assert checks.ping_passed(fixture("ping-df-8972-peer-mtu1500.txt")) == (False, "no reply")
    assert checks.ping_passed(fixture("ping-df-local-mtu-too-small.txt"))[1] == (
        "refused locally: message too long (local MTU 1500)"
    )
    assert checks.route_leaves_by(fixture("route-get-p2p.txt")) == ("eth1", None)
    assert checks.route_leaves_by("198.18.9.9 via 198.18.32.1 dev eth0 src 198.18.32.10") == (
        "eth0",
        "198.18.32.1",
    )


def test_a_failed_df_ping_names_both_ends_and_the_smaller_mtu(tmp_path: Path) -> None:
    plan = load_plan(plan_file(tmp_path))
    probes = checks.probes(plan.network.links, "nas", {"eth1": 9000})
    output = (
        "@@nasplan:route:p2p:198.18.4.2@@\n198.18.4.2 dev eth1 src 198.18.4.1 uid 0\n"
        "@@nasplan:ping:p2p:198.18.4.2@@\n" + fixture("ping-df-8972-peer-mtu1500.txt")
    )
    ws_state = parse_state(fixture("unaddressed-addr.json"), "[]")
    found = checks.evaluate("nas", probes, output, {"ws": ws_state})
    ping = next(c for c in found if c["check"] == "df-ping")
    assert not ping["ok"]
    assert "from nas eth1 to ws eth1 198.18.4.2 (MTU 1500)" in ping["detail"]
    assert "ws eth1 has the smaller MTU 1500" in ping["detail"]


def test_speed_below_nominal_warns_like_a_10g_port_on_a_1g_link(tmp_path: Path) -> None:
    plan = load_plan(plan_file(tmp_path))
    link = plan.network.links[0]
    slow = parse_state(fixture("unaddressed-addr.json"), "[]", {"eth1": "1000"})
    fast = parse_state(fixture("unaddressed-addr.json"), "[]", {"eth1": "10000"})
    warnings = checks.link_warnings(
        link, {"nas": slow, "ws": fast}, {("nas", "eth1"): 10_000_000_000}
    )
    assert any("nas eth1 negotiated 1000 Mbit/s, below its nominal 10000" in w for w in warnings)
