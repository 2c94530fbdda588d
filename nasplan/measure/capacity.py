"""What a run measured its hosts can carry (``Capacity``): the network between two hosts, a
host's disk; a copy between a client and the NAS judged against them (``judged``: what limited
each direction, and whether the NAS's cache may have served it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S, CoreLoad, TransferFigures, cache_influence
from nasplan.input.inventory import Host
from nasplan.measure import together
from nasplan.measure.series import COLD_READ, data_direction

NETWORK, DISK = "network", "disk"


@dataclass(frozen=True)
class Capacity:
    """What the run measured one part of a path can carry, in one direction (``write``: towards
    the NAS): the network from ``client`` to ``host`` at ``address`` (bit/s), or ``host``'s
    own disk (bytes/s; ``client`` and ``address`` None), on ``volume`` when the disk test was
    on a volume the inventory names (a transfer to that volume is judged against it alone).
    ``stated``: where a figure the run did not measure comes from, in words (``the
    inventory's rate``: a volume's ``rate``); a measured one is taken before it."""

    what: str
    host: str
    direction: str
    value: float
    client: str | None = None
    address: str | None = None
    volume: str | None = None
    stated: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What the whole run says of its hosts, against which each copy is judged: the
    ``capacities`` its records show (and the inventory states), what each host's page cache can
    hold (``memory_bytes``: its RAM, or a lower memory limit) and what shares each host's kernel
    (``cpu_shared_with``: ``analysis.TransferFigures``)."""

    capacities: Sequence[Capacity]
    memory_bytes: Mapping[str, int | None]
    cpu_shared_with: Mapping[str, Sequence[str]]


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
    found = _found(capacities, what, host, direction, client, address, volume)
    return found[0] if found else None


def best_disk(
    capacities: Sequence[Capacity], host: str, direction: str, volume: str | None
) -> tuple[float, str] | None:
    """``host``'s disk on ``volume`` in ``direction``: the highest figure the run measured
    (``fio``), else the one stated (the inventory's rate, and those words); None without any."""
    return _found(capacities, DISK, host, direction, None, None, volume)


def _found(
    capacities: Sequence[Capacity],
    what: str,
    host: str,
    direction: str,
    client: str | None,
    address: str | None,
    volume: str | None,
) -> tuple[float, str] | None:
    matching = [
        c
        for c in capacities
        if (c.what, c.host, c.direction) == (what, host, direction)
        and (c.volume == volume if what == DISK else (c.client, c.address) == (client, address))
    ]
    measured = [c.value for c in matching if c.stated is None]
    if measured:
        return max(measured), "fio" if what == DISK else "iperf3"
    stated = [c for c in matching if c.stated is not None]
    if not stated:
        return None
    top = max(stated, key=lambda c: c.value)
    return top.value, str(top.stated)


def stated_volumes(hosts: Iterable[Host]) -> list[Capacity]:
    """The hosts' volumes' sequential rates the inventory states (``rate``, or ``read_rate``
    and ``write_rate``) as disk capacities each way, named ``the inventory's rate``."""
    return [
        Capacity(DISK, host.name, way, float(rate), volume=name, stated="the inventory's rate")
        for host in hosts
        for name, volume in host.volumes.items()
        for way in ("write", "read")
        if (rate := volume.rate(way))
    ]


def judged(record: Mapping[str, Any], label: str, evidence: Evidence) -> dict[str, Any]:
    """A copy between a client and the NAS (a file, a block range) with ``bottleneck`` (per
    direction: network-, disk-, cpu-, protocol-bound, cache-served, faster-than-disk) and
    ``cache_warning`` set; ``label``: what it moved with (``SMB``, ``iSCSI``). A copy on a
    volume is judged against that volume's disk alone (fio's, else its stated rate); a cold
    read is a read, its cache dropped before it; a rate above the disk's is cache-served only
    when what the NAS's page cache can hold explains it."""
    capacities, memory_bytes = evidence.capacities, evidence.memory_bytes
    params = record.get("params") or {}
    server, client = str(params.get("server")), str(params.get("client"))
    path = record.get("path") or {}
    cpu, cores = _cpu(record.get("resources") or {})
    volume = params.get("volume")
    disk_name = f"volume {volume}'s" if volume else "the NAS's local"
    limited = (record.get("cache") or {}).get("server_memory_limit_bytes")
    size = params.get("size_bytes")
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
        disk = best_disk(capacities, server, way, volume)
        verdicts[direction] = TransferFigures(
            label=f"{label} {direction}",
            direction=way,
            transfer_bytes_per_second=float(rate),
            network_bits_per_second=network,
            network_source=source,
            path_speed_bits_per_second=path.get("speed_bits_per_second"),
            disk_bytes_per_second=disk[0] if disk else None,
            cpu_busy_percent=cpu,
            cpu_shared_with=evidence.cpu_shared_with,
            cpu_cores=cores,
            disk_name=disk_name,
            cache_dropped=direction == COLD_READ,
            disk_source=disk[1] if disk else "fio",
            moved_bytes=size if isinstance(size, int) else None,
            cache_bytes=memory_bytes.get(server),
            cache_name="memory limit" if limited else "RAM",
        ).attribute_bottleneck()
    out = dict(record)
    out["bottleneck"] = verdicts or None
    if isinstance(size, int) and record.get("cache_warning") is None:
        name = "memory limit" if limited else "RAM"
        out["cache_warning"] = _cache_warning(record, size, memory_bytes.get(server), name)
    return out


def _cache_warning(
    record: Mapping[str, Any], size: int, memory: int | None, name: str
) -> dict[str, Any] | None:
    """``analysis.cache_influence`` of a copy of ``size`` bytes on a NAS whose cache holds
    ``memory`` (its ``name``: RAM, memory limit)."""
    # the size it asks for lasts MIN_TRUSTED_S at the faster direction too: one answer
    rates = [v.get("median") for v in (record.get("directions") or {}).values() if v]
    fastest = max((r for r in rates if isinstance(r, (int, float))), default=0.0)
    return cache_influence(size, memory, at_least_bytes=fastest * MIN_TRUSTED_S, memory_name=name)


def _cpu(
    resources: Mapping[str, Any],
) -> tuple[dict[str, float | None], dict[str, CoreLoad]]:
    """Each host's median CPU busy %, and its busiest core's with its cores."""
    cpu = {
        host: (sample or {}).get("cpu_busy_percent_median") for host, sample in resources.items()
    }
    cores: dict[str, CoreLoad] = {
        host: (sample.get("cpu_busiest_core_percent_median"), sample.get("cpu_cores"))
        for host, sample in resources.items()
        if sample
    }
    return cpu, cores


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
            disk_bytes_per_second=(
                best_disk(capacities, server, data_direction(direction), volume) or (None,)
            )[0],
            disk_name=f"volume {volume}'s disks" if volume else "the NAS's disks",
            nas_cpu_percent=cpu if isinstance(cpu, (int, float)) else None,
        )
    return found
