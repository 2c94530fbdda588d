"""Findings on runs too short to trust: a repetition under analysis.MIN_TRUSTED_S seconds.

A copy of well under a second is mostly connection set-up, a login and TCP slow start: its rate
reads low, and two such runs compared say more about the set-up than the link.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S
from nasplan.diagnose.common import finding
from nasplan.measure import kinds

CAUSE = "short-run"


def _directions(test: Mapping[str, Any]) -> list[str | None]:
    named = sorted({r["direction"] for r in test.get("repetitions") or [] if r.get("direction")})
    return list(named) or [None]


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One finding per test and direction with ok repetitions under MIN_TRUSTED_S."""
    found = []
    for test in run.get("tests") or []:
        kind = kinds.readout(test)
        for direction in _directions(test):
            short = kind.short_durations(test, direction)
            if not short:
                continue
            total = _timed(test, direction)
            low, high = f"{min(short):.2f}", f"{max(short):.2f}"
            spread = f"{low}–{high} s" if low != high else f"{low} s"
            start = kind.short_start
            text = (
                f"{len(short)} of {total} {f'{direction} ' if direction else ''}repetitions took "
                f"under {MIN_TRUSTED_S:g} s ({spread}): {start} weighs on so short a run and its "
                f"rate reads low; {kind.short_advice(test, direction)}."
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
