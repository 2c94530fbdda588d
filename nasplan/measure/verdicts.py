"""What limited each transfer of a run, from the run's own other measurements.

A kind says what its records show the hosts can do (``Readout.capacities``: iperf3 the network
between two hosts, fio a host's disk), and a kind whose copies cross the path is judged against
those (``Readout.annotated``: a bottleneck verdict per direction and a cache warning,
``nasplan.measure.capacity.judged``); what the inventory states of a volume (its ``rate``)
stands in for a disk test the run did not have. ``annotated`` runs once over the finished
run's records and returns new records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure import kinds
from nasplan.measure.capacity import Capacity, Evidence


def annotated(
    tests: Sequence[Mapping[str, Any]],
    memory_bytes: Mapping[str, int | None],
    cpu_shared_with: Mapping[str, Sequence[str]] | None = None,
    stated: Sequence[Capacity] = (),
) -> list[dict[str, Any]]:
    """The run's records, each transfer's with its verdicts (``Readout.annotated``) from the
    capacities of every record; ``memory_bytes``: host -> what its page cache can hold (its RAM,
    or a lower memory limit); ``cpu_shared_with``: host -> what shares its kernel
    (``analysis.TransferFigures``); ``stated``: capacities the run did not measure (a
    volume's inventory ``rate``: ``capacity.stated_volumes``), a measured one taken first."""
    capacities = [*(c for t in tests for c in kinds.readout(t).capacities(t)), *stated]
    evidence = Evidence(capacities, memory_bytes, cpu_shared_with or {})
    return [kinds.readout(t).annotated(t, evidence) for t in tests]
