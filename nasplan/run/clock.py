"""A run's time on the control node (``RunClock``): its start stamped by the wall clock, its
length counted by the monotonic clock, and a step of the wall clock between them noticed.

The wall clock only stamps: ``finished_at`` is the start's stamp plus the monotonic time, so it
never comes before ``started_at`` and the run's time (``duration_s``) is what passed, whatever
NTP or a user did to the wall clock meanwhile. A difference between the two clocks' elapsed
times beyond ``STEP_S`` is a step of the wall clock, noted in run.json (``clock_steps``) and
said in its warnings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

# a wall clock that differs from the monotonic clock by more than this stepped (NTP slews both
# alike; ntpd and chrony step only past 0.128 s, most setups past a second)
STEP_S = 1.0


def _wall() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class RunClock:
    """One session of a run (an apply, or each ``--resume``): both clocks read at its start."""

    wall: Callable[[], datetime] = _wall
    monotonic: Callable[[], float] = time.monotonic
    started: datetime = field(init=False)
    _started_s: float = field(init=False)

    def __post_init__(self) -> None:
        self._started_s = self.monotonic()
        self.started = self.wall()

    def elapsed_s(self) -> float:
        """Seconds since the session began, on the monotonic clock."""
        return max(self.monotonic() - self._started_s, 0.0)

    def ended(self, before: Mapping[str, Any]) -> dict[str, Any]:
        """run.json's keys at the session's end: ``finished_at`` (the start's stamp plus the
        monotonic time), ``duration_s`` (``before``'s, a resumed run's earlier sessions, plus
        this one's), ``clock_steps`` (``before``'s and this session's, when its wall clock
        stepped)."""
        elapsed = self.elapsed_s()
        finished = self.started + timedelta(seconds=elapsed)
        step_s = (self.wall() - self.started).total_seconds() - elapsed
        earlier = before.get("duration_s")
        total = (earlier if isinstance(earlier, (int, float)) else 0.0) + elapsed
        out: dict[str, Any] = {"finished_at": iso(finished), "duration_s": round(total, 3)}
        steps = list(before.get("clock_steps") or [])
        if abs(step_s) > STEP_S:
            steps.append({"step_s": round(step_s, 3), "at": iso(finished)})
        if steps:
            out["clock_steps"] = steps
        return out


def step_text(step_s: float) -> str:
    """The warning a step of the control node's wall clock leaves in run.json."""
    return (
        f"the control node's wall clock stepped {step_s:+.1f} s during the run: its times "
        "(the run's, each test's) were counted on its monotonic clock"
    )


def iso(moment: datetime) -> str:
    """``2026-11-30T17:30:00Z``: a UTC stamp to the second."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
