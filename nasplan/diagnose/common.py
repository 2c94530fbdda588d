"""What every diagnosis module shares: a finding's shape and how its numbers are written."""

from __future__ import annotations

from nasplan.measure.findings import finding

__all__ = ["finding", "rate_text"]


def rate_text(bits_per_second: float) -> str:
    """A link speed as people say it: ``2.5 Gbit/s``, ``100 Mbit/s``."""
    for factor, unit in ((10**9, "Gbit/s"), (10**6, "Mbit/s"), (10**3, "kbit/s")):
        if bits_per_second >= factor:
            return f"{bits_per_second / factor:g} {unit}"
    return f"{bits_per_second:g} bit/s"
