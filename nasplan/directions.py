"""A test's directions as separate series: a transfer's write and read, a disk's write and read,
iperf3's forward, reverse or both of a ``--bidir`` test; each is compared on its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import (
    efficiency,
    ok_values,
    summarize,
    theoretical_udp_bits_per_second,
)

# Kinds whose repetitions each carry a ``direction`` and whose record has ``directions``.
DIRECTED_KINDS = frozenset({"transfer", "disk", "iscsi"})
# Of those, the kinds whose data crosses the network: their byte rate has a path maximum.
NETWORK_BYTE_KINDS = frozenset({"transfer", "iscsi"})


@dataclass(frozen=True)
class Series:
    """One direction of one test: the repetition values of ``metric`` and their summary.

    ``direction`` is ``write``/``read`` (transfer, disk, iscsi), ``forward``/``reverse`` (iperf3:
    the client sends / the server sends), or None for a kind without one (latency).
    ``theoretical_bits_per_second`` is the path's maximum for what the series carries:
    ``limit_name`` says which (``TCP maximum``; ``UDP maximum`` for UDP iperf3).
    """

    direction: str | None
    metric: str
    values: list[float]
    summary: dict[str, Any]
    efficiency: float | None
    theoretical_bits_per_second: float | None
    limit_name: str = "TCP maximum"

    @property
    def over_maximum(self) -> bool:
        """A median above the path's maximum: the path or the speed nasplan assumed is wrong."""
        return self.efficiency is not None and self.efficiency > 1.0


def _by_direction(test: Mapping[str, Any], direction: str, metric: str) -> list[float]:
    reps = [r for r in test.get("repetitions") or [] if r.get("direction") == direction]
    return ok_values(reps, metric)


def _bits_efficiency(bits_per_second: float | None, theoretical: float | None) -> float | None:
    return efficiency(bits_per_second, theoretical)


def series_of(test: Mapping[str, Any]) -> list[Series]:
    """Each direction of ``test`` as a Series, in the order the test ran them.

    Example: a ``direction: both`` SMB transfer gives ``[Series("write", "bytes_per_second",
    ...), Series("read", ...)]``; a ``reverse: true`` iperf3 test ``[Series("reverse",
    "bits_per_second", ...)]``.
    """
    path = test.get("path") or {}
    theoretical = path.get("theoretical_bits_per_second")
    params = test.get("params") or {}
    directions = test.get("directions") or {}
    kind = test.get("kind")
    if directions and kind in DIRECTED_KINDS:
        network = kind in NETWORK_BYTE_KINDS
        found = []
        for direction, summary in directions.items():
            metric = str((summary or {}).get("metric") or "bytes_per_second")
            median = (summary or {}).get("median")
            bits = median * 8 if network and median is not None else None
            found.append(
                Series(
                    direction,
                    metric,
                    _by_direction(test, direction, metric),
                    dict(summary or summarize([], metric)),
                    _bits_efficiency(bits, theoretical) if network else None,
                    theoretical if network else None,
                )
            )
        return found
    summary = dict(test.get("summary") or {})
    metric = str(summary.get("metric") or "bits_per_second")
    reps = test.get("repetitions") or []
    if kind != "iperf3":
        return [
            Series(
                None, metric, ok_values(reps, metric), summary, test.get("efficiency"), theoretical
            )
        ]
    first = "reverse" if params.get("reverse") and not params.get("bidir") else "forward"
    limit_name, test_efficiency = "TCP maximum", test.get("efficiency")
    if str(params.get("protocol") or "tcp").lower() == "udp":
        limit_name, theoretical = "UDP maximum", _udp_maximum(path)
        test_efficiency = efficiency(summary.get("median"), theoretical)
    found = [
        Series(
            first,
            metric,
            ok_values(reps, metric),
            summary,
            test_efficiency,
            theoretical,
            limit_name,
        )
    ]
    back = ok_values(reps, "reverse_bits_per_second") if params.get("bidir") else []
    if back:
        back_summary = summarize(back, "reverse_bits_per_second")
        found.append(
            Series(
                "reverse",
                "reverse_bits_per_second",
                back,
                back_summary,
                _bits_efficiency(back_summary["median"], theoretical),
                theoretical,
                limit_name,
            )
        )
    return found


def _udp_maximum(path: Mapping[str, Any]) -> float | None:
    speed, mtu, framing = (
        path.get("speed_bits_per_second"),
        path.get("mtu_bytes"),
        path.get("framing") or "ethernet",
    )
    if not speed or not mtu:
        return None
    try:
        return theoretical_udp_bits_per_second(speed, mtu, framing)
    except ValueError:
        return None
