"""File transfer commands (smbclient, rsync over SSH, libnfs nfs-cp, dd) and their parsers.

Everything here is pure: argv lists, shell text quoted with shlex, parsers of real tool output.
Rates are timed on the client around the whole command (``date +%s%N``), so they include
connection setup (SMB session, SSH handshake): what a user waiting for a copy experiences.
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
EXIT_MARK = "NASPLAN_EXIT="
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


def setup_script(
    size_bytes: int, *, with_auth: bool, also: Sequence[str] = (), one_file: bool = True
) -> str:
    """Shell text: a private temp dir with an incompressible source file (``one_file``) and
    what ``also`` makes there (a set of many files: ``$dir`` is the directory); prints the dir.

    With ``with_auth`` the script's stdin (the smbclient authentication file) goes to
    ``DIR/smb-auth``, mode 0600, so no password ever appears in argv.
    """
    lines = [
        "set -e",
        "umask 077",
        f'dir="${{TMPDIR:-/tmp}}/nasplan-xfer.{secrets.token_hex(6)}"',
    ]
    # recorded in the host's lock before it is made (mkdir, never an existing one): should this
    # run die, whoever finds the lock removes the directory
    lines += [PRELUDE, 'nasplan_register - - "$dir"', 'mkdir -m 700 -- "$dir"']
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


def timed_script(argv: Sequence[str], before: Sequence[Sequence[str]] = ()) -> str:
    """Shell text running ``before`` untimed, then timing ``argv``; prints elapsed ns and exit.

    The tool's stdout and stderr both go to stdout, followed by the two marker lines.
    """
    lines = [f"{shlex.join(step)} || exit $?" for step in before]
    lines += [
        "start=$(date +%s%N)",
        f"{shlex.join(argv)} 2>&1",
        "rc=$?",
        "end=$(date +%s%N)",
        f'echo "{ELAPSED_MARK}$((end - start))"',
        f'echo "{EXIT_MARK}$rc"',
        'exit "$rc"',
    ]
    return "\n".join(lines)


def parse_timed(text: str) -> tuple[float, int, str]:
    """``(duration_s, exit status, tool output)`` from ``timed_script`` output."""
    elapsed = re.search(rf"^{ELAPSED_MARK}(-?[0-9]+)$", text, re.MULTILINE)
    status = re.search(rf"^{EXIT_MARK}([0-9]+)$", text, re.MULTILINE)
    if elapsed is None or status is None:
        raise TransferParseError("the timed command printed no elapsed time (killed?)")
    tool_output = text[: elapsed.start()]
    return int(elapsed.group(1)) / 1e9, int(status.group(1)), tool_output


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
    options: SshOptions, source: str, destination: str, *, recursive: bool = False
) -> list[str]:
    """rsync of one file (``recursive``: of a directory), always sent whole and uncompressed,
    with plain-number ``--stats``."""
    return [
        "rsync",
        *(["--recursive"] if recursive else []),
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
