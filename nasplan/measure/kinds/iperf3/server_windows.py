"""iperf3 server on Windows: PowerShell starting a one-off ``iperf3.exe -s -1``, and stopping it.

Windows OpenSSH ends every process of a session when its channel closes, so the server is
created through WMI (``Win32_Process.Create``), outside the session, and found again by PID.
Exit codes and output match the POSIX scripts (``iperf3_server``): 0 listening, 3 port in use.
"""

from __future__ import annotations

import re

from nasplan.measure.kinds.iperf3.server import PORT_IN_USE_EXIT, SERVER_READY_TIMEOUT_S
from nasplan.remote.shell import Cmd, PowerShell

_START = """\
$ErrorActionPreference = 'Stop'
$pidfile = Join-Path $env:TEMP $pidname
$logfile = Join-Path $env:TEMP $logname
if (Get-NetTCPConnection -LocalPort $port -State Listen -ErrorAction SilentlyContinue) {
  [Console]::Error.WriteLine("nasplan: iperf3 port $port is already in use on $env:COMPUTERNAME")
  exit @PORT_IN_USE@
}
Remove-Item -LiteralPath $pidfile, $logfile -ErrorAction SilentlyContinue
# The server's working directory is %TEMP%: its --logfile is given there, by name.
$created = Invoke-CimMethod -ClassName Win32_Process -MethodName Create -Arguments @{
  CommandLine = $commandline; CurrentDirectory = $env:TEMP }
if ($created.ReturnValue -ne 0) {
  $code = $created.ReturnValue
  [Console]::Error.WriteLine("nasplan: starting $iperf3 failed (Win32_Process.Create: $code)")
  exit 1
}
Set-Content -LiteralPath $pidfile -Value $created.ProcessId
$deadline = (Get-Date).AddSeconds($limit)
while ((Get-Date) -lt $deadline) {
  if (Get-NetTCPConnection -LocalPort $port -State Listen -ErrorAction SilentlyContinue) { exit 0 }
  Start-Sleep -Milliseconds 100
}
[Console]::Error.WriteLine("nasplan: iperf3 server did not listen on port $port within $limit s")
Stop-Process -Id $created.ProcessId -Force -ErrorAction SilentlyContinue
Remove-Item -LiteralPath $pidfile, $logfile -ErrorAction SilentlyContinue
exit 1
"""

# Only an iperf3 process is stopped (the PID may have been reused).
_STOP = """\
$ErrorActionPreference = 'SilentlyContinue'
$pidfile = Join-Path $env:TEMP $pidname
$logfile = Join-Path $env:TEMP $logname
$id = Get-Content -LiteralPath $pidfile -TotalCount 1
$process = if ($id -match '^[0-9]+$') { Get-Process -Id $id } else { $null }
if ($process -and $process.ProcessName -eq 'iperf3') {
  if (-not $process.WaitForExit([int]($grace * 1000))) { Stop-Process -Id $id -Force }
}
Get-Content -LiteralPath $logfile -Raw
Remove-Item -LiteralPath $pidfile, $logfile
exit 0
"""


def _assignments(values: dict[str, str | int | float]) -> str:
    quote = PowerShell().quote
    return "".join(
        f"${name} = {value}\n" if not isinstance(value, str) else f"${name} = {quote(value)}\n"
        for name, value in values.items()
    )


def server_start_script(
    iperf3_path: str,
    port: int,
    pidfile: str,
    logfile: str,
    *,
    ready_timeout_s: int = SERVER_READY_TIMEOUT_S,
    also: str = "",
) -> str:
    """PowerShell that starts a one-off JSON-logging server and waits until the port listens.

    ``also``: as the POSIX script's; nothing rides along in PowerShell, so it must be empty.

    ``pidfile``/``logfile`` are file names in the SSH user's %TEMP% (``temp_paths``). The command
    line handed to Win32_Process.Create is quoted with cmd/MSVCRT rules (``Cmd``), which refuse
    what they cannot carry rather than pass it half-quoted.
    """
    _nothing_rides(also)
    argv = server_argv(iperf3_path, port, pidfile, logfile)
    values: dict[str, str | int | float] = {
        "iperf3": iperf3_path,
        "port": port,
        "pidname": pidfile,
        "logname": logfile,
        "limit": ready_timeout_s,
        "commandline": Cmd().join(argv),
    }
    return _assignments(values) + _START.replace("@PORT_IN_USE@", str(PORT_IN_USE_EXIT))


def server_argv(iperf3_path: str, port: int, pidfile: str, logfile: str) -> list[str]:
    """The one-off server as ``server_start_script`` starts it (its log a name in %TEMP%; the
    script writes the PID Win32_Process.Create gives to ``pidfile``)."""
    return [iperf3_path, "-s", "-1", "-p", str(port), "-J", "--logfile", logfile]


def server_stop_script(pidfile: str, logfile: str, *, grace_s: float = 2.0, also: str = "") -> str:
    """PowerShell that stops the ``pidfile`` server if still alive, prints its log, removes both
    (``also``: must be empty, as for the start)."""
    _nothing_rides(also)
    values: dict[str, str | int | float] = {"pidname": pidfile, "logname": logfile}
    return _assignments({**values, "grace": grace_s}) + _STOP


def _nothing_rides(also: str) -> None:
    if also:  # the text riding in the POSIX scripts (nasplan.measure.sampling) is sh
        raise ValueError("no shell text rides along in a PowerShell iperf3 server script")


def temp_paths(token: str, port: int) -> tuple[str, str]:
    """The server's pidfile and logfile names, kept in the SSH user's %TEMP%."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", token)
    base = f"nasplan-iperf3-{safe}-{port}"
    return f"{base}.pid", f"{base}.log"
