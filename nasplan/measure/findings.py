"""A finding's shape (run.json ``diagnosis``): what diagnose/ and each kind's own causes give."""

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
