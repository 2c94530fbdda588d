"""Every plan kind, by the name a plan gives it (``kind: iperf3``): the explicit registry."""

from __future__ import annotations

from typing import Any

from nasplan.measure.kind import BoundTest, Kind
from nasplan.measure.kinds import disk, iperf3, iscsi, latency, transfer

KINDS: dict[str, Kind[Any]] = {
    kind.name: kind for kind in (iperf3.KIND, transfer.KIND, latency.KIND, disk.KIND, iscsi.KIND)
}


def bind(test: Any) -> BoundTest:
    """``test`` (a ``PlanTest``) bound to its kind with its settings parsed."""
    return KINDS[test.kind].bind(test)
