"""Windows, macOS, FreeBSD and TrueNAS CORE platforms: detection, tools, advice, refusals."""

from __future__ import annotations

import dataclasses

import pytest
from os_facts import freebsd_facts, macos_facts, session_of, windows_output

from nasplan.facts.gather import parse_facts
from nasplan.network.backends import for_platform
from nasplan.platforms import PlatformError, detect
from nasplan.run.network_phase import network_refusals


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


def test_only_windows_refuses_network_changes_macos_freebsd_and_core_make_them() -> None:
    core_facts = freebsd_facts(tools="midclt=/usr/local/bin/midclt\nifconfig=/sbin/ifconfig")
    sessions = {
        "mac": session_of("mac", macos_facts(tools="ifconfig=/sbin/ifconfig")),
        "bsd": session_of("bsd", freebsd_facts(tools="ifconfig=/sbin/ifconfig")),
        "core": session_of("core", core_facts),
        "win": session_of("win", parse_facts(windows_output())),
    }
    (refusal,) = network_refusals(sessions, ["mac", "bsd", "core", "win"])
    assert refusal.startswith("win: ") and "netsh interface ipv4 set subinterface" in refusal
    assert "store=active" in refusal
    backends = {
        name: for_platform(session.platform, session.facts)
        for name, session in sessions.items()
        if name != "win"
    }
    assert {n: (b.mechanism, b.net_tools.kind) for n, b in backends.items()} == {
        "mac": ("detached-timer", "bsd-ifconfig"),
        "bsd": ("detached-timer", "bsd-ifconfig"),
        "core": ("truenas-interface-commit", "bsd-ifconfig"),
    }
    assert backends["core"].net_tools.ifconfig == "/sbin/ifconfig"


def test_apply_check_on_windows_without_iperf3_shows_the_advice_not_an_install() -> None:
    from nasplan.hosts.session import planned_installs

    facts = parse_facts(windows_output(tools="choco=C:\\ProgramData\\chocolatey\\bin\\choco.exe"))
    (line,) = planned_installs(session_of("win11", facts), ["iperf3"])
    assert line.startswith("cannot install iperf3: iperf3.exe not found")
    assert "choco install iperf3 -y" in line


def test_inventory_tools_on_a_posix_host_win_and_their_iperf3_version_is_read() -> None:
    import shutil

    from nasplan.hosts.session import with_inventory_tools
    from nasplan.remote.runner import LocalRunner

    real_iperf3 = shutil.which("iperf3")
    assert real_iperf3 is not None
    facts = macos_facts(tools="iperf3=/opt/homebrew/bin/iperf3")
    updated = with_inventory_tools(LocalRunner(), facts, {"iperf3": real_iperf3})
    assert updated.tool("iperf3") == real_iperf3
    assert updated.iperf3_version is not None and updated.iperf3_version.startswith("3.")


def test_windows_refusal_names_its_adapters_and_both_settings() -> None:
    facts = parse_facts(windows_output())
    reason = detect(facts).network_refusal(facts) or ""
    assert "*JumboPacket" in reason and "mtu=9000 store=active" in reason
    assert "undo with -RegistryValue 1514 and mtu=1500" in reason
    names = [n.name for n in facts.interfaces]
    assert names and all(name in reason for name in names)
    assert "\n" not in reason


def test_windows_refusal_quotes_a_hostile_adapter_name_for_powershell() -> None:
    facts = parse_facts(windows_output())
    hostile = dataclasses.replace(facts.interfaces[0], name="Eth'ernet; $(calc)")
    facts = dataclasses.replace(facts, interfaces=(hostile,))
    reason = detect(facts).network_refusal(facts) or ""
    assert "-Name 'Eth''ernet; $(calc)'" in reason
    assert "subinterface 'Eth''ernet; $(calc)' mtu=9000" in reason
