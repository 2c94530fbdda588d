"""What every diagnosis module shares: a finding's shape and how its numbers are written."""

from __future__ import annotations

from typing import Any


def finding(
    cause: str, test: Any, host: Any, text: str, evidence: dict[str, Any]
) -> dict[str, Any]:
    """One finding: ``{"cause", "test", "host", "text", "evidence"}`` (run.json ``diagnosis``)."""
    return {
        "cause": cause,
        "test": None if test is None else str(test),
        "host": None if host is None else str(host),
        "text": text,
        "evidence": evidence,
    }


def rate_text(bits_per_second: float) -> str:
    """A link speed as people say it: ``2.5 Gbit/s``, ``100 Mbit/s``."""
    for factor, unit in ((10**9, "Gbit/s"), (10**6, "Mbit/s"), (10**3, "kbit/s")):
        if bits_per_second >= factor:
            return f"{bits_per_second / factor:g} {unit}"
    return f"{bits_per_second:g} bit/s"
