"""What limited each transfer of a run, from the run's own other measurements.

A kind says what its records show the hosts can do (``Readout.capacities``: iperf3 the network
between two hosts, fio a host's disk), and a kind whose copies cross the path is judged against
those (``Readout.annotated``: a bottleneck verdict per direction and a cache warning,
``nasplan.measure.capacity.judged``). ``annotated`` runs once over the finished run's records
and returns new records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure import kinds


def annotated(
    tests: Sequence[Mapping[str, Any]],
    memory_bytes: Mapping[str, int | None],
    cpu_shared_with: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """The run's records, each transfer's with its verdicts (``Readout.annotated``) from the
    capacities of every record; ``memory_bytes``: host -> RAM; ``cpu_shared_with``: host -> what
    shares its kernel (``analysis.attribute_bottleneck``)."""
    capacities = [c for t in tests for c in kinds.readout(t).capacities(t)]
    return [
        kinds.readout(t).annotated(t, capacities, memory_bytes, cpu_shared_with or {})
        for t in tests
    ]
