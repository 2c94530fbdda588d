"""`kind: disk-profile`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure import through
from nasplan.measure.kinds.disk_profile import profiles as fio_profiles
from nasplan.measure.kinds.disk_profile.profiles import Job
from nasplan.units import parse_size


@dataclass(frozen=True)
class ProfileSettings:
    """A disk-profile test's settings, each default stated here once."""

    host: str
    path: str
    volume: str | None = None
    profile: str = "crystaldiskmark"
    # jobs of the plan's own instead of a named profile's: {block_size, queue_depth, threads,
    # pattern: sequential | random}
    jobs: tuple[Job, ...] = ()
    modes: tuple[str, ...] = ("read", "write")
    read_percent: int = fio_profiles.MIX_READ_PERCENT
    size: str | int = "1GiB"  # CrystalDiskMark's default test file
    duration_s: int = 5  # CrystalDiskMark's default measure time
    through: through.Through | None = None  # on a client through the NAS's share

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)

    @property
    def grid(self) -> tuple[Job, ...]:
        return self.jobs or fio_profiles.PROFILES[self.profile]
