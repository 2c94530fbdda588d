"""Windows facts: Format-List parsing on real recorded output, the PowerShell script, and the
switch to PowerShell when a host refuses ``sh``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from os_facts import real, windows_output

from nasplan.facts.gather import gather, parse_facts
from nasplan.facts.windows import facts_script, parse_format_list
from nasplan.platforms import detect
from nasplan.remote import shell


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
