"""Free space where a test writes, read with ``df -P -k`` on the host itself: compared with what
the test will write before anything is made, and named when a write failed on a full disk
(``nas: /srv/v1 is full (0 B free)``, not a closed socket or an empty error).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasplan import platforms
from nasplan.measure.kind import PROBE_CANNOT_TELL, Probe
from nasplan.remote.runner import Runner

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
from nasplan.units import format_free

# Less than this free after a failed write: the disk is full (what failed was its last bytes).
FULL_BYTES = 1 << 20
# The client's temp dir, as the transfer's set-up script makes it (``$TMPDIR``, else /tmp).
CLIENT_TMP = "${TMPDIR:-/tmp}"


@dataclass(frozen=True)
class Need:
    """What a test writes in one place of one host, and why (``its source file``)."""

    host: str
    path: str
    bytes: int
    what: str


def free_bytes(runner: Runner, path: str) -> tuple[str, int] | None:
    """(the mount point's directory as asked, its free bytes) of ``path`` or its nearest
    existing parent; None when df cannot tell (a host without it, a path it cannot read)."""
    script = (
        f"p={_place(path)}\n"
        'while [ ! -e "$p" ] && [ "$p" != / ]; do p=$(dirname -- "$p"); done\n'
        'printf \'%s\\n\' "$p"; df -P -k -- "$p" 2>/dev/null | tail -n 1\n'
    )
    try:
        result = runner.run_script(script, timeout_s=20)
    except Exception:  # a host that went away: no answer is no refusal
        return None
    lines = result.stdout.strip().splitlines()
    fields = lines[-1].split() if len(lines) >= 2 else []
    if len(fields) < 4 or not fields[3].isdigit():
        return None
    return lines[0], int(fields[3]) * 1024


def _place(path: str) -> str:
    """``path`` as shell text: the client's temp dir as the expression it is, any other quoted."""
    return path if path == CLIENT_TMP else shlex.quote(path)


# what ``fit_lines`` prints of a place the test does not fit: its index, free KiB, directory
SHORT_MARK = "NASPLAN_SHORT="


def _places(needs: Sequence[Need]) -> list[tuple[str, str, int, str]]:
    """(host, path, bytes wanted, what) of each place, in host and path order."""
    totals: dict[tuple[str, str], list[Need]] = {}
    for need in needs:
        totals.setdefault((need.host, need.path), []).append(need)
    return [
        (
            host,
            path,
            sum(n.bytes for n in listed),
            " and ".join(dict.fromkeys(n.what for n in listed)),
        )
        for (host, path), listed in sorted(totals.items())
    ]


def fit_lines(needs: Sequence[Need]) -> str:
    """POSIX sh, to run first in the script that makes or records what the test writes (no round
    trip of its own): each place's free space (``df -P -k`` of it or its nearest existing parent)
    against what the test writes there; prints a SHORT_MARK line for each place that does not
    fit, then exits 1; a place df cannot read passes. Empty without needs."""
    if not needs:
        return ""
    lines = ["nasplan_short="]
    for index, (_, path, wanted, _) in enumerate(_places(needs)):
        lines += [
            f"nasplan_fit={_place(path)}",
            'while [ ! -e "$nasplan_fit" ] && [ "$nasplan_fit" != / ]; do '
            'nasplan_fit=$(dirname -- "$nasplan_fit"); done',
            'set -- $(df -P -k -- "$nasplan_fit" 2>/dev/null | tail -n 1)',
            f'case ${{4:-x}} in *[!0-9]*) ;; *) [ "$(($4 * 1024))" -ge {wanted} ] || '
            f'{{ echo "{SHORT_MARK}{index} $4 $nasplan_fit"; nasplan_short=1; }} ;; esac',
        ]
    lines.append('[ -z "$nasplan_short" ] || exit 1')
    return "\n".join(lines) + "\n"


def said_short(needs: Sequence[Need], stdout: str) -> list[str]:
    """One line per place ``fit_lines`` found too small: ``ws: /tmp has 12.0 MiB free, the test
    writes 24.0 MiB there (its source file and a read's copy); nothing was made``."""
    places = _places(needs)
    problems = []
    for line in stdout.splitlines():
        if not line.startswith(SHORT_MARK):
            continue
        index, free_kib, where = [*line[len(SHORT_MARK) :].split(" ", 2), "", ""][:3]
        if not index.isdigit() or int(index) >= len(places) or not free_kib.isdigit():
            continue
        host, _, wanted, what = places[int(index)]
        problems.append(
            f"{host}: {where} has {format_free(int(free_kib) * 1024)} free, the test writes "
            f"{format_free(wanted)} there ({what}); nothing was made"
        )
    return problems


def full_disk(runner: Runner, host: str, path: str) -> str | None:
    """``nas: /srv/v1 is full (0 B free)`` when ``path``'s file system is (next to) full."""
    found = free_bytes(runner, path)
    if found is None or found[1] >= FULL_BYTES:
        return None
    return f"{host}: {found[0]} is full ({format_free(found[1])} free)"


def directory_of(path: str | None) -> str | None:
    """The directory a copy's path lies in (``/srv/v1`` of ``/srv/v1/nasplan-x.bin``)."""
    return posixpath.dirname(path.rstrip("/")) or "/" if path else None


def probes(needs: list[Need]) -> list[Probe]:
    """``apply --check``: each place's free space against what the test writes there, read
    with df (nothing written); a host without df cannot tell."""
    found = []
    for host, path, wanted, what in _places(needs):
        shown = "/tmp" if path == CLIENT_TMP else path  # ($TMPDIR, where a host sets it)
        script = (
            f"p={_place(path)}\n"
            'while [ ! -e "$p" ] && [ "$p" != / ]; do p=$(dirname -- "$p"); done\n'
            f'set -- $(df -P -k -- "$p" 2>/dev/null | tail -n 1) || exit {PROBE_CANNOT_TELL}\n'
            f"case ${{4:-x}} in *[!0-9]*) exit {PROBE_CANNOT_TELL} ;; esac\n"
            f'[ "$(($4 * 1024))" -ge {wanted} ] && exit 0\n'
            'echo "$p has $4 KiB free"; exit 1\n'
        )
        found.append(
            Probe(
                host,
                f"free space in {shown} for {format_free(wanted)}",
                script,
                f"{host}: the test writes {format_free(wanted)} in {shown} ({what}), more than "
                "it has free",
            )
        )
    return found


def full_tmps(sessions: Mapping[str, HostSession], names: Iterable[str]) -> list[str]:
    """``nas: /tmp is full (0 B free)`` for each of these hosts whose /tmp is (a test that
    failed there: what nasplan and its tools write in /tmp could not be written)."""
    said = []
    for name in names:
        session = sessions.get(name)
        if session is None or session.lost or session.runner is None:
            continue
        runner = session.runner
        if not platforms.of(runner).posix_shell:  # the free-space script is POSIX sh
            continue
        named = full_disk(runner, name, "/tmp")
        if named is not None:
            said.append(named)
    return said
