"""Several clients measured at once (a test's ``clients:``): each repetition's parts combined,
how fairly the clients shared, and what limited the whole.

A kind runs one part a client and hands the parts here: ``combined`` makes the repetition (the
aggregate, each client's own figures under ``clients``, Jain's fairness index, how far apart
the clients started), ``summary`` the record's ``together`` (each client's median, the
fairness of the medians), ``verdict`` what held the whole back: the NAS's link, each client's
own link, the NAS's disks (the volume's measured rate), its CPU, or none of them. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import BOUND_RATIO, CPU_BOUND_PERCENT
from nasplan.units import format_bits_per_second, format_bytes_per_second

# Jain's index at or above this is a fair share (each of n clients within ~10 % of the mean)
FAIR_INDEX = 0.98
VERDICTS = ("nas-link", "client-links", "nas-disk", "nas-cpu", "protocol", "unknown")


def jain(rates: Sequence[float]) -> float | None:
    """Jain's fairness index of ``rates``: (sum x)^2 / (n * sum x^2), 1.0 when all are equal,
    1/n when one client got everything; None without a positive rate."""
    if not rates or sum(x * x for x in rates) == 0:
        return None
    return sum(rates) ** 2 / (len(rates) * sum(x * x for x in rates))


def combined(
    index: int, parts: Mapping[str, Mapping[str, Any]], metric: str, *, span: bool
) -> dict[str, Any]:
    """One repetition of every client at once: ``metric`` the aggregate (``span``: all bytes
    over the time from the first start to the last end, as copies of a fixed size end apart;
    else the sum of the clients' rates, as iperf3's end together), each client's part under
    ``clients``, ``fairness`` (Jain's index of their rates), ``start_spread_s``."""
    ok = {name: part for name, part in parts.items() if part.get("status") == "ok"}
    failed = [f"{name}: {part.get('error')}" for name, part in parts.items() if name not in ok]
    rep: dict[str, Any] = {
        "index": index,
        "status": "failed" if failed else "ok",
        "error": "; ".join(failed) or None,
        # each client's own raw output is under ``clients``
        "raw_file": None,
        "clients": {name: dict(part) for name, part in parts.items()},
    }
    starts = [p["started_s"] for p in parts.values() if isinstance(p.get("started_s"), float)]
    ends = [p["ended_s"] for p in parts.values() if isinstance(p.get("ended_s"), float)]
    if starts and ends:
        rep.update(started_s=min(starts), ended_s=max(ends))
        rep["start_spread_s"] = max(starts) - min(starts)
    rates = [float(p[metric]) for p in ok.values() if isinstance(p.get(metric), (int, float))]
    if failed or len(rates) != len(parts):
        rep[metric] = None
        return rep
    if span and starts and ends:
        total = sum(int(p.get("bytes") or 0) for p in ok.values())
        # never shorter than the slowest client's own copy (the clock counts milliseconds)
        own = [float(p["duration_s"]) for p in ok.values() if p.get("duration_s")]
        rep.update(bytes=total, duration_s=max([max(ends) - min(starts), *own]))
        rep[metric] = total / rep["duration_s"] if rep["duration_s"] > 0 else None
    else:
        rep[metric] = sum(rates)
    rep["fairness"] = jain(rates)
    return rep


def summary(
    repetitions: Sequence[Mapping[str, Any]], metric: str, direction: str | None = None
) -> dict[str, Any]:
    """The record's ``together`` for ``direction``'s repetitions: each client's median of
    ``metric`` and Jain's index of those medians, the median start spread."""
    reps = [
        r
        for r in repetitions
        if r.get("status") == "ok" and (direction is None or r.get("direction") == direction)
    ]
    per_client: dict[str, list[float]] = {}
    for rep in reps:
        for name, part in (rep.get("clients") or {}).items():
            value = part.get(metric)
            if isinstance(value, (int, float)):
                per_client.setdefault(name, []).append(float(value))
    medians = {name: statistics.median(values) for name, values in per_client.items()}
    spreads = [r["start_spread_s"] for r in reps if isinstance(r.get("start_spread_s"), float)]
    return {
        "clients": medians,
        "fairness": jain(list(medians.values())),
        "start_spread_s": statistics.median(spreads) if spreads else None,
    }


def fairness_text(found: Mapping[str, Any], metric: str) -> str:
    """``pc 310.2 / mac 301.5 / laptop 96.0 MiB/s, Jain 0.86 (not fair)``."""
    clients = found.get("clients") or {}
    if not clients:
        return ""
    bytes_rate = "bytes_per_second" in metric
    each = [f"{name} {(v / 2**20 if bytes_rate else v / 1e6):.1f}" for name, v in clients.items()]
    unit = "MiB/s" if bytes_rate else "Mbit/s"
    index = found.get("fairness")
    fair = ""
    if isinstance(index, float):
        fair = f", Jain {index:.2f}" + (" (fair)" if index >= FAIR_INDEX else " (not fair)")
    return f"{' / '.join(each)} {unit}{fair}"


_SAID = {
    "nas-link": "the NAS's link limits the whole",
    "client-links": "each client's own link limits it, not the NAS",
    "nas-disk": "the NAS's disks limit the whole",
    "nas-cpu": "the NAS's CPU limits the whole",
    "protocol": "well under the NAS's link, disks and CPU: the protocol or the clients",
    "unknown": "nothing measured to judge it against",
}


def _decide(
    link_ratio: float | None,
    own: Sequence[float],
    disk_ratio: float | None,
    cpu_percent: float | None,
) -> str:
    """The limit the ratios name, in the order a write-up would check them."""
    if link_ratio is not None and link_ratio >= BOUND_RATIO:
        return "nas-link"
    if own and min(own) >= BOUND_RATIO:
        return "client-links"
    if disk_ratio is not None and disk_ratio >= BOUND_RATIO:
        return "nas-disk"
    if cpu_percent is not None and cpu_percent >= CPU_BOUND_PERCENT:
        return "nas-cpu"
    return "unknown" if link_ratio is None and disk_ratio is None else "protocol"


def verdict(
    *,
    what: str,
    aggregate_bits_per_second: float,
    nas_link_bits_per_second: float | None,
    nas_link_name: str,
    clients: Mapping[str, tuple[float, float | None]],
    disk_bytes_per_second: float | None = None,
    disk_name: str = "",
    nas_cpu_percent: float | None = None,
) -> dict[str, Any]:
    """What limited clients together: ``{"verdict": one of VERDICTS, "text", "evidence"}``.

    ``clients``: name -> (its own rate, its path's maximum) in bit/s. The NAS's link bound it
    when the aggregate reaches BOUND_RATIO of that link's maximum; each client's own link when
    every client reaches it of its own; the NAS's disks (a transfer) when the aggregate reaches
    it of the volume's measured rate; the NAS's CPU at CPU_BOUND_PERCENT. E.g. ``SMB write of
    3 clients together 2.31 Gbit/s = 98 % of the NAS's p2p25 (TCP maximum 2.37 Gbit/s): the
    NAS's link limits the whole``.
    """
    aggregate = aggregate_bits_per_second
    link = nas_link_bits_per_second
    link_ratio = aggregate / link if link else None
    tops = [top for _, top in clients.values()]
    own = [rate / top for rate, top in clients.values() if top] if all(tops) else []
    disk = disk_bytes_per_second
    disk_ratio = aggregate / 8 / disk if disk else None
    parts = []
    if link_ratio is not None and link is not None:
        parts.append(
            f"{link_ratio * 100:.0f} % of the NAS's {nas_link_name} "
            f"(TCP maximum {format_bits_per_second(link)})"
        )
    if disk_ratio is not None and disk is not None:
        parts.append(
            f"{disk_ratio * 100:.0f} % of {disk_name} ({format_bytes_per_second(disk, 0)})"
        )
    if nas_cpu_percent is not None:
        parts.append(f"the NAS's CPU {nas_cpu_percent:.0f} % busy")
    found = _decide(link_ratio, own, disk_ratio, nas_cpu_percent)
    head = f"{what} of {len(clients)} clients together {format_bits_per_second(aggregate)}"
    text = f"{head} = {' and '.join(parts)}" if parts else head
    return {
        "verdict": found,
        "text": f"{text}: {_SAID[found]}",
        "evidence": {
            "aggregate_bits_per_second": aggregate,
            "nas_link_bits_per_second": link,
            "nas_link_ratio": link_ratio,
            "client_ratios": dict(zip(clients, own, strict=True)) if own else {},
            "disk_bytes_per_second": disk,
            "disk_ratio": disk_ratio,
            "nas_cpu_percent": nas_cpu_percent,
        },
    }
