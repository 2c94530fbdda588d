"""The directory a fio test works in on its host (the disk and disk-profile kinds): where their
settings say it is (``FioPlace``), made fresh under the plan's path and registered in the host's
lock (should the run die, the next one removes it), removed when the test ends."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from nasplan.errors import CannotStart
from nasplan.hosts.lock import PRELUDE
from nasplan.hosts.session import HostSession
from nasplan.measure.record import warn
from nasplan.units import parse_size


@dataclass(frozen=True)
class FioPlace:
    """Where a fio test writes (its kind's settings start with it): the host, the plan's
    directory there, the inventory's volume it lies on (``volume:``, or found from the path),
    and how much (a kind states its own default)."""

    host: str
    path: str
    volume: str | None = None
    size: str | int = "64MiB"

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)


_SETUP_TIMEOUT_S = 60.0
WORKDIR_PREFIX = "nasplan-fio-"
FIO_FILE = "fio.bin"
# $1: the plan's directory, $2: a fresh name. Records $1/$2 in the host's lock, then makes it
# (never an existing one: no -p) and prints its physical path, refusing when that is not the
# new directory itself.
_MAKE_WORKDIR = """\
base=$(cd -P -- "$1" && pwd -P) || exit 3
nasplan_register - - "$base/$2" || exit 3
mkdir -m 700 -- "$base/$2" || exit 3
real=$(cd -P -- "$base/$2" && pwd -P) || exit 3
if [ "$real" != "$base/$2" ]; then
  echo "$base/$2 resolves to $real" >&2; rmdir -- "$base/$2"; exit 4
fi
echo "$real"
"""


def make_workdir(session: HostSession, path: str, token: str) -> str:
    """A fresh test directory under ``path`` on the host: its absolute path; CannotStart.
    Registered in the host's lock: should this run die here, the next run removes it."""
    assert session.runner is not None
    made = session.runner.run_script(
        PRELUDE + f"set -- {shlex.join([path, WORKDIR_PREFIX + token])}\n" + _MAKE_WORKDIR,
        timeout_s=_SETUP_TIMEOUT_S,
    )
    workdir = made.stdout.strip().splitlines()[-1] if made.ok and made.stdout.strip() else ""
    if not made.ok or not workdir.startswith("/"):
        reason = made.stderr.strip() or made.stdout.strip()
        raise CannotStart(
            f"cannot create a test directory in {path} on {session.host.name}: {reason}"
        )
    return workdir


def remove_workdir(session: HostSession, workdir: str, record: dict[str, Any]) -> None:
    """Remove the test directory; a warning of the test when it cannot."""
    assert session.runner is not None
    removed = session.runner.run(["rm", "-rf", "--", workdir], timeout_s=_SETUP_TIMEOUT_S)
    if not removed.ok:
        warn(record, f"could not remove {workdir}: {removed.stderr.strip()}")
