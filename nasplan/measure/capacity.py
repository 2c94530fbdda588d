"""What a run measured its hosts can carry (``Capacity``): the network between two hosts, a
host's disk; the limits a transfer's verdict is judged against (``nasplan.measure.verdicts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NETWORK, DISK = "network", "disk"


@dataclass(frozen=True)
class Capacity:
    """What the run measured one part of a path can carry, in one direction (``write``: towards
    the NAS): the network from ``client`` to ``host`` at ``address`` (bit/s), or ``host``'s
    own disk (bytes/s; ``client`` and ``address`` None), on ``volume`` when the disk test was
    on a volume the inventory names (a transfer to that volume is judged against it alone)."""

    what: str
    host: str
    direction: str
    value: float
    client: str | None = None
    address: str | None = None
    volume: str | None = None


def best(
    capacities: Sequence[Capacity],
    what: str,
    host: str,
    direction: str,
    client: str | None = None,
    address: str | None = None,
    volume: str | None = None,
) -> float | None:
    """The highest capacity the run measured for that part of the path, None when none; a
    disk's on ``volume`` (None: a disk test on no named volume)."""
    found = [
        c.value
        for c in capacities
        if (c.what, c.host, c.direction) == (what, host, direction)
        and (c.volume == volume if what == DISK else (c.client, c.address) == (client, address))
    ]
    return max(found) if found else None
