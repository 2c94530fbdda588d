"""Every plan kind, by the name a plan gives it (``kind: iperf3``): the explicit registry.

A kind's module is imported when a test of that kind is first bound, not before: a plan of
iperf3 tests does not pay, at every start, for importing the fio, SMB, NFS and iSCSI code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import BoundTest, Kind

# plan name -> module under nasplan/measure/kinds/ whose ``KIND`` it is, in the schema's order
MODULES: dict[str, str] = {
    "iperf3": "iperf3",
    "transfer": "transfer",
    "latency": "latency",
    "disk": "disk",
    "ping-sweep": "ping_sweep",
    "iscsi": "iscsi",
}


def kind(name: str) -> Kind[Any]:
    """The kind a plan names ``name`` (its module imported now if it was not yet)."""
    module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    found: Kind[Any] = module.KIND
    return found


def bind(test: PlanTest) -> BoundTest:
    """``test`` bound to its kind, with its settings parsed."""
    return kind(test.kind).bind(test)
