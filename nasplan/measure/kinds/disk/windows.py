"""The ``disk`` test kind on a Windows host: diskspd instead of fio, in a directory of its own.

Called by ``disk_test`` when the host speaks PowerShell. Records look like fio's (``direct``
is always true: ``-Sh`` turns the caches off); the directory is removed in ``finally``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from nasplan.measure.kinds.disk import diskspd
from nasplan.remote.runner import Runner
from nasplan.remote.shell import PowerShell

_SETUP_TIMEOUT_S = 60.0
_TIMEOUT_MARGIN_S = 60.0


def workdir_of(path: str, token: str) -> str:
    """``D:\\bench\\nasplan-diskspd-<token>``."""
    return f"{path.rstrip(chr(92) + '/')}\\nasplan-diskspd-{token}"


def make_dir_script(workdir: str) -> str:
    """PowerShell creating ``workdir`` (and its parents)."""
    return f"New-Item -ItemType Directory -Force -Path {PowerShell().quote(workdir)} | Out-Null"


def remove_dir_script(workdir: str) -> str:
    """PowerShell removing ``workdir`` and everything in it."""
    return f"Remove-Item -LiteralPath {PowerShell().quote(workdir)} -Recurse -Force"


def run_repetitions(
    runner: Runner,
    diskspd_path: str,
    path: str,
    plan: list[tuple[str, int]],
    size_bytes: int,
    duration_s: int,
    save: Callable[[str, str], str],
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Run ``plan`` ([(direction, index)]) in a private dir under ``path``.

    Returns (repetitions, errors, warnings); ``save(name, raw)`` stores raw output, gives its path.
    """
    workdir = workdir_of(path, secrets.token_hex(4))
    made = runner.run_script(make_dir_script(workdir), timeout_s=_SETUP_TIMEOUT_S)
    if not made.ok:
        return [], [f"cannot create {workdir} on {runner.name}: {made.stderr.strip()}"], []
    reps: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        for direction, index in plan:
            params = diskspd.DiskspdParams(direction, size_bytes, duration_s)
            argv = diskspd.diskspd_argv(diskspd_path, f"{workdir}\\diskspd.dat", params)
            result = runner.run(argv, timeout_s=duration_s + _TIMEOUT_MARGIN_S)
            raw = result.stdout + result.stderr
            rep: dict[str, Any] = {"index": index, "direction": direction, "status": "failed"}
            rep.update(error=None, raw_file=save(f"{direction}-{index}", raw))
            try:
                parsed = diskspd.parse(result.stdout)[direction]
            except (diskspd.DiskspdError, KeyError) as exc:
                rep["error"] = f"{exc} (exit {result.exited})"
                errors.append(f"{direction} {index}: {rep['error']}")
            else:
                rep.update(
                    status="ok",
                    bytes_per_second=parsed["bytes_per_second"],
                    bytes=parsed["bytes"],
                    duration_s=diskspd.parse(result.stdout)["duration_s"],
                    direct=True,
                )
            reps.append(rep)
    finally:
        removed = runner.run_script(remove_dir_script(workdir), timeout_s=_SETUP_TIMEOUT_S)
        warnings = [] if removed.ok else [f"could not remove {workdir}: {removed.stderr.strip()}"]
    return reps, errors, warnings
