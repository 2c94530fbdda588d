"""`kind: disk-profile`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure import through
from nasplan.measure.fio_workdir import FioPlace
from nasplan.measure.kinds.disk_profile import profiles as fio_profiles
from nasplan.measure.kinds.disk_profile.profiles import Job


@dataclass(frozen=True)
class ProfileSettings(FioPlace):
    """A disk-profile test's settings (``FioPlace``'s, with a size of its own), each default
    stated here once."""

    size: str | int = "1GiB"  # CrystalDiskMark's default test file
    profile: str = "crystaldiskmark"
    # jobs of the plan's own instead of a named profile's: {block_size, queue_depth, threads,
    # pattern: sequential | random}
    jobs: tuple[Job, ...] = ()
    modes: tuple[str, ...] = ("read", "write")
    read_percent: int = fio_profiles.MIX_READ_PERCENT
    duration_s: int = 5  # CrystalDiskMark's default measure time
    through: through.Through | None = None  # on a client through the NAS's share

    @property
    def grid(self) -> tuple[Job, ...]:
        return self.jobs or fio_profiles.PROFILES[self.profile]
