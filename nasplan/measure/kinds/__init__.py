"""Every plan kind, by the name a plan gives it (``kind: iperf3``): the explicit registry.

A kind is a folder here (``kinds/iperf3/``: its ``KIND`` in ``__init__.py``, beside everything
only it knows). Its package is imported when a test of that kind is first bound or a record of
it is read, not before: a plan of iperf3 tests does not pay, at every start, for importing the
fio, SMB, NFS and iSCSI code.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nasplan.measure.kind import Readout

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import BoundTest, Kind

# plan name -> folder under nasplan/measure/kinds/ whose ``KIND`` it is, in the order the
# report tells their results and details their tests (each kind's section)
MODULES: dict[str, str] = {
    "iperf3": "iperf3",
    "transfer": "transfer",
    "iscsi": "iscsi",
    "disk": "disk",
    "disk-profile": "disk_profile",
    "latency": "latency",
    "ping-sweep": "ping_sweep",
}


def kind(name: str) -> Kind[Any]:
    """The kind a plan names ``name`` (its module imported now if it was not yet)."""
    module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    found: Kind[Any] = module.KIND
    return found


def readout(record: Mapping[str, Any]) -> Readout:
    """How ``record`` (a run.json test) reads: its kind's, or the defaults for a kind this
    nasplan does not know (a run.json of a later version)."""
    name = str(record.get("kind"))
    return kind(name) if name in MODULES else Readout(name)


def position(name: str) -> int:
    """Where a kind's results stand in the report (an unknown kind's last)."""
    names = list(MODULES)
    return names.index(name) if name in names else len(names)


def bind(test: PlanTest) -> BoundTest:
    """``test`` bound to its kind, with its settings parsed."""
    return kind(test.kind).bind(test)
