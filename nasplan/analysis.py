"""Analysis: theoretical TCP line rate and repetition statistics, as pure functions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

# spread_ratio above which repetitions disagree enough for the report to say so (10 %).
WIDE_SPREAD_RATIO = 0.10

# Per-packet overhead, in bytes. Payload per packet: MTU - 20 (IPv4) - 20 (TCP) - 12 (timestamps
# option, on by default in Linux). On the wire: MTU + 14 (Ethernet header) + 4 (FCS) + 8 (preamble
# and start delimiter) + 12 (inter-frame gap). tc shapes what the kernel hands the device:
# MTU + 14 Ethernet header only.
_TCP_IP_HEADER_BYTES = 52
_FRAME_OVERHEAD_BYTES: dict[str, int] = {"ethernet": 38, "tc": 14}


def theoretical_tcp_bits_per_second(
    speed_bits_per_second: float, mtu_bytes: int, framing: str = "ethernet"
) -> float:
    """Highest TCP goodput over IPv4 with TCP timestamps, e.g. 941.48e6 at 1G/1500 ethernet.

    ``framing="tc"`` is a link shaped by tc in the lab (no preamble, FCS or inter-frame gap).
    """
    if framing not in _FRAME_OVERHEAD_BYTES:
        raise ValueError(f"unknown framing {framing!r} (expected ethernet or tc)")
    if mtu_bytes <= _TCP_IP_HEADER_BYTES:
        raise ValueError(f"MTU {mtu_bytes} bytes leaves no room for TCP payload")
    payload_bytes = mtu_bytes - _TCP_IP_HEADER_BYTES
    return speed_bits_per_second * payload_bytes / (mtu_bytes + _FRAME_OVERHEAD_BYTES[framing])


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
    repetitions: Sequence[dict[str, Any]], metric: str = "bits_per_second"
) -> list[float]:
    """The ``metric`` of each repetition with status ok and a value, in order, for summarize()."""
    return [
        float(rep[metric])
        for rep in repetitions
        if rep.get("status") == "ok" and isinstance(rep.get(metric), (int, float))
    ]
