"""What a number measures and the one unit each quantity is shown in, in every chart and table.

Bit rates (iperf3, a transfer's network rate) are Mbit/s or Gbit/s; byte rates (file transfers,
disks) are MiB/s (2^20 bytes/s); latencies ms. A chart draws one quantity per axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    """A measured quantity: its name in titles and the units it may be drawn in (largest first)."""

    name: str
    title: str
    units: tuple[tuple[str, float], ...]

    def unit(self, values: Sequence[float | None]) -> tuple[str, float]:
        """The unit a set of values is drawn in: ``("Gbit/s", 1e9)``; the last unit for small."""
        highest = max((abs(v) for v in values if v is not None), default=0.0)
        for label, factor in self.units:
            if highest >= factor:
                return label, factor
        return self.units[-1]


BITS = Quantity("bits", "throughput", (("Gbit/s", 1e9), ("Mbit/s", 1e6)))
BYTES = Quantity("bytes", "transfer and disk rate", (("MiB/s", float(2**20)),))
MILLISECONDS = Quantity("ms", "round-trip time", (("ms", 1.0),))
QUANTITIES = {q.name: q for q in (BITS, BYTES, MILLISECONDS)}


def quantity_of(metric: str) -> str | None:
    """``bits_per_second`` -> ``bits``, ``bytes_per_second`` -> ``bytes``, ``rtt_avg_ms`` ->
    ``ms``; None for a metric no chart draws."""
    if "bits_per_second" in metric:
        return BITS.name
    if "bytes_per_second" in metric:
        return BYTES.name
    if metric.endswith("_ms"):
        return MILLISECONDS.name
    return None
