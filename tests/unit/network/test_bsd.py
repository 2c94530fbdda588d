"""FreeBSD / TrueNAS CORE / macOS NICs: parsers on real recorded output (fixtures/nettools/bsd,
fixtures/facts/bsd), the ifconfig commands with hostile values, the route and DF-ping checks."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest
from os_facts import freebsd_facts, macos_facts

from nasplan.hosts.session import HostSession
from nasplan.input.network import NicChange
from nasplan.input.plan import load_plan
from nasplan.network import bsd, checks, scripts, tools
from nasplan.network.backends import DetachedTimer, by_mechanism, for_platform
from nasplan.network.state import NicState, Route
from nasplan.network.tools import BSD_IFCONFIG, NetTools
from nasplan.network.truenas import TrueNasCommit
from nasplan.platforms import detect
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Result, RunnerBase
from nasplan.run.network_phase import NetworkPhase

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BSD_TOOLS = NetTools(BSD_IFCONFIG, "ip", "/sbin/ifconfig", "/sbin/route", "/usr/bin/netstat")


def text(name: str) -> str:
    return (FIXTURES / "nettools" / "bsd" / name).read_text()


def facts_text(name: str) -> str:
    return (FIXTURES / "facts" / "bsd" / name).read_text()


def test_freebsd_ifconfig_and_netstat_give_mtu_flags_addresses_speed_and_routes() -> None:
    states = bsd.parse_state(
        text("ohai_freebsd-ifconfig-a.txt"), text("jc_freebsd12_netstat-r.out")
    )
    vtnet0 = states["vtnet0"]
    assert (vtnet0.mtu_bytes, vtnet0.up, vtnet0.speed_mbps) == (1500, True, 10000)
    # fe80:: (link-local) is left out, as iproute2's scope link is on Linux.
    assert vtnet0.addresses == ("140.211.10.91/26", "2605:bc80:3010:506:f816:3eff:feba:3e25/64")
    assert states["lo0"].addresses == ("127.0.0.1/8", "::1/128")
    assert states["lo0"].mtu_bytes == 16384
    # That netstat was taken on another VM: its em0 is not in this ifconfig, so no state.
    assert "em0" not in states
    jumbo = bsd.parse_state(facts_text("freebsd12_ifconfig-extra-fields2.out"), "")["ix0"]
    assert jumbo == NicState("ix0", 9000, True, ("10.10.2.101/24",), (), 10000)


def test_macos_ifconfig_reads_en0_and_leaves_link_local_out() -> None:
    links, speeds = bsd.parse_ifconfig(facts_text("osx-10.14.6_ifconfig.out"))
    assert links["en0"] == (
        1500,
        True,
        (
            "192.168.1.72/24",
            "2600:1700:bab0:d40:bb:9ad:34c5:2e9a/64",
            "2600:1700:bab0:d40:4573:9380:5ecb:ef52/64",
            "2600:1700:bab0:d40::24/64",
        ),
    )
    assert links["gif0"] == (1280, False, ())  # flags=8010<POINTOPOINT,MULTICAST>: not UP
    assert links["en5"][2] == ()  # only a link-local address
    _, second_speeds = bsd.parse_ifconfig(facts_text("osx-10.14.6_ifconfig2.out"))
    assert second_speeds["en5"] == "100"  # media: autoselect (100baseTX <full-duplex>)
    assert "en0" not in speeds  # media: autoselect, no active speed named


def test_netstat_keeps_gateway_routes_and_leaves_connected_and_arp_entries_out() -> None:
    assert bsd.parse_routes(text("jc_osx-10.14.6_netstat-rnl.out")) == [
        ("en0", Route("default", "192.168.1.254"))
    ]
    assert bsd.parse_routes(text("jc_freebsd12_netstat-r.out")) == [
        ("em0", Route("default", "192.168.71.2"))
    ]


@pytest.mark.parametrize(
    ("shown", "host", "network"),
    [  # destinations as the recorded macOS and FreeBSD tables print them
        ("127", False, "127.0.0.0/8"),
        ("169.254", False, "169.254.0.0/16"),
        ("192.168.1", False, "192.168.1.0/24"),
        ("224.0.0/4", False, "224.0.0.0/4"),
        ("192.168.1.221/32", False, "192.168.1.221/32"),
        ("192.168.71.0/24", False, "192.168.71.0/24"),
        ("192.168.71.163", True, "192.168.71.163/32"),
        ("default", False, "default"),
        ("localhost", True, None),
        ("fe80::%lo0/64", False, None),
    ],
)
def test_netstat_destinations_become_networks(shown: str, host: bool, network: str | None) -> None:
    assert bsd.destination(shown, host) == network


def test_route_get_names_the_interface_and_the_gateway() -> None:
    freebsd = text("ohai_freebsd-route-n-get-default.txt")
    macos = text("go-sockaddr_macos-10.12-route-n-get-default.txt")
    assert bsd.route_get(freebsd) == ("vtnet0", "140.211.10.65")
    assert checks.route_leaves_by(macos) == ("en0", "10.23.9.1")


def test_bsd_df_ping_verdicts_from_recorded_output() -> None:
    assert checks.ping_passed(text("plantegg_macos-ping-D-s1400-ok.txt")) == (True, "1 replies")
    assert checks.ping_passed(text("plantegg_macos-ping-D-s1500-too-long.txt")) == (
        False,
        "refused locally: message too long (larger than this NIC's MTU)",
    )
    assert checks.ping_passed(text("jc_osx-10.14.6_ping-ip-unreachable.out")) == (False, "no reply")
    assert checks.ping_passed(text("jc_freebsd12_ping-ip-s.out")) == (True, "3 replies")
    assert checks.ping_passed(text("jc_osx-10.14.6_ping-ip-s.out")) == (True, "3 replies")


def test_ifconfig_adds_aliases_with_a_hex_netmask_and_takes_exactly_those_off() -> None:
    change = NicChange("ix0", 9000, ("198.19.16.1/30", "fd00:19::1/64", "10.10.2.101/24"))
    before = {"ix0": NicState("ix0", 1500, False, ("10.10.2.101/24",))}
    assert tools.apply_argvs([change], before, BSD_TOOLS) == [
        ["/sbin/ifconfig", "ix0", "mtu", "9000"],
        ["/sbin/ifconfig", "ix0", "up"],
        ["/sbin/ifconfig", "ix0", "inet", "198.19.16.1", "netmask", "0xfffffffc", "alias"],
        ["/sbin/ifconfig", "ix0", "inet6", "fd00:19::1", "prefixlen", "64", "alias"],
    ]  # the address it already had is left alone
    assert tools.restore_argvs([change], before, BSD_TOOLS) == [
        ["/sbin/ifconfig", "ix0", "inet", "198.19.16.1", "-alias"],
        ["/sbin/ifconfig", "ix0", "inet6", "fd00:19::1", "-alias"],
        ["/sbin/ifconfig", "ix0", "mtu", "1500"],
        ["/sbin/ifconfig", "ix0", "down"],
    ]


def test_hostile_nic_names_and_tool_paths_stay_single_words() -> None:
    evil = NetTools(BSD_IFCONFIG, "ip", "/opt/my ifconfig;$(reboot)", "/sbin/route", "net'stat")
    change = NicChange("en0'; reboot #", 9000, ("198.19.16.5/30",))
    before = {change.nic: NicState(change.nic, 1500, True, ())}
    body = scripts.restore_body(tools.restore_argvs([change], before, evil))
    first = body.splitlines()[1].removesuffix(" || nasplan_failed=1")
    assert shlex.split(first) == [evil.ifconfig, change.nic, "inet", "198.19.16.5", "-alias"]
    state = tools.state_script([change.nic], evil)
    assert "'/opt/my ifconfig;$(reboot)' -a" in state
    assert "'net'\"'\"'stat' -rn -f inet" in state
    probe = checks.Probe("p", change.nic, "nas", "ix0", "198.19.16.6", 9000)
    verify = checks.verify_script([probe], [change.nic], evil)
    assert "/sbin/route -n get 198.19.16.6 2>&1" in verify
    assert "ping -D -s 8972 -c 2 -t 3 198.19.16.6 2>&1" in verify
    assert "-M do" not in verify and " -i " not in verify


def test_state_script_sections_parse_back_to_the_recorded_state() -> None:
    script = tools.state_script(["vtnet0"], BSD_TOOLS)
    assert "/sbin/ifconfig -a" in script and "/usr/bin/netstat -rn -f inet" in script
    assert "/sys/class/net" not in script  # no sysfs: the media line has the speed
    output = (
        "@@nasplan:bsd-ifconfig@@\n"
        + text("ohai_freebsd-ifconfig-a.txt")
        + "\n@@nasplan:bsd-netstat@@\n"
        + text("jc_freebsd12_netstat-r.out")
    )
    assert tools.parse_state_output(output) == bsd.parse_state(
        text("ohai_freebsd-ifconfig-a.txt"), text("jc_freebsd12_netstat-r.out")
    )


def test_a_check_through_a_gateway_fails_and_says_which_way_the_peer_is_reached() -> None:
    probe = checks.Probe("p2p", "vtnet0", "nas", "ix0", "0.0.0.0", 1500)
    output = (
        f"@@nasplan:route:{probe.label}@@\n" + text("ohai_freebsd-route-n-get-default.txt")
        + f"@@nasplan:ping:{probe.label}@@\n" + text("jc_freebsd12_ping-ip-s.out")
    )  # fmt: skip
    route, ping = checks.evaluate("core", [probe], output, {})
    assert not route["ok"]
    assert route["detail"] == (
        "0.0.0.0 leaves by vtnet0 via 140.211.10.65, expected directly by vtnet0"
    )
    assert ping["ok"] and ping["detail"].endswith("3 replies")


def test_macos_and_freebsd_hosts_get_the_detached_timer_with_bsd_ifconfig_from_facts() -> None:
    mac = macos_facts(tools="ifconfig=/sbin/ifconfig\nroute=/sbin/route\nnetstat=/usr/sbin/netstat")
    backend = for_platform(detect(mac), mac)
    assert isinstance(backend, DetachedTimer) and backend.mechanism == "detached-timer"
    assert backend.net_tools == NetTools(
        BSD_IFCONFIG, "ip", "/sbin/ifconfig", "/sbin/route", "/usr/sbin/netstat"
    )
    assert backend.net_tools.ping_needs_root
    bare = freebsd_facts()  # no ifconfig found: nothing nasplan could read or change
    assert tools.from_facts(bare) is None
    # A snapshot file written today restores with the same backend and tools.
    again = by_mechanism(backend.mechanism, NetTools.from_dict(backend.net_tools.to_dict()))
    assert again == backend
    before = {"en0": NicState("en0", 1500, True, ())}
    script = backend.arm_and_apply_script("/tmp/r", 30, [NicChange("en0", 9000, ())], before)
    assert "$nasplan_detach sh -c" in script and "setsid sh -c" not in script
    assert "/sbin/ifconfig en0 mtu 9000 || nasplan_failed=1" in script


def test_truenas_core_commits_through_the_middleware_and_reads_back_with_bsd_ifconfig() -> None:
    core = freebsd_facts(tools="midclt=/usr/local/bin/midclt\nifconfig=/sbin/ifconfig")
    backend = for_platform(detect(core), core)
    assert isinstance(backend, TrueNasCommit)
    assert backend.net_tools.kind == BSD_IFCONFIG
    change = NicChange("ix0", 9000, ("198.19.16.9/30",))
    before = {"ix0": NicState("ix0", 1500, True, ("10.10.2.101/24",))}
    script = backend.arm_and_apply_script("/tmp/r", 30, [change], before)
    assert 'PATH="$PATH:/usr/local/bin"' in script  # where CORE keeps midclt
    assert "/sbin/ifconfig -a" in script and " -j " not in script
    # First the snapshot's update (the lease-restore script it writes), then the change's.
    restore_update, update = [
        x for x in script.splitlines() if x.startswith("midclt call interface.update")
    ]
    assert json.loads(shlex.split(restore_update)[4])["mtu"] == 1500
    assert json.loads(shlex.split(update)[4]) == {
        "mtu": 9000,
        "aliases": [
            {"type": "INET", "address": "10.10.2.101", "netmask": 24},
            {"type": "INET", "address": "198.19.16.9", "netmask": 30},
        ],
    }
    confirm = backend.confirm_script("/tmp/r")
    assert "$nasplan_detach sh -c" in confirm and "setsid sh" not in confirm
    restore = backend.restore_script("/tmp/r", [change], before, force=False)
    assert "/sbin/ifconfig -a" in restore


class RecordedBsdHost(RunnerBase):
    """A FreeBSD host that answers with recorded output and notes how each script was run."""

    name = "bsd"

    def __init__(self) -> None:
        self.scripts: list[tuple[str, bool]] = []

    def run(self, argv: list[str], **_: object) -> Result:
        return Result(shlex.join(argv), "", "", 0)

    def run_script(self, script: str, *, sudo: bool = False, **_: object) -> Result:
        self.scripts.append((script, sudo))
        probe = "@@nasplan:route:p2p:198.19.16.2@@\n"
        out = (
            f"{probe}{text('ohai_freebsd-route-n-get-default.txt')}"
            f"@@nasplan:ping:p2p:198.19.16.2@@\n{text('plantegg_macos-ping-D-s1500-too-long.txt')}"
        )
        return Result("sh", out, "", 0)


def test_the_verify_step_runs_bsd_route_and_ping_as_root_and_reports_what_they_said(
    tmp_path: Path,
) -> None:
    (tmp_path / "inv.yaml").write_text(
        "hosts:\n  core: {address: 198.19.16.10}\n  bsd: {address: 198.19.16.11}\n"
    )
    (tmp_path / "plan.yaml").write_text(
        "name: p\ninventory: inv.yaml\n"
        "links: [{name: p2p, a: {host: core, interface: vtnet0}, b: {host: bsd, interface: ix0},"
        " prefix: 198.19.16.0/30, mtu: 1500}]\n"
        "tests: [{kind: iperf3, server: core, client: bsd, target: link:p2p@core}]\n"
    )
    plan = load_plan(tmp_path / "plan.yaml")
    core = freebsd_facts(tools="ifconfig=/sbin/ifconfig\nroute=/sbin/route")
    hosts = {name: RecordedBsdHost() for name in ("core", "bsd")}
    sessions = {
        name: HostSession(plan.inventory.hosts[name], hosts[name], core, detect(core))
        for name in hosts
    }
    phase = NetworkPhase(
        plan.network, sessions, tmp_path, PlainProgress(io.StringIO()), lambda h: hosts[h.name]
    )
    for name, record in phase.hosts.items():
        record.backend = for_platform(sessions[name].platform, core)
    phase.verify()
    (script, sudo), *_ = hosts["bsd"].scripts
    assert sudo and "ping -D -s 1472 -c 2 -t 3 198.19.16.1" in script
    route = next(c for c in phase.checks if c["host"] == "core" and c["check"] == "route")
    assert route["detail"].startswith("198.19.16.2 leaves by vtnet0 via 140.211.10.65")
    ping = next(c for c in phase.checks if c["host"] == "core" and c["check"] == "df-ping")
    assert not ping["ok"] and "refused locally: message too long" in ping["detail"]
