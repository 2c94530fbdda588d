"""What limited each transfer of a run, from the run's own other measurements.

A kind says what its records show the hosts can do (``Readout.capacities``: iperf3 the network
between two hosts, fio a host's disk), and a kind whose copies cross the path judges them
against those (``Readout.annotated``: a bottleneck verdict per direction and a cache warning).
``annotated`` runs once over the finished run's records and returns new records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import CoreLoad, attribute_bottleneck, cache_influence
from nasplan.measure import kinds, together
from nasplan.measure.capacity import DISK, NETWORK, Capacity, best
from nasplan.measure.series import COLD_READ, data_direction


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


def transfer_verdicts(
    record: Mapping[str, Any],
    capacities: Sequence[Capacity],
    label: str,
    memory_bytes: Mapping[str, int | None],
    cpu_shared_with: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """A copy between a client and the NAS (a file, a block range) with ``bottleneck`` (per
    direction: network-, disk-, cpu-, protocol-bound) and ``cache_warning`` set; ``label``:
    what it moved with (``SMB``, ``iSCSI``)."""
    params = record.get("params") or {}
    server, client = str(params.get("server")), str(params.get("client"))
    path = record.get("path") or {}
    resources = record.get("resources") or {}
    cpu = {
        host: (sample or {}).get("cpu_busy_percent_median") for host, sample in resources.items()
    }
    cores: dict[str, CoreLoad] = {
        host: (sample.get("cpu_busiest_core_percent_median"), sample.get("cpu_cores"))
        for host, sample in resources.items()
        if sample
    }
    volume = params.get("volume")
    disk_name = f"volume {volume}'s" if volume else "the NAS's local"
    verdicts: dict[str, Any] = {}
    for direction, summary in sorted((record.get("directions") or {}).items()):
        rate = (summary or {}).get("median")
        if not isinstance(rate, (int, float)):
            continue
        address, way = params.get("address"), data_direction(direction)
        network = best(capacities, NETWORK, server, way, client, address)
        source = "iperf3"
        if network is None:
            network, source = path.get("theoretical_bits_per_second"), "theoretical"
        verdicts[direction] = attribute_bottleneck(
            label=f"{label} {direction}",
            direction=way,
            transfer_bytes_per_second=float(rate),
            network_bits_per_second=network,
            network_source=source,
            path_speed_bits_per_second=path.get("speed_bits_per_second"),
            disk_bytes_per_second=best(capacities, DISK, server, way, volume=volume),
            cpu_busy_percent=cpu,
            cpu_shared_with=cpu_shared_with,
            cpu_cores=cores,
            disk_name=disk_name,
            cache_dropped=direction == COLD_READ,
        )
    out = dict(record)
    out["bottleneck"] = verdicts or None
    size = params.get("size_bytes")
    if isinstance(size, int) and record.get("cache_warning") is None:
        out["cache_warning"] = cache_influence(size, memory_bytes.get(server))
    return out


def together_verdict(
    record: Mapping[str, Any], capacities: Sequence[Capacity], label: str
) -> dict[str, Any]:
    """Clients at once (``clients:``): what limited the whole, per direction
    (``nasplan.measure.together.verdict``): the NAS's link (its own end's TCP maximum, the
    record's ``path``), each client's own link (``paths``), the volume's disks, the NAS's CPU."""
    params = record.get("params") or {}
    server, volume = str(params.get("server")), params.get("volume")
    path, paths = record.get("path") or {}, record.get("paths") or {}
    cpu = ((record.get("resources") or {}).get(server) or {}).get("cpu_busy_percent_median")
    found: dict[str, Any] = {}
    for direction, summary in (record.get("directions") or {}).items():
        median = (summary or {}).get("median")
        shares = ((record.get("together") or {}).get(direction) or {}).get("clients") or {}
        if not isinstance(median, (int, float)) or not shares:
            continue
        scale = 8 if "bytes" in str((summary or {}).get("metric") or "bytes") else 1
        way = data_direction(direction)
        found[direction] = together.verdict(
            what=f"{label} {direction}",
            aggregate_bits_per_second=float(median) * scale,
            nas_link_bits_per_second=path.get("theoretical_bits_per_second"),
            nas_link_name=str(path.get("server_interface") or "link"),
            clients={
                name: (rate * scale, (paths.get(name) or {}).get("theoretical_bits_per_second"))
                for name, rate in shares.items()
            },
            disk_bytes_per_second=best(capacities, DISK, server, way, volume=volume),
            disk_name=f"volume {volume}'s disks" if volume else "the NAS's disks",
            nas_cpu_percent=cpu if isinstance(cpu, (int, float)) else None,
        )
    return found
