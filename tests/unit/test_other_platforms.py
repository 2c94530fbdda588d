"""macOS, FreeBSD / TrueNAS CORE and Windows: facts parsed from real recorded output, detection,
tool advice, network-change refusals, and the switch to PowerShell when a host refuses ``sh``.

The ``@@nasplan:...@@`` headers and the ``tools`` lines are the facts scripts' own framing; the
content under each header is real output (tests/fixtures/facts/README.md names every source).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan import shell
from nasplan.facts import HostFacts, gather, parse_facts
from nasplan.facts_windows import facts_script, parse_format_list
from nasplan.hosts import HostSession
from nasplan.inventory import Host
from nasplan.network.phase import network_refusals
from nasplan.platforms import PlatformError, detect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "facts"


def real(name: str) -> str:
    return (FIXTURES / name).read_text()


def framed(sections: dict[str, str]) -> str:
    return "".join(f"\n@@nasplan:{name}@@\n{body}" for name, body in sections.items())


def macos_facts(ifconfig: str = "bsd/osx-10.14.6_ifconfig.out", tools: str = "") -> HostFacts:
    uname = real("bsd/osx-10.14.6_uname-a.out").split()
    return parse_facts(
        framed(
            {
                "hostname": uname[1],
                "uname-s": uname[0],
                "sysctl": real("bsd/osx-10.14.6_sysctl-names.out"),
                "tools": tools,
                "ifconfig": real(ifconfig),
            }
        )
    )


def freebsd_facts(tools: str = "") -> HostFacts:
    uname = real("bsd/freebsd12_uname-a.out").split()
    ifconfig = real("bsd/freebsd12_ifconfig-extra-fields2.out") + real(
        "bsd/freebsd12_ifconfig-extra-fields4.out"
    )
    return parse_facts(
        framed(
            {
                "hostname": uname[1],
                "uname-s": uname[0],
                "sysctl": real("bsd/freebsd12_sysctl-names.out"),
                "tools": tools,
                "ifconfig": ifconfig,
            }
        )
    )


def windows_output(default_shell: str = "", tools: str = "") -> str:
    return framed(
        {
            "uname-s": "Windows",
            "hostname": "DESKTOP-WIN01",
            "default-shell": default_shell,
            "win-os": real("windows/win32-operatingsystem-build-psdocs.txt"),
            "win-netadapter": real("windows/get-netadapter-fl-salt-56275.txt"),
            "win-ipaddress": real("windows/find-netroute-ipaddress-salt-test.txt"),
            "tools": tools,
        }
    )


# --- macOS -----------------------------------------------------------------------------------


def test_macos_facts_come_from_sysctl_and_ifconfig() -> None:
    facts = macos_facts()
    assert facts.kernel_name == "Darwin"
    assert facts.os_pretty == "macOS 10.14.6"
    assert facts.cpu_model == "Intel(R) Core(TM) i5-8279U CPU @ 2.40GHz"
    assert facts.cpu_cores == 8
    assert facts.memory_bytes == 17179869184
    en0 = facts.interface("en0")
    assert en0 is not None
    assert en0.mtu_bytes == 1500
    assert en0.mac == "f0:18:98:03:d9:30"
    assert en0.state == "up"
    assert "192.168.1.72/24" in en0.addresses  # netmask 0xffffff00
    assert facts.interface_for_address("192.168.1.72") == en0
    assert facts.interface("lo0") is not None and facts.interface("lo0").mtu_bytes == 16384  # type: ignore[union-attr]


def test_macos_media_line_gives_link_speed_and_duplex() -> None:
    en5 = macos_facts("bsd/osx-10.14.6_ifconfig2.out").interface("en5")
    assert en5 is not None
    assert (en5.speed_mbps, en5.duplex) == (100, "full")  # autoselect (100baseTX <full-duplex>)
    inactive = macos_facts("bsd/osx-10.14.6_ifconfig2.out").interface("ap1")
    assert inactive is not None and inactive.state == "down"


def test_macos_is_detected_and_iperf3_comes_from_homebrew() -> None:
    facts = macos_facts(tools="iperf3=/opt/homebrew/bin/iperf3\nbrew=/opt/homebrew/bin/brew")
    platform = detect(facts)
    assert platform.name == "macos"
    assert platform.os_name(facts) == "macOS 10.14.6"
    assert platform.tool_path(facts, "iperf3") == "/opt/homebrew/bin/iperf3"
    assert platform.install_commands(facts, ["iperf3"]) == []


def test_macos_without_iperf3_installs_with_brew_as_the_login_user() -> None:
    facts = macos_facts(tools="brew=/usr/local/bin/brew")
    (command,) = detect(facts).install_commands(facts, ["iperf3"])
    assert "/usr/local/bin/brew install iperf3" in command.script
    assert "printf '%s\\n' /usr/local/bin/iperf3" in command.script
    assert command.sudo is False  # Homebrew refuses root


def test_macos_without_homebrew_says_how_to_get_it() -> None:
    facts = macos_facts()
    with pytest.raises(PlatformError, match=r"Homebrew is not installed .*brew\.sh"):
        detect(facts).install_commands(facts, ["iperf3"])


# --- FreeBSD / TrueNAS CORE --------------------------------------------------------------------


def test_freebsd_facts_name_nic_driver_speed_and_jumbo_mtu() -> None:
    facts = freebsd_facts()
    assert (facts.kernel_name, facts.os_pretty) == ("FreeBSD", "FreeBSD 12.1-RELEASE")
    assert (facts.cpu_cores, facts.memory_bytes) == (1, 2107092992)
    ix0 = facts.interface("ix0")
    assert ix0 is not None
    assert (ix0.mtu_bytes, ix0.speed_mbps, ix0.duplex, ix0.driver) == (9000, 10000, "full", "ix")
    assert ix0.addresses == ("10.10.2.101/24",)  # FreeBSD 13 style inet A/24
    mce0 = facts.interface("mce0")
    assert mce0 is not None
    assert mce0.speed_mbps == 100000  # 100GBase-SR4, no "autoselect (...)"
    assert "23.246.26.130/25" in mce0.addresses  # netmask 0xffffff80
    assert "2a00:86c0:1026:1026::130/64" in mce0.addresses


def test_plain_freebsd_installs_with_pkg() -> None:
    facts = freebsd_facts(tools="pkg=/usr/sbin/pkg")
    platform = detect(facts)
    assert platform.name == "freebsd"
    (command,) = platform.install_commands(facts, ["iperf3"])
    assert "pkg install -y iperf3" in command.script and command.sudo


def test_truenas_core_is_recognised_and_never_gets_pkg_install() -> None:
    facts = freebsd_facts(tools="midclt=/usr/local/bin/midclt\npkg=/usr/sbin/pkg")
    platform = detect(facts)
    assert platform.name == "truenas-core"  # not SCALE, though midclt is there too
    assert platform.os_name(facts) == "TrueNAS CORE (FreeBSD 12.1-RELEASE)"
    with pytest.raises(PlatformError, match="never runs pkg on the appliance"):
        platform.install_commands(facts, ["iperf3"])


def test_network_changes_are_refused_with_what_to_do_on_each_platform() -> None:
    sessions = {
        "mac": _session("mac", macos_facts()),
        "core": _session("core", freebsd_facts(tools="midclt=/usr/local/bin/midclt")),
        "win": _session("win", parse_facts(windows_output())),
    }
    refusals = network_refusals(sessions, ["mac", "core", "win"])
    assert len(refusals) == 3
    assert refusals[0].startswith("mac: ") and "networksetup -setMTU" in refusals[0]
    assert refusals[1].startswith("core: ") and "Network > Interfaces" in refusals[1]
    assert "netsh interface ipv4 set subinterface" in refusals[2]
    assert "store=active" in refusals[2]


def _session(name: str, facts: HostFacts) -> HostSession:
    return HostSession(Host(name=name, address=name), facts=facts, platform=detect(facts))


# --- Windows -----------------------------------------------------------------------------------


def test_format_list_records_are_split_on_blank_lines() -> None:
    (record,) = parse_format_list(
        real("windows/find-netroute-ipaddress-salt-test.txt").splitlines()
    )
    assert record["IPAddress"] == "10.0.0.15"
    assert record["PrefixLength"] == "24"
    assert record["InterfaceAlias"] == "Wi-Fi"
    (adapter,) = parse_format_list(real("windows/get-netadapter-fl-salt-56275.txt").splitlines())
    assert adapter["DriverInformation"] == "Driver Date 2019-09-27 Version 9.24.2.601 NDIS 6.30"


def test_windows_facts_from_get_netadapter_and_cim() -> None:
    facts = parse_facts(windows_output(tools="iperf3=C:\\iperf3\\iperf3.exe\nwinget="))
    assert facts.kernel_name == "Windows"
    assert facts.kernel == "18362"
    (nic,) = facts.interfaces
    assert nic.name == "Local Area Connection"
    assert nic.state == "down"  # Status: Disconnected
    assert nic.mac == "00:ff:11:a1:11:c7"
    assert nic.speed_mbps == 1000  # LinkSpeed: 1 Gbps
    assert nic.driver == "tap0901.sys"
    assert nic.addresses == ()  # the Wi-Fi address belongs to another adapter
    assert facts.tool("iperf3") == "C:\\iperf3\\iperf3.exe"
    assert facts.tool("winget") is None
    platform = detect(facts)
    assert platform.name == "windows"
    assert platform.os_name(facts) == "Windows (build 18362)"


@pytest.mark.parametrize(
    ("tools", "advice"),
    [
        (
            "winget=C:\\Users\\me\\AppData\\Local\\Microsoft\\WindowsApps\\winget.exe",
            "winget install --id ar51an.iPerf3 -e",
        ),
        ("choco=C:\\ProgramData\\chocolatey\\bin\\choco.exe", "choco install iperf3 -y"),
        ("", "https://iperf.fr/iperf-download.php"),
    ],
)
def test_windows_without_iperf3_says_how_to_get_it_on_that_host(tools: str, advice: str) -> None:
    facts = parse_facts(windows_output(tools=tools))
    with pytest.raises(PlatformError) as info:
        detect(facts).install_commands(facts, ["iperf3"])
    assert advice in str(info.value)
    assert "tools: {iperf3:" in str(info.value)


def test_windows_facts_script_tries_the_inventory_path_quoted_for_powershell() -> None:
    script = facts_script({"iperf3": "C:\\Tools\\it's iperf\\iperf3.exe"})
    assert "'iperf3' = @('C:\\Tools\\it''s iperf\\iperf3.exe')" in script
    assert "@CANDIDATES@" not in script
    # the whole script fits in one Windows command line once encoded
    assert len(shell.windows(None).exec_line(script)) <= shell.CMD_LINE_LIMIT


CMD_REFUSES_SH = "'sh' is not recognized as an internal or external command,"


@pytest.mark.parametrize(
    ("default_shell", "login"),
    [("", "cmd"), ("C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "powershell")],
)
def test_a_host_refusing_sh_gets_the_powershell_facts_and_keeps_speaking_powershell(
    fake_runner: Callable[[str], Any], default_shell: str, login: str
) -> None:
    runner = fake_runner("win11")
    runner.expect("nasplan_section", stderr=CMD_REFUSES_SH, exited=1)
    runner.expect("Get-NetAdapter", windows_output(default_shell=default_shell))
    facts = gather(runner)
    assert facts.kernel_name == "Windows"
    assert runner.host_shell.login.name == login
    assert runner.host_shell.is_windows


def test_inventory_platform_windows_skips_the_posix_round_trip(
    fake_runner: Callable[[str], Any],
) -> None:
    runner = fake_runner("win11").expect("D:\\bin\\iperf3.exe", windows_output())
    gather(runner, windows=True, tool_paths={"iperf3": "D:\\bin\\iperf3.exe"})
    [call] = runner.calls
    assert "Get-NetAdapter" in call.text and runner.host_shell.is_windows


def test_an_sh_from_git_for_windows_does_not_hide_a_windows_host(
    fake_runner: Callable[[str], Any],
) -> None:
    runner = fake_runner("win11")
    runner.expect("nasplan_section", "\n@@nasplan:uname-s@@\nMINGW64_NT-10.0-19045\n")
    runner.expect("Get-NetAdapter", windows_output())
    assert gather(runner).kernel_name == "Windows"


# --- the example plan and the inventory ------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def test_the_windows_and_mac_example_plan_validates_with_its_inventory() -> None:
    from nasplan.plan import load_plan

    plan = load_plan(ROOT / "plans/examples/qnap-windows-mac.yaml")
    clients = {(t.client, t.target.label(), t.settings.get("parallel", 1)) for t in plan.tests}
    assert len(plan.tests) == 10
    assert ("win11", "qnap.tengig", 2) in clients and ("macmini", "qnap.lan", 1) in clients
    win11 = plan.inventory.hosts["win11"]
    assert win11.platform_hint == "windows"
    assert win11.tools == {"iperf3": "C:\\iperf3\\iperf3.exe"}
    assert win11.interfaces["tengig"].name == "Ethernet 2"


def test_apply_check_on_windows_without_iperf3_shows_the_advice_not_an_install() -> None:
    from nasplan.hosts import planned_installs

    facts = parse_facts(windows_output(tools="choco=C:\\ProgramData\\chocolatey\\bin\\choco.exe"))
    (line,) = planned_installs(_session("win11", facts), ["iperf3"])
    assert line.startswith("cannot install: iperf3.exe not found")
    assert "choco install iperf3 -y" in line


def test_an_unknown_tool_in_the_inventory_is_a_located_error(tmp_path: Path) -> None:
    from nasplan.errors import InputError
    from nasplan.inventory import load_inventory

    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n  pc:\n    platform: windows\n    tools: {iperf2: 'C:\\x.exe'}\n")
    with pytest.raises(InputError) as info:
        load_inventory(path)
    assert f"{path}:4:" in "\n".join(info.value.messages)
    assert "hosts.pc.tools" in "\n".join(info.value.messages)


def test_windows_needs_no_smbclient_for_an_smb_transfer() -> None:
    facts = parse_facts(windows_output())
    platform = detect(facts)
    assert platform.install_commands(facts, ["smbclient"]) == []
    assert (platform.tool_path(facts, "smbclient") or "").startswith("builtin: Windows SMB")


def test_a_disk_test_on_windows_asks_for_diskspd_where_linux_asks_for_fio() -> None:
    with_winget = "winget=C:\\Users\\me\\AppData\\Local\\Microsoft\\WindowsApps\\winget.exe"
    facts = parse_facts(windows_output(tools=with_winget))
    platform = detect(facts)
    with pytest.raises(PlatformError, match=r"diskspd\.exe not found.*Microsoft\.DiskSpd"):
        platform.install_commands(facts, ["fio"])
    found = parse_facts(windows_output(tools="diskspd=C:\\Tools\\diskspd.exe"))
    assert platform.tool_path(found, "fio") == "C:\\Tools\\diskspd.exe"


def test_inventory_tools_on_a_posix_host_win_and_their_iperf3_version_is_read() -> None:
    import shutil

    from nasplan.hosts import with_inventory_tools
    from nasplan.runner import LocalRunner

    real_iperf3 = shutil.which("iperf3")
    assert real_iperf3 is not None
    facts = macos_facts(tools="iperf3=/opt/homebrew/bin/iperf3")
    updated = with_inventory_tools(LocalRunner(), facts, {"iperf3": real_iperf3})
    assert updated.tool("iperf3") == real_iperf3
    assert updated.iperf3_version is not None and updated.iperf3_version.startswith("3.")
