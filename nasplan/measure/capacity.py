"""What a run measured its hosts can carry (``Capacity``): the network between two hosts, a
host's disk; a copy between a client and the NAS judged against them (``judged``: what limited
each direction, and whether the NAS's cache may have served it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S, CoreLoad, attribute_bottleneck, cache_influence
from nasplan.measure import together
from nasplan.measure.series import COLD_READ, data_direction

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


def judged(
    record: Mapping[str, Any],
    capacities: Sequence[Capacity],
    label: str,
    memory_bytes: Mapping[str, int | None],
    cpu_shared_with: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """A copy between a client and the NAS (a file, a block range) with ``bottleneck`` (per
    direction: network-, disk-, cpu-, protocol-bound, cache-served) and ``cache_warning`` set;
    ``label``: what it moved with (``SMB``, ``iSCSI``). A copy on a volume is judged against
    that volume's disk alone; a cold read is a read, its cache dropped before it."""
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
        # the size it asks for lasts MIN_TRUSTED_S at the faster direction too: one answer
        rates = [v.get("median") for v in (record.get("directions") or {}).values() if v]
        fastest = max((r for r in rates if isinstance(r, (int, float))), default=0.0)
        out["cache_warning"] = cache_influence(
            size, memory_bytes.get(server), at_least_bytes=fastest * MIN_TRUSTED_S
        )
    return out


def judged_together(
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
        found[direction] = together.verdict(
            what=f"{label} {direction}",
            aggregate_bits_per_second=float(median) * 8,
            nas_link_bits_per_second=path.get("theoretical_bits_per_second"),
            nas_link_name=str(path.get("server_interface") or "link"),
            clients={
                name: (rate * 8, (paths.get(name) or {}).get("theoretical_bits_per_second"))
                for name, rate in shares.items()
            },
            disk_bytes_per_second=best(
                capacities, DISK, server, data_direction(direction), volume=volume
            ),
            disk_name=f"volume {volume}'s disks" if volume else "the NAS's disks",
            nas_cpu_percent=cpu if isinstance(cpu, (int, float)) else None,
        )
    return found
