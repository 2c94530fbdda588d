"""The ``disk`` test kind on a Windows host: diskspd instead of fio, in a directory of its own.

Called by ``disk_test`` when the host speaks PowerShell. Records look like fio's (``direct``
is always true: ``-Sh`` turns the caches off); the directory (``nasplan.measure.diskspd_workdir``)
is removed in ``finally``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from nasplan.errors import CannotStart
from nasplan.measure.diskspd_workdir import Place, private_dir
from nasplan.measure.tools import diskspd
from nasplan.remote.runner import Runner

_TIMEOUT_MARGIN_S = 60.0


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
    reps: list[dict[str, Any]] = []
    errors: list[str] = []
    warnings: list[str] = []
    try:
        with private_dir(Place(runner, path), secrets.token_hex(4), warnings) as workdir:
            for direction, index in plan:
                params = diskspd.DiskspdParams(direction, size_bytes, duration_s)
                argv = diskspd.diskspd_argv(diskspd_path, f"{workdir}\\diskspd.dat", params)
                result = runner.run(argv, timeout_s=duration_s + _TIMEOUT_MARGIN_S)
                rep: dict[str, Any] = {"index": index, "direction": direction}
                rep.update(status="failed", error=None)
                rep["raw_file"] = save(f"{direction}-{index}", result.stdout + result.stderr)
                try:
                    parsed = diskspd.parse(result.stdout)
                    side = parsed[direction]
                except (diskspd.DiskspdError, KeyError) as exc:
                    rep["error"] = f"{exc} (exit {result.exited})"
                    errors.append(f"{direction} {index}: {rep['error']}")
                else:
                    rep.update(status="ok", bytes_per_second=side["bytes_per_second"])
                    rep.update(bytes=side["bytes"], duration_s=parsed["duration_s"], direct=True)
                reps.append(rep)
    except CannotStart as exc:
        return [], [str(exc)], []
    return reps, errors, warnings
