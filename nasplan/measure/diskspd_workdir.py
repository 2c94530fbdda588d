"""The directory diskspd works in on a Windows host (the disk and disk-profile kinds), made
fresh under the plan's path and removed when the test ends, in a ``Place``: a directory of the
host's own (``D:\\bench``) or of a NAS's share seen from a Windows client
(``\\\\198.18.1.1\\data\\bench``).

Through a share every script opens it first with ``New-SmbMapping -Persistent $false`` (the
password the script's first line of stdin, never argv or the script) and removes the mapping in
``finally``. Such a mapping lives only in the logon session of nasplan's SSH connection and is
never written to the user's profile: Windows drops it with that session, when a killed
nasplan's connection closes; and a mapping of the share already in the session (left by a
script cut off before its ``finally``: nasplan's own SSH session holds no mapping of the
user's) is removed before the share is opened again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from nasplan.errors import CannotStart
from nasplan.measure.tools.transfer_windows import OPEN_SHARE
from nasplan.remote.runner import Result, Runner
from nasplan.remote.shell import PowerShell

_SETUP_TIMEOUT_S = 60.0

# a leftover mapping of the share in this session is nasplan's own (see the module's words)
_LEFTOVER = "Remove-SmbMapping -RemotePath $share -Force -ErrorAction SilentlyContinue\n"
_BODY = """\
$rc = 0
try {
  $ErrorActionPreference = 'Stop'
@BODY@} catch {
  [Console]::Error.WriteLine("$($_.Exception.Message)")
  $rc = 1
} finally {
  Remove-SmbMapping -RemotePath $share -Force -ErrorAction SilentlyContinue
}
exit $rc
"""


def workdir_of(path: str, token: str) -> str:
    """``D:\\bench\\nasplan-diskspd-<token>``."""
    return f"{path.rstrip(chr(92) + '/')}\\nasplan-diskspd-{token}"


def make_dir_script(workdir: str) -> str:
    """PowerShell creating ``workdir`` (and its parents)."""
    return f"New-Item -ItemType Directory -Force -Path {PowerShell().quote(workdir)} | Out-Null"


def remove_dir_script(workdir: str) -> str:
    """PowerShell removing ``workdir`` and everything in it."""
    return f"Remove-Item -LiteralPath {PowerShell().quote(workdir)} -Recurse -Force"


def mapped_script(share: str, user: str, body: str) -> str:
    """PowerShell running ``body`` with ``share`` (``\\\\host\\share``) opened as ``user``, the
    password the first line of stdin; the mapping removed in ``finally``; the body's errors on
    stderr (exit 1), ``$rc`` its exit status (a native program's: ``$rc = $LASTEXITCODE``)."""
    quote = PowerShell().quote
    values = f"$share = {quote(share)}\n$user = {quote(user)}\n"
    return values + _LEFTOVER + OPEN_SHARE + _BODY.replace("@BODY@", body.rstrip("\n") + "\n")


@dataclass(frozen=True)
class Place:
    """Where diskspd works on a Windows host: ``path``, its own directory or a share's UNC
    directory; ``share`` (``\\\\host\\share``): opened as ``user`` around each script."""

    runner: Runner
    path: str
    share: str | None = None
    user: str = ""
    password: str = ""

    def script(self, body: str, timeout_s: float) -> Result:
        """``body`` (PowerShell) run here."""
        if self.share is None:
            return self.runner.run_script(body, timeout_s=timeout_s)
        script = mapped_script(self.share, self.user, body)
        return self.runner.run_script(script, stdin=self.password + "\n", timeout_s=timeout_s)

    def command(self, argv: Sequence[str], timeout_s: float) -> Result:
        """``argv`` (a native program) run here."""
        if self.share is None:
            return self.runner.run(argv, timeout_s=timeout_s)
        return self.script(PowerShell().join(argv) + "\n$rc = $LASTEXITCODE", timeout_s)


def said(result: Result) -> str:
    """What a failed script said: its last line (stderr's, else stdout's), else its status."""
    lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
    return lines[-1].strip() if lines else f"exit {result.exited}"


@contextmanager
def private_dir(place: Place, token: str, warnings: list[str]) -> Iterator[str]:
    """A fresh ``nasplan-diskspd-<token>`` directory in ``place`` for the ``with`` block,
    removed (with what is in it) on every way out; CannotStart when it cannot be made, a
    removal that failed is appended to ``warnings``."""
    workdir = workdir_of(place.path, token)
    made = place.script(make_dir_script(workdir), _SETUP_TIMEOUT_S)
    if not made.ok:
        raise CannotStart(f"cannot create {workdir} on {place.runner.name}: {said(made)}")
    try:
        yield workdir
    finally:
        removed = place.script(remove_dir_script(workdir), _SETUP_TIMEOUT_S)
        if not removed.ok:
            warnings.append(f"could not remove {workdir}: {said(removed)}")
