"""The read-only looks ``apply --check`` takes on a host for a test (``Kind.probes``): a
directory the test writes into, an SMB share, an NFS export. Each is a POSIX sh script that
reads and never writes (``test -d``/``-w``, a share's listing, an export's listing), exits 0
when what the test needs is there, PROBE_CANNOT_TELL when it cannot look (its tool is not
installed yet: the run installs it), and prints the reason on its last line otherwise.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from nasplan.measure.kind import PROBE_CANNOT_TELL, Probe
from nasplan.measure.tools import transfer
from nasplan.remote.runner import Result
from nasplan.sections import split_sections

# $1: the directory. -w asks the kernel, writing nothing.
_WRITABLE_DIRECTORY = """\
[ -e "$1" ] || { echo "$1 does not exist"; exit 1; }
[ -d "$1" ] || { echo "$1 is not a directory"; exit 1; }
[ -w "$1" ] || { echo "$1 is not writable by $(id -un 2>/dev/null || echo its user)"; exit 1; }
"""

# $1: the tool; the rest: its argv. Its last line of output when it fails.
_LISTED = f"""\
command -v "$1" >/dev/null 2>&1 || {{ echo "$1 is not installed yet"; exit {PROBE_CANNOT_TELL}; }}
out=$("$@" 2>&1) || {{ printf '%s\\n' "$out" | grep -v '^$' | tail -n 1; exit 1; }}
"""


def writable_directory(host: str, path: str, why: str) -> Probe:
    """``path`` is a directory on ``host`` its login user can write into (``why``: what for:
    ``the disk test's directory``)."""
    script = f"set -- {shlex.quote(path)}\n{_WRITABLE_DIRECTORY}"
    return Probe(host, f"{why} {path} (a writable directory)", script, f"{why} on {host}")


def smb_share(
    client: str, address: str, share: str, directory: str | None, user: str, password: str
) -> Probe:
    """``//address/share`` (and its ``directory``) listed from ``client`` with the test's
    user and password (given on stdin as smbclient's authentication file)."""
    argv = transfer.smbclient_argv(address, share, "/dev/stdin", "ls", directory=directory)
    where = f"//{address}/{share}" + (f" directory {directory}" if directory else "")
    return Probe(
        client,
        f"SMB share {where}",
        f"set -- {shlex.join(argv)}\n{_LISTED}",
        f"SMB share {where} from {client}",
        stdin=transfer.smb_auth_file(user, password),
    )


def nfs_export(client: str, address: str, export: str, version: int | None) -> Probe:
    """The export listed from ``client`` with libnfs's nfs-ls (what nfs-cp reaches);
    ValueError for an export an nfs:// URL cannot carry."""
    argv = ["nfs-ls", transfer.nfs_url(address, export, "", version)]
    return Probe(
        client,
        f"NFS export {address}:{export}",
        f"set -- {shlex.join(argv)}\n{_LISTED}",
        f"NFS export {address}:{export} from {client}",
    )


def together(scripts: Sequence[str]) -> str:
    """One POSIX sh script running each probe's ``scripts`` in turn (each in a subshell reading
    /dev/null), so that a host's looks take one round trip: section ``probe-N`` holds probe N's
    standard output, ``probe-N-exit`` its exit status and ``probe-N-err`` its standard error
    (``apart`` reads them back)."""
    lines = ["exec 3>&1"]
    for number, script in enumerate(scripts):
        lines += [
            f"printf '\\n@@nasplan:probe-{number}@@\\n'",
            f"nasplan_err=$( (\n{script}\n) </dev/null 2>&1 1>&3 3>&-); nasplan_rc=$?",
            f"printf '\\n@@nasplan:probe-{number}-exit@@\\n%s\\n@@nasplan:probe-{number}-err@@\\n"
            '%s\\n\' "$nasplan_rc" "$nasplan_err"',
        ]
    return "\n".join(lines) + "\nexec 3>&-\n"


def apart(result: Result, count: int) -> list[Result]:
    """``together``'s output -> each probe's own Result, in order; one whose section did not
    come back (the host cut off, the script timed out) gets the whole command's exit status
    and error."""
    sections = split_sections(result.stdout)
    found = []
    for number in range(count):
        status = sections.get(f"probe-{number}-exit", "")
        if not status.isdigit():
            why = result.stderr.strip() or f"no answer (exit {result.exited})"
            found.append(Result(result.command, "", why, result.exited or 1))
            continue
        out = sections.get(f"probe-{number}", "")
        err = sections.get(f"probe-{number}-err", "")
        found.append(Result(result.command, out, err, int(status)))
    return found
