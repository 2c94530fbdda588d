"""Every plan kind, by the name a plan gives it (``kind: iperf3``): the explicit registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nasplan.measure.kind import BoundTest, Kind
from nasplan.measure.kinds import disk, iperf3, iscsi, latency, ping_sweep, transfer

if TYPE_CHECKING:
    from nasplan.plan import PlanTest

KINDS: dict[str, Kind[Any]] = {
    kind.name: kind
    for kind in (iperf3.KIND, transfer.KIND, latency.KIND, disk.KIND, ping_sweep.KIND, iscsi.KIND)
}


def bind(test: PlanTest) -> BoundTest:
    """``test`` bound to its kind, with its settings parsed."""
    return KINDS[test.kind].bind(test)
