"""Analysis: TCP line rate, repetition statistics, bottlenecks, cache influence: pure functions."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.units import MIB_BYTES, format_bytes_per_second

# spread_ratio above which repetitions disagree enough for the report to say so (10 %).
WIDE_SPREAD_RATIO = 0.10

# Per-packet overhead, in bytes. Payload per packet: MTU - 20 (IPv4) - 20 (TCP) - 12 (timestamps
# option, on by default in Linux). On the wire: MTU + 14 (Ethernet header) + 4 (FCS) + 8 (preamble
# and start delimiter) + 12 (inter-frame gap). tc shapes what the kernel hands the device:
# MTU + 14 Ethernet header only.
TCP_IPV4_HEADER_BYTES = 52
# A UDP datagram's payload: MTU - 20 (IPv4) - 8 (UDP).
UDP_IPV4_HEADER_BYTES = 28
FRAME_OVERHEAD_BYTES: dict[str, int] = {"ethernet": 38, "tc": 14}


def theoretical_tcp_bits_per_second(
    speed_bits_per_second: float, mtu_bytes: int, framing: str = "ethernet"
) -> float:
    """Highest TCP goodput over IPv4 with TCP timestamps, e.g. 941.48e6 at 1G/1500 ethernet.

    ``framing="tc"`` is a link shaped by tc in the lab (no preamble, FCS or inter-frame gap).
    """
    return _payload_rate(speed_bits_per_second, mtu_bytes, framing, TCP_IPV4_HEADER_BYTES, "TCP")


def theoretical_udp_bits_per_second(
    speed_bits_per_second: float, mtu_bytes: int, framing: str = "ethernet"
) -> float:
    """Highest UDP payload rate over IPv4 in full-size datagrams, e.g. 957.1e6 at 1G/1500
    ethernet: MTU - 28 bytes of payload per packet for the same bytes on the wire as TCP's."""
    return _payload_rate(speed_bits_per_second, mtu_bytes, framing, UDP_IPV4_HEADER_BYTES, "UDP")


def _payload_rate(
    speed_bits_per_second: float, mtu_bytes: int, framing: str, header_bytes: int, protocol: str
) -> float:
    """The payload rate of full-size packets, ``header_bytes`` of each not payload."""
    if framing not in FRAME_OVERHEAD_BYTES:
        raise ValueError(f"unknown framing {framing!r} (expected ethernet or tc)")
    if mtu_bytes <= header_bytes:
        raise ValueError(f"MTU {mtu_bytes} bytes leaves no room for {protocol} payload")
    payload_bytes = mtu_bytes - header_bytes
    return speed_bits_per_second * payload_bytes / (mtu_bytes + FRAME_OVERHEAD_BYTES[framing])


def summarize(
    values: Sequence[float],
    metric: str = "bits_per_second",
    *,
    threshold: float = WIDE_SPREAD_RATIO,
) -> dict[str, Any]:
    """Statistics of repetition values, as run.json's ``summary``.

    ``{"metric", "n", "min", "median", "mean", "max", "stddev", "spread_ratio", "wide_spread",
    "wide_spread_threshold"}``; stddev is the sample standard deviation (0 for one value);
    numbers are None when ``values`` is empty (and spread_ratio when the median is 0).
    """
    result: dict[str, Any] = {
        "metric": metric,
        "n": len(values),
        "min": None,
        "median": None,
        "mean": None,
        "max": None,
        "stddev": None,
        "spread_ratio": None,
        "wide_spread": False,
        "wide_spread_threshold": threshold,
    }
    if not values:
        return result
    numbers = [float(value) for value in values]
    median = statistics.median(numbers)
    low, high = min(numbers), max(numbers)
    spread_ratio = (high - low) / median if median else None
    result.update(
        min=low,
        median=median,
        mean=statistics.fmean(numbers),
        max=high,
        stddev=statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
        spread_ratio=spread_ratio,
        wide_spread=spread_ratio is not None and spread_ratio > threshold,
    )
    return result


def efficiency(measured: float | None, theoretical: float | None) -> float | None:
    """``measured / theoretical`` (0.976 = 97.6 %); None when either is unknown or zero."""
    if measured is None or not theoretical:
        return None
    return measured / theoretical


def ok_values(
    repetitions: Sequence[Mapping[str, Any]], metric: str = "bits_per_second"
) -> list[float]:
    """The ``metric`` of each repetition with status ok and a value, in order, for summarize()."""
    return [
        float(rep[metric])
        for rep in repetitions
        if rep.get("status") == "ok" and isinstance(rep.get(metric), (int, float))
    ]


# --- repetitions too short to trust ----------------------------------------------------------

# A transfer, iperf3, disk or iSCSI repetition shorter than this is not trusted: connection
# set-up, a login and TCP slow start weigh on its rate (a copy of well under a second looks slow).
MIN_TRUSTED_S = 3.0


def durations_under(
    repetitions: Sequence[Mapping[str, Any]], direction: str | None, min_s: float
) -> list[float]:
    """``duration_s`` of each ok repetition shorter than ``min_s`` (of ``direction`` when given:
    write/read), in order."""
    return [
        float(rep["duration_s"])
        for rep in repetitions
        if rep.get("status") == "ok"
        and (direction is None or rep.get("direction") in (None, direction))
        and isinstance(rep.get("duration_s"), (int, float))
        # to 0.1 s: iperf3 -t 3 may time its data phase at 2.999 s
        and round(rep["duration_s"], 1) < min_s
    ]


# --- bottleneck attribution and cache influence ---------------------------------------------

# A transfer at or above this share of a limit (network path, NAS's local disk) is bound by it.
BOUND_RATIO = 0.85
# A host whose CPU (all cores together) is at least this busy limits the transfer.
CPU_BOUND_PERCENT = 90.0
# A file smaller than this many times the RAM of the host that could cache it is cache-influenced.
CACHE_RAM_FACTOR = 2
_GIB = 2**30
# cache-served: faster than the volume's own disk, so the NAS's RAM served (or took) the data;
# faster-than-disk: faster than the volume's disk too, yet more bytes than the NAS's RAM (or its
# memory limit) could hold: not the NAS's cache (a cache below it, or a disk figure too low)
VERDICTS = (
    "network-bound",
    "disk-bound",
    "cpu-bound",
    "protocol-bound",
    "cache-served",
    "faster-than-disk",
    "unknown",
)
# A rate this far above the disk's measured rate can only have come from (or gone to) RAM.
CACHE_RATIO = 1 / BOUND_RATIO


def _bits_text(bits_per_second: float) -> str:
    if bits_per_second >= 1e9:
        return f"{bits_per_second / 1e9:.1f} Gbit/s"
    return f"{bits_per_second / 1e6:.0f} Mbit/s"


@dataclass(frozen=True, kw_only=True)
class TransferFigures:
    """A file transfer's figures, and what limited it (``attribute_bottleneck``), from the plan's
    own measurements of the same path and NAS.

    ``label`` (``"SMB write"``), ``direction`` (``write``: client -> NAS, ``read``),
    the transfer's rate in bytes/s, the path's network rate in bit/s (``network_source``:
    ``iperf3`` for a measured median, ``theoretical`` for the TCP maximum), the NAS's local
    sequential disk rate for that direction in bytes/s (fio), CPU busy % per host during the
    transfer; ``cpu_shared_with``: host -> what shares its kernel (other hosts, "the machine
    running nasplan"): its CPU figure is then the whole machine's, and the text says so;
    ``cpu_cores``: host -> (its busiest core's busy %, its cores): one saturated core (a
    single-threaded daemon) is cpu-bound too, though the average looks idle.
    ``disk_name``: whose sequential rate the disk figure is (``volume ssd's``); a transfer
    faster than it by CACHE_RATIO went through the NAS's RAM (``cache-served``), also when
    ``cache_dropped`` (a cold read: the text then says the cache was dropped before it).
    ``disk_source``: where the disk figure comes from (``fio``: the run's disk test; else the
    words naming it, ``the inventory's rate``). ``moved_bytes`` (what one repetition moved) and
    ``cache_bytes`` (what the NAS's page cache can hold: its RAM or a lower memory limit,
    ``cache_name``): a rate the cache cannot explain (``cache_explains``) is
    ``faster-than-disk``, not ``cache-served``.
    """

    label: str
    direction: str
    transfer_bytes_per_second: float
    network_bits_per_second: float | None
    network_source: str = "iperf3"
    path_speed_bits_per_second: float | None = None
    disk_bytes_per_second: float | None = None
    cpu_busy_percent: Mapping[str, float | None] | None = None
    cpu_shared_with: Mapping[str, Sequence[str]] | None = None
    cpu_cores: Mapping[str, CoreLoad] | None = None
    disk_name: str = "the NAS's local"
    cache_dropped: bool = False
    disk_source: str = "fio"
    moved_bytes: int | None = None
    cache_bytes: int | None = None
    cache_name: str = "RAM"

    def attribute_bottleneck(self) -> dict[str, Any]:
        """``{"verdict": one of VERDICTS, "text": "...", "evidence": {...}}``, e.g. ``SMB write
        131 MiB/s = 12 % of the 10G path (9.4 Gbit/s) and 98 % of the NAS's local sequential
        write (134 MiB/s): disk-bound``."""
        verdict = self.verdict()
        head = f"{self.label} {format_bytes_per_second(self.transfer_bytes_per_second, 0)}"
        parts = self.parts()
        text = f"{head} = {' and '.join(parts)}: {verdict}" if parts else f"{head}: {verdict}"
        return {"verdict": verdict, "text": text + self.why(verdict), "evidence": self.evidence()}

    @property
    def cpu(self) -> dict[str, float]:
        """Each host's CPU busy %, those measured."""
        busy = (self.cpu_busy_percent or {}).items()
        return {host: value for host, value in busy if value is not None}

    @property
    def shared(self) -> Mapping[str, Sequence[str]]:
        return self.cpu_shared_with or {}

    @property
    def network_ratio(self) -> float | None:
        rate = self.network_bits_per_second
        return self.transfer_bytes_per_second * 8 / rate if rate else None

    @property
    def disk_ratio(self) -> float | None:
        rate = self.disk_bytes_per_second
        return self.transfer_bytes_per_second / rate if rate else None

    @property
    def busiest(self) -> tuple[str, float] | None:
        cpu = self.cpu
        return max(cpu.items(), key=lambda item: item[1]) if cpu else None

    @property
    def core(self) -> str | None:
        """The host one of whose cores was saturated (``saturated_core``)."""
        # a core of a kernel other hosts share (lab namespaces) may be any of theirs: not this one's
        own = {h: load for h, load in (self.cpu_cores or {}).items() if not self.shared.get(h)}
        return saturated_core(own, self.cpu)

    def evidence(self) -> dict[str, Any]:
        cpu = self.cpu
        return {
            "direction": self.direction,
            "transfer_bytes_per_second": self.transfer_bytes_per_second,
            "network_bits_per_second": self.network_bits_per_second,
            "network_source": self.network_source if self.network_bits_per_second else None,
            "network_ratio": self.network_ratio,
            "disk_bytes_per_second": self.disk_bytes_per_second,
            "disk_ratio": self.disk_ratio,
            "disk_source": self.disk_source if self.disk_bytes_per_second else None,
            "moved_bytes": self.moved_bytes,
            "cache_bytes": self.cache_bytes,
            "cpu_busy_percent": dict(sorted(cpu.items())),
            "cpu_whole_machine": sorted(h for h in cpu if self.shared.get(h)),
            "bound_ratio": BOUND_RATIO,
            "cpu_bound_percent": CPU_BOUND_PERCENT,
            "cpu_busiest_core_percent": {
                h: load[0] for h, load in sorted((self.cpu_cores or {}).items())
            },
        }

    def parts(self) -> list[str]:
        """Each limit the transfer is compared with: ``12 % of the 10G path (...)``."""
        parts = []
        network_ratio, network_rate = self.network_ratio, self.network_bits_per_second
        if network_ratio is not None and network_rate is not None:
            path = self.path_speed_bits_per_second
            speed = f"{path / 1e9:g}G " if path else ""
            what = "iperf3" if self.network_source == "iperf3" else "TCP maximum"
            rate = _bits_text(network_rate)
            parts.append(f"{network_ratio * 100:.0f} % of the {speed}path ({what} {rate})")
        disk_ratio, disk_rate = self.disk_ratio, self.disk_bytes_per_second
        if disk_ratio is not None and disk_rate is not None:
            source = "" if self.disk_source == "fio" else f", {self.disk_source}"
            parts.append(
                f"{disk_ratio * 100:.0f} % of {self.disk_name} sequential {self.direction} "
                f"({format_bytes_per_second(disk_rate, 0)}{source})"
            )
        core, busiest = self.core, self.busiest
        if core is not None:
            parts.append(core_text(core, self.cpu_cores or {}, self.cpu))
        elif busiest is not None:
            parts.append(f"CPU {busiest[0]} {busiest[1]:.0f} % busy")
        return parts

    def verdict(self) -> str:
        network_ratio, disk_ratio, busiest = self.network_ratio, self.disk_ratio, self.busiest
        bound = [
            (ratio, verdict)
            for ratio, verdict in ((network_ratio, "network-bound"), (disk_ratio, "disk-bound"))
            if ratio is not None and ratio >= BOUND_RATIO
        ]
        if disk_ratio is not None and disk_ratio >= CACHE_RATIO:
            disk = self.disk_bytes_per_second
            explained = disk is not None and cache_explains(
                self.transfer_bytes_per_second, disk, self.moved_bytes, self.cache_bytes
            )
            return "cache-served" if explained else "faster-than-disk"
        if bound:
            return max(bound)[1]
        if (busiest is not None and busiest[1] >= CPU_BOUND_PERCENT) or self.core is not None:
            return "cpu-bound"
        if network_ratio is None and disk_ratio is None:
            return "unknown"
        return "protocol-bound"

    def why(self, verdict: str) -> str:
        """What the text adds after the verdict: whose CPU it is, why the cache did it or not."""
        text = ""
        busiest = self.busiest
        named = self.core or (busiest[0] if busiest is not None else None)
        if named is not None and (shared := self.shared.get(named)):
            text += (
                f" (CPU {named} is the whole machine's, not {named}'s own: it shares one "
                f"kernel with {', '.join(shared)}, as lab hosts do)"
            )
        if verdict == "cache-served":
            text += _cache_text(self.direction, self.cache_dropped)
        elif verdict == "faster-than-disk":
            text += _beyond_text(
                self.direction, self.moved_bytes, self.cache_bytes, self.cache_name
            )
        elif verdict == "unknown":
            text += " (no network or disk measurement of this path and NAS to compare with)"
        elif verdict == "protocol-bound":
            text += _protocol_bound_text(self.disk_ratio is not None, busiest is not None)
        return text


# host -> (its busiest core's busy %, how many cores it has), either None when unknown.
CoreLoad = tuple[float | None, int | None]


def saturated_core(
    cores: Mapping[str, CoreLoad], average: Mapping[str, float | None]
) -> str | None:
    """The host (busiest first) one of whose cores was at least CPU_BOUND_PERCENT busy while the
    machine as a whole was not (that is cpu-bound anyway), else None."""
    found = [
        (percent, host)
        for host, (percent, _) in cores.items()
        if percent is not None
        and percent >= CPU_BOUND_PERCENT
        and (average.get(host) or 0.0) < CPU_BOUND_PERCENT
    ]
    return max(found)[1] if found else None


def core_text(host: str, cores: Mapping[str, CoreLoad], average: Mapping[str, float | None]) -> str:
    """``one core of nas at 100 % (average 27 % of 4)``."""
    percent, count = cores[host]
    mean = average.get(host)
    of = f" of {count}" if count else ""
    rest = f" (average {mean:.0f} %{of})" if mean is not None else ""
    return f"one core of {host} at {percent or 0:.0f} %{rest}"


def _cache_text(direction: str, dropped: bool) -> str:
    """Why a rate above the disk's is the NAS's RAM, in the direction's terms."""
    if direction == "write":
        return (
            " (faster than the disk can write: the NAS took the file into its RAM, not yet onto "
            "its disks)"
        )
    said = " although its cache was dropped before the read" if dropped else ""
    return f" (faster than the disk can read: served from the NAS's cache{said})"


def cache_explains(
    rate: float, disk: float, moved_bytes: int | None, cache_bytes: int | None
) -> bool:
    """Whether the NAS's page cache can explain a copy at ``rate`` bytes/s over a disk of
    ``disk`` bytes/s: what it moved fits in the cache (``cache_bytes``: its RAM or memory limit;
    either unknown: it may), or the bytes beyond the cache, at the disk's rate (the cache's
    share taken as instant), still last long enough for ``rate`` (with BOUND_RATIO's slack: a
    disk figure is a median)."""
    if moved_bytes is None or cache_bytes is None:
        return True
    if moved_bytes <= cache_bytes:
        return True
    beyond = moved_bytes - cache_bytes
    fastest = disk / BOUND_RATIO * moved_bytes / beyond
    return rate <= fastest


def _beyond_text(
    direction: str, moved_bytes: int | None, cache_bytes: int | None, cache_name: str
) -> str:
    """Why a rate above the disk's is not the NAS's cache: the bytes do not fit in it, so a
    cache below the NAS or a disk faster than its figure did it."""
    verb = "read" if direction == "read" else "write"
    moved = f"{moved_bytes / MIB_BYTES:.0f} MiB" if moved_bytes else "what it moved"
    held = f"{cache_bytes / MIB_BYTES:.0f} MiB" if cache_bytes else "its"
    why = f"the {moved} moved do not fit in the NAS's {held} {cache_name}"
    return (
        f" (faster than the disk can {verb}, yet not from the NAS's cache: {why}; a cache "
        "below the NAS (a hypervisor's, a storage controller's) or a disk faster than its "
        "figure)"
    )


def _protocol_bound_text(disk_measured: bool, cpu_measured: bool) -> str:
    """Only the limits the run measured are named as ones the transfer was well under."""
    limits = ["the network", *(["the disk"] if disk_measured else [])]
    limits += ["the CPU"] if cpu_measured else []
    named = ", ".join(limits[:-1]) + f" and {limits[-1]}" if len(limits) > 1 else limits[0]
    noun = "limits" if len(limits) > 1 else "limit"
    text = f" (well under {named} {noun}: the protocol or client"
    if not disk_measured:
        text += "; no disk test of this NAS in the run, so its disks are not ruled out"
    return text + ")"


def _memory_text(size_bytes: int) -> str:
    """``23.5 GiB``; under a GiB ``128 MiB`` (a memory limit), not ``0.1 GiB``."""
    if size_bytes >= _GIB:
        return f"{size_bytes / _GIB:.1f} GiB"
    return f"{size_bytes / MIB_BYTES:.0f} MiB"


def size_to_use(size_bytes: float) -> int:
    """A size to ask a test for, in bytes, at least ``size_bytes``: a power of two MiB under
    1 GiB (``64 MiB``), whole GiB from there (``48 GiB``)."""
    if size_bytes > _GIB:
        return int(-(-size_bytes // _GIB) * _GIB)
    mib = 1
    while mib * MIB_BYTES < size_bytes:
        mib *= 2
    return mib * MIB_BYTES


def size_text(size_bytes: int) -> str:
    """``64 MiB``, ``48 GiB``: a size_to_use as a plan writes it."""
    if size_bytes >= _GIB:
        return f"{size_bytes / _GIB:g} GiB"
    return f"{size_bytes / MIB_BYTES:g} MiB"


def cache_influence(
    file_bytes: int,
    ram_bytes: int | None,
    direct_io: bool | None = None,
    *,
    at_least_bytes: float = 0.0,
    memory_name: str = "RAM",
) -> dict[str, Any] | None:
    """A cache warning when a file can sit in the page cache of the host that holds it, else None.

    ``direct_io``: True/False for a disk test (False = buffered I/O), None for a transfer.
    ``at_least_bytes``: what a repetition needs to last MIN_TRUSTED_S at its rate, so that the
    size this warning asks for is the one the Diagnosis asks for too (one answer).
    ``memory_name``: what ``ram_bytes`` is (``RAM``, ``memory limit``: a cgroup's below it).
    Returns ``{"reasons": ["small_file", "buffered_io"], "file_bytes", "ram_bytes",
    "suggested_bytes", "text"}``; ``suggested_bytes``: size_to_use of twice the RAM (or of
    ``at_least_bytes``, when more).
    """
    reasons = []
    if ram_bytes and file_bytes < CACHE_RAM_FACTOR * ram_bytes:
        reasons.append("small_file")
    if direct_io is False:
        reasons.append("buffered_io")
    if not reasons:
        return None
    needed = max(CACHE_RAM_FACTOR * ram_bytes, at_least_bytes) if ram_bytes else None
    suggested = size_to_use(needed) if needed else None
    texts = []
    if "small_file" in reasons and ram_bytes and suggested:
        also = f" ({MIN_TRUSTED_S:g} s at its rate too)" if at_least_bytes > 2 * ram_bytes else ""
        texts.append(
            f"the file ({file_bytes / MIB_BYTES:.0f} MiB) is smaller than twice the host's "
            f"{memory_name} ({_memory_text(ram_bytes)}): use at least {size_text(suggested)}{also}"
        )
    if "buffered_io" in reasons:
        texts.append("buffered I/O (direct=0): the page cache is measured along with the disk")
    return {
        "reasons": reasons,
        "file_bytes": file_bytes,
        "ram_bytes": ram_bytes,
        "suggested_bytes": suggested,
        "text": "cache-influenced: " + "; ".join(texts),
    }


def shared_kernels(
    boot_ids: Mapping[str, str | None],
    local_boot_id: str | None,
    local_hosts: Collection[str] = (),
) -> dict[str, list[str]]:
    """host -> what shares its kernel: other hosts with its boot id, and ``the machine running
    nasplan`` when it is the local one's (not for ``local_hosts``, ``connection: local``: that
    machine is the host itself); hosts sharing nothing are left out."""
    found: dict[str, list[str]] = {}
    for host, boot_id in sorted(boot_ids.items()):
        if not boot_id:
            continue
        others = [h for h, b in sorted(boot_ids.items()) if b == boot_id and h != host]
        if boot_id == local_boot_id and host not in local_hosts:
            others.append("the machine running nasplan")
        if others:
            found[host] = others
    return found


# --- rate over time: a fall after the first seconds (a cache filling, then the disk) -----------

# The later rate is at most this share of the earlier one (a drop by a third or more).
FALL_RATIO = 2 / 3
# Points (seconds) the rate must hold before the fall, and after it, to count.
FALL_MIN_BEFORE_POINTS = 2
FALL_MIN_AFTER_POINTS = 2


def _squared_error(values: Sequence[float]) -> float:
    mean = statistics.fmean(values)
    return sum((value - mean) ** 2 for value in values)


def rate_fall(
    t_s: Sequence[float],
    values: Sequence[float | None],
    *,
    ratio: float = FALL_RATIO,
    min_before: int = FALL_MIN_BEFORE_POINTS,
    min_after: int = FALL_MIN_AFTER_POINTS,
) -> dict[str, float] | None:
    """Where a per-second rate series falls for good after its first seconds, else None.

    The series is split in two where two flat levels fit it best (least squares); it fell when
    the later part's median is at most ``ratio`` of the earlier part's, each part has enough
    points and stays on its side of the midpoint between the two. Returns ``{"fell_at_s": t of
    the last point at the earlier rate, "before": median before, "after": median after,
    "ratio": after / before}`` in the units of ``values``, e.g. ``{"fell_at_s": 4.0,
    "before": 63.0e6, "after": 23.0e6, "ratio": 0.37}``.
    """
    points = [(t, float(v)) for t, v in zip(t_s, values, strict=True) if v is not None]
    rates = [v for _, v in points]
    best: tuple[float, int] | None = None
    for split in range(min_before, len(points) - min_after + 1):
        error = _squared_error(rates[:split]) + _squared_error(rates[split:])
        if best is None or error < best[0]:
            best = (error, split)
    if best is None:
        return None
    split = best[1]
    before, after = statistics.median(rates[:split]), statistics.median(rates[split:])
    if before <= 0 or after > ratio * before:
        return None
    # Each side stays on its side of the midpoint (a ramp-up first second and a partial last
    # second aside): a level that held, then another, not a dip or a spike.
    middle = (before + after) / 2
    if any(v <= middle for v in rates[1:split]) or any(v >= middle for v in rates[split:-1]):
        return None
    return {
        "fell_at_s": points[split - 1][0],
        "before": before,
        "after": after,
        "ratio": after / before,
    }


# An interval below this fraction of the repetition's median interval counts as stalled.
STALL_FRACTION = 0.01
# iperf3 may end with a sliver of an interval (a few ms): too short to say anything.
MIN_INTERVAL_S = 0.5


def stall_reason(intervals: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a repetition stalled (intervals at or near 0 bit/s: a link down, a host frozen), or
    None. ``intervals``: rows with ``start_s``, ``end_s``, ``bits_per_second``."""
    rows = [
        (row["start_s"], row["end_s"], float(row["bits_per_second"]))
        for row in intervals
        if row.get("bits_per_second") is not None
        and row.get("start_s") is not None
        and row.get("end_s") is not None
        and row["end_s"] - row["start_s"] >= MIN_INTERVAL_S
    ]
    if not rows:
        return None
    floor = statistics.median(rate for _, _, rate in rows) * STALL_FRACTION
    stalled = [(start, end) for start, end, rate in rows if rate <= floor]
    if not stalled:
        return None
    return (
        f"stalled: {len(stalled)} of {len(rows)} intervals at or near 0 bit/s, from "
        f"{stalled[0][0]:.1f} s to {stalled[-1][1]:.1f} s (a link down or a host not answering)"
    )
