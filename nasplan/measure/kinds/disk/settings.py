"""`kind: disk`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure.fio_workdir import FioPlace
from nasplan.measure.series import directions_asked


@dataclass(frozen=True)
class DiskSettings(FioPlace):
    """A disk test's settings: where fio writes and how much (``FioPlace``: 64 MiB), which
    directions, how."""

    direction: str = "both"
    direct: bool = True
    fallback_buffered: bool = True
    duration_s: int = 10  # diskspd (Windows) runs for a time; fio writes ``size`` once

    @property
    def directions(self) -> tuple[str, ...]:
        return directions_asked(self.direction)
