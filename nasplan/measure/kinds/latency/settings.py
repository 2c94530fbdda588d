"""`kind: latency`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure.tools import ping


@dataclass(frozen=True)
class LatencySettings:
    """A latency test's settings: one ping run's parameters, and whether to probe the path MTU."""

    params: ping.PingParams
    mtu_probe: bool = True
