"""iperf3 as a server on Windows: the PowerShell start/stop scripts and their dispatch.

No Windows host exists here: the scripts are checked for what they hand to PowerShell and to
Win32_Process.Create (quoting through nasplan.remote.shell), and a recording runner shows that a
Windows server gets them while a POSIX one keeps the sh scripts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure.kinds.iperf3 import server_windows as win
from nasplan.measure.kinds.iperf3.repetition import run_repetition
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.remote import shell

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.1.3"


def test_start_script_quotes_every_value_for_powershell_and_the_command_line_for_msvcrt() -> None:
    script = win.server_start_script(
        r"C:\Program Files\iperf3\iperf3.exe", 5201, "a.pid", "it's server.log"
    )
    assert "$iperf3 = 'C:\\Program Files\\iperf3\\iperf3.exe'\n" in script
    assert "$logname = 'it''s server.log'\n" in script
    assert "$logfile = Join-Path $env:TEMP $logname" in script
    assert "CurrentDirectory = $env:TEMP" in script  # the log name is relative to it
    assert "$port = 5201\n" in script
    expected = (
        '"C:\\Program Files\\iperf3\\iperf3.exe" -s -1 -p 5201 -J --logfile "it\'s server.log"'
    )
    assert f"$commandline = '{expected.replace(chr(39), chr(39) * 2)}'" in script
    assert "Invoke-CimMethod -ClassName Win32_Process -MethodName Create" in script
    assert "exit 3" in script  # port in use, as the POSIX script says it


def test_start_script_refuses_a_path_cmd_would_expand() -> None:
    with pytest.raises(shell.ShellQuoteError):
        win.server_start_script(r"C:\%TEMP%\iperf3.exe", 5201, "a.pid", "a.log")


def test_stop_script_stops_only_an_iperf3_and_prints_the_log() -> None:
    script = win.server_stop_script("a.pid", "a.log", grace_s=0.5)
    assert "$grace = 0.5\n" in script
    assert "ProcessName -eq 'iperf3'" in script
    assert "Get-Content -LiteralPath $logfile -Raw" in script


def test_a_windows_server_gets_the_powershell_scripts_and_a_linux_client_runs_3_1_3(
    fake_runner: Callable[[str], Any],
) -> None:
    server = fake_runner("win11")
    server.use_shell(shell.windows(None))
    server.expect("Win32_Process").expect("Stop-Process")
    client = fake_runner("nas").expect(
        "/usr/bin/iperf3 -J -c 198.19.16.10", (FIXTURE / "tcp-single.json").read_text()
    )
    _raw, parsed = run_repetition(
        server,
        client,
        r"C:\iperf3\iperf3.exe",
        "/usr/bin/iperf3",
        "198.19.16.10",
        Iperf3Params(duration_s=2),
        "tok",
    )
    assert parsed["iperf3_version"] == "3.1.3"
    start, _stop = server.texts()
    assert "$pidname = 'nasplan-iperf3-tok-0-win11-5201.pid'" in start


def test_no_shell_text_rides_along_in_powershell() -> None:
    # the POSIX scripts carry the host's sampler (sh); a Windows host never gets one
    with pytest.raises(ValueError, match="PowerShell"):
        win.server_start_script("iperf3.exe", 5201, "s.pid", "s.log", also="echo x")
    with pytest.raises(ValueError, match="PowerShell"):
        win.server_stop_script("s.pid", "s.log", also="echo x")
    assert "Win32_Process" in win.server_start_script("iperf3.exe", 5201, "s.pid", "s.log")
