"""How a disk-profile record reads, from run.json alone: its grid (the medians of each job and
mode's ok repetitions, from the repetitions themselves: a record checkpointed mid-grid has no
``grid`` of its own yet), where fio ran, and what its section of report.md (``section.md.j2``
beside it) shows."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure.kind import DASH, Record
from nasplan.measure.kinds.disk_profile import profiles as fio_profiles
from nasplan.units import decimals


def cell_of(reps: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A grid cell: the medians of its ok repetitions, None without any."""
    ok = [r for r in reps if r.get("status") == "ok"]
    if not ok:
        return None

    def median(key: str) -> float | None:
        values = [float(r[key]) for r in ok if isinstance(r.get(key), (int, float))]
        return statistics.median(values) if values else None

    keys = ("bytes_per_second", "iops", "latency_p50_us", "latency_p99_us", "latency_p999_us")
    return {key: median(key) for key in keys} | {"n": len(ok)}


def job_modes(record: Record) -> tuple[list[str], list[str]]:
    """The record's jobs and modes in the profile's order (its params'), then any other its
    repetitions have: a resumed run's merged repetitions are in no such order."""
    params = record.get("params") or {}
    reps = record.get("repetitions") or []
    jobs = dict.fromkeys(
        [*map(str, params.get("jobs") or ()), *(str(r.get("profile_job")) for r in reps)]
    )
    modes = dict.fromkeys(
        [*map(str, params.get("modes") or ()), *(str(r.get("direction")) for r in reps)]
    )
    return list(jobs), list(modes)


def grid(record: Record) -> list[dict[str, Any]]:
    """The grid in the shape the benchmarks print it: a row per job that ran, in the profile's
    order, a cell per mode (``cell_of``; None where that mode did not run or failed)."""
    reps = record.get("repetitions") or []
    modes = list((record.get("params") or {}).get("modes") or fio_profiles.MODES)
    ran = {str(r.get("profile_job")) for r in reps}
    jobs = [job for job in job_modes(record)[0] if job in ran]
    return [
        {
            "job": job,
            "cells": {
                mode: cell_of(
                    [r for r in reps if (r.get("profile_job"), r.get("direction")) == (job, mode)]
                )
                for mode in modes
            },
        }
        for job in jobs
    ]


def where(record: Record) -> str:
    """Where fio ran: ``nas /srv/v1 (volume v1)``, or through a share ``ws through SMB
    //198.18.1.1/v1 mounted with smbnetfs (FUSE) of nas`` (of ``nas.p2p10``: its target's)."""
    params = record.get("params") or {}
    host = params.get("host") or DASH
    on = f" (volume {params['volume']})" if params.get("volume") else ""
    via = params.get("through") or {}
    if via:
        mounted = via.get("mounted") or f"{via.get('method')} {via.get('share')}"
        return f"{via.get('client')} through {mounted} of {via.get('target') or host}{on}"
    return f"{host} {params.get('path') or ''}".strip() + on


def view(tests: Sequence[Record]) -> dict[str, Any]:
    """What ``section.md.j2`` shows: the tests, as run.json has them, each with where it ran
    and its grid as its repetitions make it."""
    shown = [{**test, "where": where(test), "grid": grid(test)} for test in tests]
    return {"tests": shown, "mb": mb_text}


def mb_text(bytes_per_second: float) -> str:
    """A grid cell as the benchmarks print it: MB/s (10^6 bytes/s), two decimals (a slow
    random write's 0.0038, never 0.00)."""
    return decimals(bytes_per_second / 1e6, 2)
