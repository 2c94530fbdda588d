"""SMB transfers from a Windows client: PowerShell scripts that time a copy to and from a share.

What Windows users do: copy a file to ``\\\\NAS\\share`` and back. Each repetition opens the share
with ``New-SmbMapping`` (credentials from stdin, never argv or the script), times only the copy
with a Stopwatch, and closes the mapping. Writes use ``Copy-Item``; reads stream the NAS's copy
into nothing, unbuffered, so neither the client's disk nor its cache is measured. The output
ends with the same ``NASPLAN_ELAPSED_NS=`` (the Stopwatch's: monotonic) / ``NASPLAN_WALL_NS=``
(the wall clock's, only to say that it stepped) / ``NASPLAN_EXIT=`` lines as the POSIX
``transfer.timed_script``, parsed by ``transfer.parse_timing``.
"""

from __future__ import annotations

import re

from nasplan.measure.tools.transfer import ELAPSED_MARK, EXIT_MARK, SOURCE_NAME, WALL_MARK
from nasplan.remote.runner import Runner
from nasplan.remote.shell import PowerShell

_UNC_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f]')
# FILE_FLAG_NO_BUFFERING: read from the server, not from what the client cached while writing.
_NO_BUFFERING = "0x20000000"

# opens $share as $user, the password the first line of stdin (also the disk kinds' Windows
# place: nasplan/measure/kinds/disk/windows.py)
OPEN_SHARE = """\
$password = [Console]::In.ReadLine()
try {
  New-SmbMapping -RemotePath $share -UserName $user -Password $password -Persistent $false |
    Out-Null
} catch {
  "nasplan: cannot open $share as ${user}: $($_.Exception.Message)"
  exit 2
} finally { $password = $null }
"""

_CLOSE_SHARE = (
    "Remove-SmbMapping -RemotePath $share -Force -UpdateProfile -ErrorAction SilentlyContinue\n"
)

_TIMED = """\
$rc = 0
$wall = [DateTime]::UtcNow.Ticks
$watch = [Diagnostics.Stopwatch]::StartNew()
try {
  if ($direction -eq 'write') {
    Copy-Item -LiteralPath $local -Destination $remote -Force
  } else {
    $in = New-Object IO.FileStream($remote, 'Open', 'Read', 'Read', 1MB, [IO.FileOptions]@NOBUF@)
    try { $in.CopyTo([IO.Stream]::Null, 1MB) } finally { $in.Dispose() }
  }
} catch {
  "$($_.Exception.Message)"
  $rc = 1
}
$watch.Stop()
$wall = [DateTime]::UtcNow.Ticks - $wall
"@ELAPSED@$([long]$watch.Elapsed.Ticks * 100)"
"@WALL@$([long]$wall * 100)"
"@EXIT@$rc"
"""


def unc_path(address: str, share: str, *parts: str | None) -> str:
    """``\\\\198.19.16.10\\data\\dir\\file``; ValueError for a name Windows cannot hold."""
    names = [share, *(p for part in parts if part for p in re.split(r"[\\/]", part) if p)]
    for name in names:
        if not name or _UNC_UNSAFE.search(name) or name in (".", ".."):
            raise ValueError(f"{name!r} is not a usable name in a Windows share path")
    return "\\\\" + "\\".join([address, *names])


def share_paths(address: str, share: str, directory: str | None, name: str) -> tuple[str, str]:
    """(``\\\\NAS\\share``, the UNC path of ``name`` in ``directory`` of that share)."""
    return unc_path(address, share), unc_path(address, share, directory, name)


def only_smb(host: str, method: str) -> str:
    """Why a transfer with ``method`` is not measured from the Windows host ``host``."""
    return (
        f"{host} is Windows: nasplan measures transfers from Windows over SMB only "
        f"(method: smb, a timed Copy-Item to \\\\NAS\\share), not {method}"
    )


def make_source(runner: Runner, size_bytes: int, timeout_s: float) -> tuple[str | None, str | None]:
    """Run ``setup_script`` on the Windows host: ``(temp dir, None)`` or ``(None, why not)``."""
    result = runner.run_script(setup_script(size_bytes), timeout_s=timeout_s)
    lines = result.stdout.strip().splitlines()
    local_dir = lines[-1].strip() if lines else ""
    if not result.ok or not re.match(r"^[A-Za-z]:\\", local_dir):
        detail = (result.stderr or result.stdout).strip()
        return None, f"cannot create the source file on {runner.name}: {detail}"
    return local_dir, None


def _assign(values: dict[str, str]) -> str:
    quote = PowerShell().quote
    return "".join(f"${name} = {quote(value)}\n" for name, value in values.items())


def setup_script(size_bytes: int) -> str:
    """PowerShell: a private temp dir holding an incompressible ``source.bin``; prints the dir."""
    return (
        "$ErrorActionPreference = 'Stop'\n"
        f"$size = [long]{int(size_bytes)}\n"
        "$name = 'nasplan-xfer-' + [Guid]::NewGuid().ToString('N').Substring(0, 12)\n"
        "$dir = Join-Path ([IO.Path]::GetTempPath()) $name\n"
        "New-Item -ItemType Directory -Path $dir | Out-Null\n"
        "$rng = [Security.Cryptography.RandomNumberGenerator]::Create()\n"
        "$buffer = New-Object byte[] (1MB)\n"
        f"$out = [IO.File]::Create((Join-Path $dir '{SOURCE_NAME}'))\n"
        "try {\n"
        "  for ($left = $size; $left -gt 0; $left -= $chunk) {\n"
        "    $chunk = [int][Math]::Min($left, $buffer.Length)\n"
        "    $rng.GetBytes($buffer)\n"
        "    $out.Write($buffer, 0, $chunk)\n"
        "  }\n"
        "} finally { $out.Dispose() }\n"
        "$dir\n"
    )


def timed_copy_script(share: str, remote: str, local_dir: str, direction: str, user: str) -> str:
    """PowerShell for one timed repetition; the SMB password is the first line of stdin.

    ``share``: ``\\\\host\\share``; ``remote``: the NAS copy's UNC path; ``direction``: write|read.
    """
    if direction not in ("write", "read"):
        raise ValueError(f"direction must be write or read, not {direction!r}")
    values = {
        "share": share,
        "remote": remote,
        "local": f"{local_dir.rstrip(chr(92))}\\{SOURCE_NAME}",
        "direction": direction,
        "user": user,
    }
    timed = (
        _TIMED.replace("@NOBUF@", _NO_BUFFERING)
        .replace("@ELAPSED@", ELAPSED_MARK)
        .replace("@WALL@", WALL_MARK)
        .replace("@EXIT@", EXIT_MARK)
    )
    return _assign(values) + OPEN_SHARE + timed + _CLOSE_SHARE + "exit $rc\n"


def cleanup_script(share: str, remote: str, local_dir: str, user: str) -> str:
    """PowerShell removing the NAS's copy (password on stdin) and the client's temp dir.

    Prints one ``nasplan: ...`` line per thing it could not remove.
    """
    values = {"share": share, "remote": remote, "dir": local_dir, "user": user}
    return (
        _assign(values)
        + OPEN_SHARE
        + "if (Test-Path -LiteralPath $remote) {\n"
        + "  try { Remove-Item -LiteralPath $remote -Force -ErrorAction Stop }\n"
        + '  catch { "nasplan: cannot remove ${remote}: $($_.Exception.Message)" }\n'
        + "}\n"
        + _CLOSE_SHARE
        + "try { Remove-Item -LiteralPath $dir -Recurse -Force -ErrorAction Stop }\n"
        + 'catch { "nasplan: cannot remove ${dir}: $($_.Exception.Message)" }\n'
        + "exit 0\n"
    )
