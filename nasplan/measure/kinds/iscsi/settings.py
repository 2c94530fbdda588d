"""`kind: iscsi`'s settings as the plan gives them, each default stated here once."""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.measure.kinds.iscsi import initiator as iscsi
from nasplan.measure.series import directions_asked
from nasplan.units import parse_size

SETUP_TIMEOUT_S = 60.0
# Slowest rate a repetition may take before it is killed: 0.5 MB/s (10^6 bytes/s).
SLOWEST_BYTES_PER_SECOND = 500_000


@dataclass(frozen=True)
class IscsiSettings:
    """An iscsi test's settings as the plan gives them, each default stated here once."""

    iqn: str
    lun: int
    scratch: bool = False
    direction: str = "both"
    size: str | int = "64MiB"
    request_size: str | int = "1MiB"
    queue_depth: int = 8
    port: int = iscsi.DEFAULT_PORT
    chap_user: str | None = None
    chap_secret_env: str | None = None

    @property
    def directions(self) -> tuple[str, ...]:
        return directions_asked(self.direction)

    @property
    def size_bytes(self) -> int:
        return parse_size(self.size)

    @property
    def request_bytes(self) -> int:
        return parse_size(self.request_size)

    @property
    def timeout_s(self) -> float:
        return SETUP_TIMEOUT_S + self.size_bytes / SLOWEST_BYTES_PER_SECOND
