"""Copies of many files (a transfer's ``files:``): the set made on the client, the commands that
copy it (smbclient ``mput``/``mget``, ``rsync -r``, ``cp -R`` through a mount, libnfs through
``nfs_files.py``) and the parsers of their real output. Pure, like ``tools/transfer.py``.

On the client a set lives in a directory named as on the NAS (``nasplan-ID-TOKEN.set``) in the
test's temp dir, one group of equal files after another (``g0-aaa``, ``g1-aab``, ...); a read
brings it back into ``read/`` there.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from importlib import resources

from nasplan.measure.tools.transfer import TransferParseError, smb_safe

READ_DIR = "read"
HELPER_NAME = "nfs_files.py"
_LETTERS = 26
_SMB_FILE = re.compile(
    r"^(?:putting|getting) file .*?(?: of size (?P<bytes>[0-9]+))? as .* \((?P<rate>[0-9.]+) "
    r"(?:kb/s|KiloBytes/sec)\)",
    re.MULTILINE,
)
_NT_STATUS = re.compile(r"NT_STATUS_[A-Z_]+[^\n]*")
_RSYNC_FILES = re.compile(r"^Number of regular files transferred: (?P<n>[0-9,]+)", re.MULTILINE)

# (count, bytes each) of each group of a set
Groups = Sequence[tuple[int, int]]


def total_bytes(groups: Groups) -> int:
    """The bytes of a whole set."""
    return sum(count * size for count, size in groups)


def file_count(groups: Groups) -> int:
    """The files of a whole set."""
    return sum(count for count, _ in groups)


def _suffix_length(count: int) -> int:
    """split's suffix letters for ``count`` files (``aa`` .. ``zz`` is 676)."""
    length = 1
    while _LETTERS**length < count:
        length += 1
    return max(length, 2)


def make_set_lines(name: str, groups: Groups) -> list[str]:
    """Shell lines (``$dir`` the test's temp dir) making the set: one ``head | split`` per
    group, so a thousand files cost two processes, not a thousand."""
    lines = [f'mkdir "$dir"/{shlex.quote(name)}']
    for index, (count, size) in enumerate(groups):
        prefix = shlex.quote(f"{name}/g{index}-")
        width = _suffix_length(count)
        lines.append(
            f"head -c {int(count) * int(size)} /dev/urandom"
            f' | split -b {int(size)} -a {width} - "$dir"/{prefix}'
        )
    return lines


def fresh_read_dir_argv(local_dir: str) -> list[str]:
    """Untimed before a read: an empty ``read/`` for the set to come back into."""
    read = f"{local_dir}/{READ_DIR}"
    return ["sh", "-c", 'rm -rf -- "$1" && mkdir -- "$1"', "sh", read]


# --- smbclient -------------------------------------------------------------------------------


def smb_mput(local_dir: str, name: str) -> str:
    """smbclient commands: the set's directory, recursively, from the temp dir."""
    return f"prompt OFF; recurse ON; lcd {smb_safe(local_dir)}; mput {smb_safe(name)}"


def smb_mget(local_dir: str, name: str) -> str:
    """smbclient commands: the set's directory, recursively, into ``read/``."""
    read = f"{local_dir}/{READ_DIR}"
    return f"prompt OFF; recurse ON; lcd {smb_safe(read)}; mget {smb_safe(name)}"


def smb_deltree(name: str) -> str:
    """smbclient command: remove the set's directory and everything in it."""
    return f"deltree {smb_safe(name)}"


def parse_smbclient_set(text: str) -> dict[str, float | int | None]:
    """smbclient ``mput``/``mget`` output -> ``{"files", "bytes", "tool_bytes_per_second"}``:
    one line a file (bytes from ``mget``'s sizes only; no rate of the whole set)."""
    found = list(_SMB_FILE.finditer(text))
    if not found:
        status = _NT_STATUS.search(text)
        detail = status.group(0).strip() if status else (text.strip().splitlines() or ["?"])[-1]
        raise TransferParseError(f"smbclient: {detail}")
    sizes = [m.group("bytes") for m in found]
    return {
        "files": len(found),
        "bytes": sum(int(s) for s in sizes) if all(sizes) else None,
        "tool_bytes_per_second": None,
    }


# --- rsync -----------------------------------------------------------------------------------


def parse_rsync_files(text: str) -> int | None:
    """``Number of regular files transferred`` of rsync's ``--stats``; None when it is missing."""
    match = _RSYNC_FILES.search(text)
    return int(match.group("n").replace(",", "")) if match else None


# --- cp through a mount ----------------------------------------------------------------------


def cp_argv(source: str, destination: str) -> list[str]:
    """``cp -R`` of a directory, then ``sync``: the flush to the NAS inside the time, as
    ``dd conv=fsync`` for one file."""
    return ["sh", "-c", 'cp -R -- "$1" "$2" && sync', "sh", source, destination]


def drop_tree_cache_argv(path: str) -> list[str]:
    """Evict every file under ``path`` from the client's page cache (``dd iflag=nocache``)."""
    script = 'find "$1" -type f -exec dd iflag=nocache count=0 status=none if={} \\;'
    return ["sh", "-c", script, "sh", path]


# --- libnfs, one mount (nfs_files.py) ----------------------------------------------------------


def helper_text() -> str:
    """nfs_files.py, as the client gets it."""
    return resources.files("nasplan.measure.tools").joinpath(HELPER_NAME).read_text()


def nfs_files_argv(
    helper_dir: str,
    address: str,
    export: str,
    name: str,
    local: str,
    mode: str,
    version: int | None = None,
) -> list[str]:
    """``python3 nfs_files.py`` copying the set ``local`` (the client's) as ``name`` on the
    export: ``mode`` write, read or remove."""
    argv = [
        "python3", f"{helper_dir.rstrip('/')}/{HELPER_NAME}",
        "--server", address, "--export", export, "--dir", name, "--local", local,
        "--mode", mode,
    ]  # fmt: skip
    return [*argv, "--version", str(version)] if version else argv


def parse_nfs_files(text: str) -> dict[str, float | int | None]:
    """The helper's JSON line -> ``{"files", "bytes", "tool_bytes_per_second": None}``."""
    for line in reversed(text.strip().splitlines()):
        if not line.startswith("{"):
            continue
        try:
            found = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict) and found.get("error"):
            raise TransferParseError(f"nfs ({found.get('stage')}): {found['error']}")
        if isinstance(found, dict) and isinstance(found.get("files"), int):
            return {
                "files": found["files"],
                "bytes": found.get("bytes"),
                "tool_bytes_per_second": None,
            }
    tail = text.strip().splitlines()[-1:] or ["no output"]
    raise TransferParseError(f"nfs_files.py printed no result ({tail[0]})")
