"""`kind: ping-sweep`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SweepSettings:
    """A sweep's sizes (IPv4 packet bytes, ascending), pings per size, and the MTU expected."""

    sizes_bytes: tuple[int, ...] = (1500, 9000)
    count: int = 2
    interval_s: float = 0.2
    expect_mtu_bytes: int | None = None
