"""File transfer commands (smbclient, rsync over SSH, libnfs nfs-cp, dd) and their parsers.

Everything here is pure: argv lists, shell text quoted with shlex, parsers of real tool output.
Rates are timed on the client around the whole command, so they include connection setup (SMB
session, SSH handshake): what a user waiting for a copy experiences. The time is the client's
monotonic clock's (``/proc/uptime``, else Perl's or Python's ``CLOCK_MONOTONIC``): a wall clock
set back or forth mid-copy (NTP, a user) changes no duration. The wall clock is read beside it,
only to say that it stepped (``Timed.step_s``).
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from nasplan.errors import NasplanError
from nasplan.hosts.lock import PRELUDE

ELAPSED_MARK = "NASPLAN_ELAPSED_NS="
WALL_MARK = "NASPLAN_WALL_NS="
# a wall clock read in whole seconds (a ``date`` without %N: BusyBox's, macOS's, FreeBSD's)
COARSE_MARK = "NASPLAN_WALL_COARSE=1"
EXIT_MARK = "NASPLAN_EXIT="
# /proc/uptime counts hundredths of a second: within this of each other the two clocks agree
# (and ntpd, chrony step the clock only past 0.128 s: a smaller difference is no step)
CLOCK_AGREE_S = 0.1
SOURCE_NAME = "source.bin"
READ_NAME = "read.bin"
AUTH_NAME = "smb-auth"
# smbclient divides bytes by 1.024 x milliseconds: its "kb/s" and "KiloBytes/sec" are KiB/s.
SMBCLIENT_KIB_BYTES = 1024
_SMB_UNSAFE = re.compile(r'["\s;\\]')
_SMB_LINE = re.compile(
    r"^(?P<verb>putting|getting) file (?P<rest>.*?) "
    r"\((?P<rate>[0-9.]+) (?:kb/s|KiloBytes/sec)\) \(average [0-9.]+ (?:kb/s|KiloBytes/sec)\)",
    re.MULTILINE,
)
_SMB_SIZE = re.compile(r" of size (?P<bytes>[0-9]+) as ")
_NT_STATUS = re.compile(r"NT_STATUS_[A-Z_]+[^\n]*")
_RSYNC_SENT = re.compile(
    r"^sent (?P<sent>[0-9,.]+) bytes\s+received (?P<received>[0-9,.]+) bytes\s+"
    r"(?P<rate>[0-9,.]+) bytes/sec",
    re.MULTILINE,
)
_RSYNC_SIZE = re.compile(r"^Total transferred file size: (?P<bytes>[0-9,]+) bytes", re.MULTILINE)
_RSYNC_ERROR = re.compile(r"^rsync(?: error)?: [^\n]*", re.MULTILINE)
_RSYNC_SAFE = re.compile(r"^(?!-)[A-Za-z0-9_.,+@=%/-]+$")
# What ssh itself said when rsync's transport failed: the cause behind rsync's own "connection
# unexpectedly closed" (connection refused, host key verification failed, permission denied).
_SSH_CAUSE = re.compile(
    r"^(?:ssh: [^\n]*|Host key verification failed\.|[^\n]*: Permission denied \([^\n]*\)\.?"
    r"|No [A-Z0-9]+ host key is known for [^\n]*"
    r"|[^\n]*REMOTE HOST IDENTIFICATION HAS CHANGED[^\n]*)$",
    re.MULTILINE,
)
_NFS_UNSAFE = re.compile(r"[\s?#%\\]")
_NFS_COPIED = re.compile(r"^copied (?P<bytes>[0-9]+) bytes$", re.MULTILINE)
_DD_LINE = re.compile(
    r"^(?P<bytes>[0-9]+) bytes (?:\([^)]*\) )?copied, (?P<seconds>[0-9.e+-]+) s", re.MULTILINE
)


class TransferParseError(NasplanError):
    """A tool's output did not say what was transferred."""


@dataclass(frozen=True)
class SshOptions:
    """How the client reaches the NAS over SSH for rsync; host keys always checked strictly."""

    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None


# what setup_script prints (and nothing else) when the client lacks the method's tool
NO_TOOL = "@@nasplan:no-tool@@"


def setup_script(
    size_bytes: int,
    *,
    with_auth: bool,
    also: Sequence[str] = (),
    one_file: bool = True,
    tool: str | None = None,
    check: str = "",
    record: Sequence[str] = (),
) -> str:
    """Shell text: a private temp dir with an incompressible source file (``one_file``) and
    what ``also`` makes there (a set of many files: ``$dir`` is the directory); prints the dir.

    With ``with_auth`` the script's stdin (the smbclient authentication file) goes to
    ``DIR/smb-auth``, mode 0600, so no password ever appears in argv. ``tool``: looked for
    first, in the same round trip; without it the script prints NO_TOOL and makes nothing.
    ``check``: shell text run next (the temp dir's free space), which exits to make nothing;
    ``record``: what the test will make through the client's mount, recorded in the host's lock
    with the temp dir, before either is made.
    """
    lines = [] if tool is None else [
        f"command -v {shlex.quote(tool)} >/dev/null 2>&1 || {{ echo {NO_TOOL}; exit 1; }}"
    ]  # fmt: skip
    lines += [check.rstrip("\n")] if check else []
    lines += [
        "set -e",
        "umask 077",
        f'dir="${{TMPDIR:-/tmp}}/nasplan-xfer.{secrets.token_hex(6)}"',
    ]
    # recorded in the host's lock before it is made (mkdir, never an existing one): should this
    # run die, whoever finds the lock removes the directory
    lines += [PRELUDE, f'nasplan_register - - "$dir" {shlex.join(record)}'.rstrip()]
    lines.append('mkdir -m 700 -- "$dir"')
    if with_auth:
        lines.append(f'cat > "$dir"/{AUTH_NAME}')
    if one_file:
        lines.append(f'head -c {int(size_bytes)} /dev/urandom > "$dir"/{SOURCE_NAME}')
    lines += [*also, 'echo "$dir"']
    return "\n".join(lines)


def cleanup_argv(local_dir: str) -> list[str]:
    """Remove the client's temp dir (source, read copy, auth file)."""
    return ["rm", "-rf", "--", local_dir]


def smb_auth_file(user: str, password: str, domain: str | None = None) -> str:
    """smbclient ``-A`` file text (sent over stdin into a 0600 file, never in argv)."""
    lines = [f"username = {user}", f"password = {password}"]
    if domain:
        lines.append(f"domain = {domain}")
    return "\n".join(lines) + "\n"


# POSIX sh: ``nasplan_mono`` prints the monotonic clock in ns (nothing when the host has none),
# ``nasplan_wall`` the wall clock in ns (seconds only where ``date`` has no %N: macOS, FreeBSD)
CLOCKS = r"""nasplan_mono() {
  if read -r u _ < /proc/uptime 2>/dev/null; then echo "$((${u%.*} * 100 + 1${u#*.} - 100))0000000"
  elif perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC \
    -e 'printf "%.0f\n", clock_gettime(CLOCK_MONOTONIC) * 1e9' 2>/dev/null; then :
  else python3 -c 'import time; print(time.monotonic_ns())' 2>/dev/null; fi
}
nasplan_wall() {
  w=$(date +%s%N 2>/dev/null)
  case $w in *[!0-9]*|'') echo "$(date +%s)000000000" ;; *) echo "$w" ;; esac
}"""


@dataclass(frozen=True)
class Timed:
    """What ``timed_script`` printed: the monotonic and the wall clock's elapsed seconds (either
    None when not said), the exit status, the tool's output."""

    monotonic_s: float | None
    wall_s: float | None
    exited: int
    output: str
    # the wall clock's resolution: 1 s where ``date`` has no %N
    wall_resolution_s: float = 0.0

    @property
    def _agree(self) -> bool:
        mono, wall = self.monotonic_s, self.wall_s
        assert mono is not None and wall is not None
        return abs(wall - mono) <= CLOCK_AGREE_S + self.wall_resolution_s

    @property
    def duration_s(self) -> float:
        """The command's time: the monotonic clock's, to the wall clock's nanoseconds where the
        two agree (``/proc/uptime`` counts hundredths); the wall clock's alone only on a host
        with no monotonic clock."""
        mono, wall = self.monotonic_s, self.wall_s
        if mono is None:
            return wall if wall is not None else 0.0
        if wall is not None and not self.wall_resolution_s and self._agree:
            return wall
        return mono

    @property
    def step_s(self) -> float | None:
        """How far the wall clock stepped while the command ran (its elapsed time less the
        monotonic clock's), None when it did not (or the host has no monotonic clock)."""
        mono, wall = self.monotonic_s, self.wall_s
        if mono is None or wall is None or self._agree:
            return None
        return round(wall - mono, 3)


def timed_script(argv: Sequence[str], before: Sequence[Sequence[str]] = ()) -> str:
    """Shell text running ``before`` untimed, then timing ``argv`` on the monotonic clock (the
    wall clock read beside it); prints elapsed ns of each and the exit status.

    The tool's stdout and stderr both go to stdout, followed by the marker lines.
    """
    lines = [f"{shlex.join(step)} || exit $?" for step in before]
    lines += [
        CLOCKS,
        "mono0=$(nasplan_mono) wall0=$(nasplan_wall)",
        f"{shlex.join(argv)} 2>&1",
        "rc=$?",
        "wall1=$(nasplan_wall) mono1=$(nasplan_mono)",
        f'[ -n "$mono0" ] && [ -n "$mono1" ] && echo "{ELAPSED_MARK}$((mono1 - mono0))"',
        f'echo "{WALL_MARK}$((wall1 - wall0))"',
        f'case $wall0 in *000000000) echo "{COARSE_MARK}" ;; esac',
        f'echo "{EXIT_MARK}$rc"',
        'exit "$rc"',
    ]
    return "\n".join(lines)


def parse_timing(text: str) -> Timed:
    """``Timed`` from ``timed_script`` output (or a Windows client's script, whose elapsed time
    is its Stopwatch's); TransferParseError when it printed no time (killed?)."""
    elapsed = re.search(rf"^{ELAPSED_MARK}(-?[0-9]+)$", text, re.MULTILINE)
    wall = re.search(rf"^{WALL_MARK}(-?[0-9]+)$", text, re.MULTILINE)
    status = re.search(rf"^{EXIT_MARK}([0-9]+)$", text, re.MULTILINE)
    if (elapsed is None and wall is None) or status is None:
        raise TransferParseError("the timed command printed no elapsed time (killed?)")
    first = min(m.start() for m in (elapsed, wall) if m is not None)
    return Timed(
        int(elapsed.group(1)) / 1e9 if elapsed else None,
        int(wall.group(1)) / 1e9 if wall else None,
        int(status.group(1)),
        text[:first],
        1.0 if re.search(rf"^{COARSE_MARK}$", text, re.MULTILINE) else 0.0,
    )


def parse_timed(text: str) -> tuple[float, int, str]:
    """``(duration_s, exit status, tool output)`` from ``timed_script`` output."""
    timed = parse_timing(text)
    return timed.duration_s, timed.exited, timed.output


# --- smbclient -------------------------------------------------------------------------------


def smb_safe(name: str) -> str:
    """``name`` as smbclient's command line can carry it; ValueError for what it cannot."""
    if _SMB_UNSAFE.search(name):
        raise ValueError(f"{name!r}: smbclient commands cannot carry quotes, blanks, ; or \\")
    return name


def smbclient_argv(
    address: str,
    share: str,
    auth_file: str,
    command: str,
    *,
    directory: str | None = None,
) -> list[str]:
    """``smbclient //ADDRESS/SHARE -A AUTH [-D DIR] -c COMMAND``."""
    argv = ["smbclient", f"//{address}/{smb_safe(share)}", "-A", auth_file]
    if directory:
        argv += ["-D", smb_safe(directory)]
    return [*argv, "-c", command]


def smb_put(local: str, remote: str) -> str:
    """smbclient command: upload ``local`` as ``remote``."""
    return f"put {smb_safe(local)} {smb_safe(remote)}"


def smb_get(remote: str, local: str) -> str:
    """smbclient command: download ``remote`` to ``local``."""
    return f"get {smb_safe(remote)} {smb_safe(local)}"


def smb_del(remote: str) -> str:
    """smbclient command: delete ``remote``."""
    return f"del {smb_safe(remote)}"


def parse_smbclient(text: str) -> dict[str, float | int | None]:
    """smbclient put/get output -> ``{"tool_bytes_per_second", "bytes"}`` (bytes: get only).

    Raises TransferParseError with smbclient's NT_STATUS message when nothing was transferred.
    """
    match = _SMB_LINE.search(text)
    if match is None:
        status = _NT_STATUS.search(text)
        detail = status.group(0).strip() if status else (text.strip().splitlines() or ["?"])[-1]
        raise TransferParseError(f"smbclient: {detail}")
    size = _SMB_SIZE.search(match.group("rest"))
    return {
        "tool_bytes_per_second": float(match.group("rate")) * SMBCLIENT_KIB_BYTES,
        "bytes": int(size.group("bytes")) if size else None,
    }


# --- rsync over SSH --------------------------------------------------------------------------


def ssh_command(options: SshOptions) -> list[str]:
    """The ``ssh`` rsync runs (``-e``): batch mode, strict host keys, the plan's identity."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    if options.identity_file:
        argv += ["-i", options.identity_file, "-o", "IdentitiesOnly=yes"]
    if options.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={options.known_hosts}"]
        argv += ["-o", "GlobalKnownHostsFile=/dev/null"]
    if options.port:
        argv += ["-p", str(options.port)]
    return argv


def rsync_remote(options: SshOptions, address: str, path: str) -> str:
    """``[user@]address:path``; ValueError for a path rsync or the NAS's shell would split.

    rsync before 3.2.4 hands the remote path to the NAS's shell, which splits it at blanks
    and expands ``$``, quotes and globs; a leading ``-`` would be read as an option.
    """
    if not _RSYNC_SAFE.match(path):
        raise ValueError(
            f"{path!r}: an rsync remote path here holds only letters, digits, _.,+@=%/-"
        )
    if options.user and not _RSYNC_SAFE.match(options.user):
        raise ValueError(f"{options.user!r}: not a user name rsync can pass on")
    host = f"[{address}]" if ":" in address else address
    return f"{options.user}@{host}:{path}" if options.user else f"{host}:{path}"


def rsync_argv(
    options: SshOptions,
    source: str,
    destination: str,
    *,
    recursive: bool = False,
    temp_dir: str | None = None,
) -> list[str]:
    """rsync of one file (``recursive``: of a directory), always sent whole and uncompressed,
    with plain-number ``--stats``.

    ``temp_dir``: a directory of the NAS (made by the NAS's rsync's own shell, first) where the
    receiving rsync writes its ``.NAME.XXXXXX`` before renaming it into place: a killed copy
    leaves it in a directory the run recorded, not beside the copy under a name of rsync's."""
    scratch = []
    if temp_dir is not None:
        if not _RSYNC_SAFE.match(temp_dir):
            raise ValueError(
                f"{temp_dir!r}: an rsync temp dir holds only letters, digits, _.,+@=%/-"
            )
        made = shlex.join(["mkdir", "-p", "--", temp_dir])
        scratch = [f"--temp-dir={temp_dir}", f"--rsync-path={made} && rsync"]
    return [
        "rsync",
        *(["--recursive"] if recursive else []),
        *scratch,
        # Always send the whole file, even when the NAS already has one of the same size and age.
        "--ignore-times",
        "--whole-file",
        "--no-compress",
        "--stats",
        "--no-human-readable",
        "-e",
        shlex.join(ssh_command(options)),
        source,
        destination,
    ]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_rsync(text: str) -> dict[str, float | int | None]:
    """rsync ``--stats`` -> ``{"tool_bytes_per_second", "bytes"}`` (bytes of file data).

    rsync's own rate covers its whole run, handshake included, in coarse time steps.
    """
    sent = _RSYNC_SENT.search(text)
    size = _RSYNC_SIZE.search(text)
    errors = _RSYNC_ERROR.findall(text)
    if errors or sent is None or size is None:
        detail = errors[0] if errors else "no --stats summary in its output"
        cause = _SSH_CAUSE.search(text)
        raise TransferParseError(f"{cause.group(0)}; {detail}" if cause else detail)
    return {
        "tool_bytes_per_second": _number(sent.group("rate")),
        "bytes": int(_number(size.group("bytes"))),
    }


# --- dd to and from a mounted path -----------------------------------------------------------


def dd_write_argv(source: str, destination: str) -> list[str]:
    """Copy to the mounted path; ``conv=fsync`` keeps the flush to the NAS inside the time."""
    return ["dd", f"if={source}", f"of={destination}", "bs=1M", "conv=fsync"]


def dd_read_argv(source: str, destination: str) -> list[str]:
    """Copy from the mounted path to ``destination`` (``/dev/null`` keeps the client disk out)."""
    return ["dd", f"if={source}", f"of={destination}", "bs=1M"]


def drop_file_cache_argv(path: str) -> list[str]:
    """Evict one file from this machine's page cache (``posix_fadvise DONTNEED``, no root)."""
    return ["dd", f"if={path}", "iflag=nocache", "count=0", "status=none"]


def remove_argv(path: str) -> list[str]:
    """Remove one file, no error when it is gone already."""
    return ["rm", "-f", "--", path]


def parse_dd(text: str) -> dict[str, float | int | None]:
    """GNU dd's summary -> ``{"tool_bytes_per_second", "bytes"}``."""
    match = _DD_LINE.search(text)
    if match is None:
        lines = [line for line in text.strip().splitlines() if line.startswith("dd:")]
        raise TransferParseError(lines[0] if lines else "dd printed no summary")
    size, seconds = int(match.group("bytes")), float(match.group("seconds"))
    return {"tool_bytes_per_second": size / seconds if seconds > 0 else None, "bytes": size}


# --- libnfs nfs-cp ---------------------------------------------------------------------------


def nfs_url(address: str, export: str, name: str, version: int | None = None) -> str:
    """``nfs://ADDRESS/EXPORT/NAME[?version=N]`` as libnfs parses it (no escaping: no %, ?, #)."""
    path = f"/{export.strip('/')}/{name}" if export.strip("/") else f"/{name}"
    if _NFS_UNSAFE.search(path):
        raise ValueError(f"{path!r}: an nfs:// URL here cannot carry blanks, ?, #, % or \\")
    host = f"[{address}]" if ":" in address else address
    query = f"?version={int(version)}" if version else ""
    return f"nfs://{host}{path}{query}"


def nfs_cp_argv(source: str, destination: str) -> list[str]:
    """``nfs-cp SOURCE DESTINATION``; it never overwrites, so the destination must not exist."""
    return ["nfs-cp", source, destination]


def parse_nfs_cp(text: str) -> dict[str, float | int | None]:
    """nfs-cp output -> ``{"tool_bytes_per_second": None, "bytes"}`` (it reports no rate)."""
    match = _NFS_COPIED.search(text)
    if match is None:
        lines = text.strip().splitlines()
        raise TransferParseError(f"nfs-cp: {lines[0] if lines else 'printed nothing'}")
    return {"tool_bytes_per_second": None, "bytes": int(match.group("bytes"))}
