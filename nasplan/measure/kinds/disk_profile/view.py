"""The disk-profile tests' section of report.md (``section.md.j2`` beside it): run.json alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nasplan.measure.kind import DASH, Record


def where(record: Record) -> str:
    """Where fio ran: ``nas /srv/v1 (volume v1)``, or through a share ``ws through SMB
    //198.18.1.1/v1 mounted with smbnetfs (FUSE) of nas``."""
    params = record.get("params") or {}
    host = params.get("host") or DASH
    on = f" (volume {params['volume']})" if params.get("volume") else ""
    via = params.get("through") or {}
    if via:
        mounted = via.get("mounted") or f"{via.get('method')} {via.get('share')}"
        return f"{via.get('client')} through {mounted} of {host}{on}"
    return f"{host} {params.get('path') or ''}".strip() + on


def view(tests: Sequence[Record]) -> dict[str, Any]:
    """What ``section.md.j2`` shows: the tests, as run.json has them, each with where it ran."""
    return {"tests": [{**test, "where": where(test)} for test in tests]}
