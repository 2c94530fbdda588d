"""``kind: disk-profile`` on a Windows host: the same grid with diskspd (Windows' tool for
fio's job), its arguments CrystalDiskMark's own (CDM 8/9 ``DiskBench.cpp``): ``-b<block>
-o<queue> -t<threads> -W0 -S -w<write %>`` with ``-r`` for random jobs, ``-si`` for sequential
ones of more than one thread, ``-Z<block>`` (writes of random data) for write and mix, then
``-d<s> -L``.

``-S`` is ``-Su``: the system's file cache off, as fio's ``--direct=1`` (neither asks the disk
to write through). Like CrystalDiskMark, the test file is written in full first (random data,
untimed) and no run recreates it (diskspd's ``-c`` would, at every run). On the host's own
path (``path: 'D:\\bench'``) or, with ``through: {method: smb, client: <Windows host>}``, in
``\\\\NAS\\share\\path`` opened for each script (``nasplan.measure.diskspd_workdir``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.measure import through
from nasplan.measure.diskspd_workdir import Place, private_dir, said
from nasplan.measure.kind import RunContext
from nasplan.measure.kinds.disk_profile import profiles
from nasplan.measure.kinds.disk_profile.profiles import Job
from nasplan.measure.kinds.disk_profile.settings import ProfileSettings
from nasplan.measure.record import warn
from nasplan.measure.tools import diskspd, transfer_windows
from nasplan.remote.shell import PowerShell

TEST_FILE = "diskspd.dat"
_TIMEOUT_MARGIN_S = 60.0
# one mebibyte: written without PowerShell's 1MB suffix (one grammar the tests parse with)
_CHUNK = 1048576

_LAYOUT = """\
$ErrorActionPreference = 'Stop'
$rng = [Security.Cryptography.RandomNumberGenerator]::Create()
$buffer = New-Object byte[] @CHUNK@
$options = [IO.FileOptions]::WriteThrough
$out = New-Object IO.FileStream($file, 'Create', 'Write', 'None', @CHUNK@, $options)
try {
  for ($left = $size; $left -gt 0; $left -= $chunk) {
    $chunk = [int][Math]::Min($left, $buffer.Length)
    $rng.GetBytes($buffer)
    $out.Write($buffer, 0, $chunk)
  }
} finally { $out.Dispose() }
"""


def job_argv(
    diskspd_path: str, filename: str, job: Job, mode: str, *, duration_s: int,
    read_percent: int = profiles.MIX_READ_PERCENT,
) -> list[str]:  # fmt: skip
    """diskspd's argv of ``job`` in ``mode`` (read, write, mix: ``read_percent`` reads) on the
    laid-out ``filename`` for ``duration_s`` seconds, as CrystalDiskMark runs it; sizes in
    bytes, latency percentiles (``-L``), text out."""
    if mode not in profiles.MODES:
        raise ValueError(f"a profile's mode is read, write or mix, not {mode!r}")
    write = {"read": 0, "write": 100, "mix": 100 - read_percent}[mode]
    argv = [diskspd_path, f"-b{job.block_bytes}", f"-o{job.queue_depth}", f"-t{job.threads}"]
    argv += ["-W0", "-S", f"-w{write}"]
    if job.random:
        argv.append("-r")
    elif job.threads > 1:
        argv.append("-si")
    if write:
        argv.append(f"-Z{job.block_bytes}")
    return [*argv, f"-d{duration_s}", "-L", "-Rtext", filename]


def layout_script(filename: str, size_bytes: int) -> str:
    """PowerShell writing ``filename`` in full: ``size_bytes`` of random data, write-through."""
    values = f"$file = {PowerShell().quote(filename)}\n$size = [long]{int(size_bytes)}\n"
    return values + _LAYOUT.replace("@CHUNK@", str(_CHUNK))


def sides(parsed: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """diskspd's parse -> the ``{"read": side, "write": side}`` of fio's (None: moved nothing)."""
    keys = ("bytes_per_second", "iops", "latency_mean_us", "latency_p50_us", "latency_p99_us",
            "latency_p999_us")  # fmt: skip
    found: dict[str, dict[str, Any] | None] = {}
    for name in ("read", "write"):
        side = parsed.get(name)
        found[name] = {k: side[k] for k in keys} if side and side["bytes"] else None
    return found


def place_of(
    s: ProfileSettings, ctx: RunContext, session: HostSession, record: dict[str, Any]
) -> Place:
    """Where the grid runs: the host's own ``path``, or the NAS's share seen from the Windows
    client (``through``, SMB only: said in the record's params); CannotStart saying why not."""
    assert session.runner is not None
    if s.through is None:
        return Place(session.runner, s.path)
    share = through.share_of(s.through, ctx, s.size_bytes)
    if share.protocol != "smb":  # Windows' own client: SMB
        raise CannotStart(
            f"{s.through.client} is Windows: nasplan measures a share from Windows over SMB "
            f"only (diskspd in \\\\NAS\\share), not {share.protocol}"
        )
    try:
        root = transfer_windows.unc_path(share.server, share.name)
        path = transfer_windows.unc_path(share.server, share.name, s.through.path)
    except ValueError as exc:
        raise CannotStart(f"through: {exc}") from exc
    record["params"]["through"]["mounted"] = f"SMB {root} mapped with New-SmbMapping"
    if s.through.version or s.through.how != "auto":
        warn(record, f"{s.through.client} is Windows: its SMB client picks the dialect itself "
                     "(through's version and mount are a Linux client's)")  # fmt: skip
    user = f"{share.domain}\\{share.user}" if share.domain else str(share.user)
    return Place(session.runner, path, root, user, share.password or "")


def run(
    s: ProfileSettings, ctx: RunContext, session: HostSession, token: str,
    record: dict[str, Any], grid: Callable[[Callable[[Job, str], dict[str, Any]], str], None],
) -> None:  # fmt: skip
    """The grid with diskspd in a fresh directory of the Windows host's place, removed on every
    way out (``grid(one, "txt")`` runs ``one(job, mode)`` over it); failures in the record."""
    warnings: list[str] = []
    try:
        place = place_of(s, ctx, session, record)
        with private_dir(place, token, warnings) as workdir:
            filename = f"{workdir}\\{TEST_FILE}"
            laid = place.script(layout_script(filename, s.size_bytes),
                                profiles.timeout_s(s.size_bytes, 0))  # fmt: skip
            if not laid.ok:
                record["error"] = f"cannot write the test file {filename}: {said(laid)}"
                return
            diskspd_path = session.tools["fio"]  # the platform's tool for fio's job
            grid(lambda job, mode: _one(place, diskspd_path, filename, job, mode, s), "txt")
    except CannotStart as exc:
        record["error"] = str(exc)
    finally:
        for text in warnings:
            warn(record, text)


def _one(
    place: Place, diskspd_path: str, filename: str, job: Job, mode: str, s: ProfileSettings
) -> dict[str, Any]:
    argv = job_argv(
        diskspd_path, filename, job, mode, duration_s=s.duration_s, read_percent=s.read_percent
    )
    result = place.command(argv, s.duration_s + _TIMEOUT_MARGIN_S)
    raw = result.stdout + result.stderr
    try:
        parsed = diskspd.parse(result.stdout)
    except diskspd.DiskspdError as exc:
        error = f"{exc} (exit {result.exited})"
        return profiles.repetition(job, mode, raw, None, error, tool="diskspd")
    return profiles.repetition(job, mode, raw, sides(parsed), tool="diskspd")
