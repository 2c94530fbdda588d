"""The causes only a kind can tell, asked of each kind in the run (``Readout.causes``).

A kind's own diagnosis lives in its folder under measure/kinds/ (iperf3's per-stream findings in
``kinds/iperf3/streams.py``), beside the records it reads: diagnose/ stands a floor above
measure/, so it asks the kinds and lends them what it knows of a host's CPU
(``cpu.saturated_core``), and no module of measure/ imports diagnose/.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.diagnose import cpu
from nasplan.measure import kinds


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each kind's causes in ``run``, the kinds in the report's order."""
    present = {str(test.get("kind")) for test in run.get("tests") or []} & kinds.MODULES.keys()
    found: list[dict[str, Any]] = []
    for name in sorted(present, key=kinds.position):
        found.extend(kinds.kind(name).causes(run, cpu.saturated_core))
    return found
