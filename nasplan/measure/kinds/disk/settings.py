"""`kind: disk`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure.series import directions_asked
from nasplan.units import parse_size


@dataclass(frozen=True)
class DiskSettings:
    """A disk test's settings: where fio writes, which directions, how much, how."""

    host: str
    path: str
    # the inventory's volume the path lies on (``volume:``, or found from the path)
    volume: str | None = None
    direction: str = "both"
    size: str | int = "64MiB"
    direct: bool = True
    fallback_buffered: bool = True
    duration_s: int = 10  # diskspd (Windows) runs for a time; fio writes ``size`` once

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)

    @property
    def directions(self) -> tuple[str, ...]:
        return directions_asked(self.direction)
