"""Findings on runs too short to trust: a repetition under analysis.MIN_TRUSTED_S seconds.

A copy of well under a second is mostly connection set-up, a login and TCP slow start: its rate
reads low, and two such runs compared say more about the set-up than the link.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S, short_durations
from nasplan.diagnose.common import finding

CAUSE = "short-run"
# What a short run of each kind mostly measures besides its data.
STARTS = {
    "iperf3": "TCP slow start",
    "transfer": "start-up (the connection, a login, TCP slow start)",
    "iscsi": "start-up (the first requests, TCP slow start)",
    "disk": "start-up (opening the file, the first requests)",
}


def _size_text(size_bytes: float) -> str:
    """A size to ask for, rounded up to a power of two: ``64 MiB``, ``2 GiB``."""
    mib = 2 ** max(0, math.ceil(math.log2(max(size_bytes, 1) / 2**20)))
    return f"{mib // 1024} GiB" if mib >= 1024 else f"{mib} MiB"


def _advice(test: Mapping[str, Any], direction: str | None) -> str:
    if test.get("kind") == "iperf3":
        return f"set `duration_s` to {MIN_TRUSTED_S:g} or more"
    summary = ((test.get("directions") or {}).get(direction or "") or test.get("summary")) or {}
    median = summary.get("median")
    if isinstance(median, (int, float)) and median > 0:
        needed = _size_text(median * MIN_TRUSTED_S)
        return f"use a `size` of at least {needed} ({MIN_TRUSTED_S:g} s at its median rate)"
    return f"use a `size` that takes {MIN_TRUSTED_S:g} s or more"


def _directions(test: Mapping[str, Any]) -> list[str | None]:
    named = sorted({r["direction"] for r in test.get("repetitions") or [] if r.get("direction")})
    return list(named) or [None]


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One finding per test and direction with ok repetitions under MIN_TRUSTED_S."""
    found = []
    for test in run.get("tests") or []:
        for direction in _directions(test):
            short = short_durations(test, direction)
            if not short:
                continue
            total = _timed(test, direction)
            low, high = f"{min(short):.2f}", f"{max(short):.2f}"
            spread = f"{low}–{high} s" if low != high else f"{low} s"
            start = STARTS.get(str(test.get("kind")), STARTS["transfer"])
            text = (
                f"{len(short)} of {total} {f'{direction} ' if direction else ''}repetitions took "
                f"under {MIN_TRUSTED_S:g} s ({spread}): {start} weighs on so short a run and its "
                f"rate reads low; {_advice(test, direction)}."
            )
            evidence = {
                "direction": direction,
                "durations_s": short,
                "repetitions": total,
                "min_trusted_s": MIN_TRUSTED_S,
            }
            params = test.get("params") or {}
            host = params.get("client") or params.get("host")
            found.append(finding(CAUSE, test["id"], host, text, evidence))
    return found


def _timed(test: Mapping[str, Any], direction: str | None) -> int:
    """How many ok repetitions of ``direction`` have a duration."""
    return sum(
        1
        for rep in test.get("repetitions") or []
        if rep.get("status") == "ok"
        and (direction is None or rep.get("direction") == direction)
        and isinstance(rep.get("duration_s"), (int, float))
    )
