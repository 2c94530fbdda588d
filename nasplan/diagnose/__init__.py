"""Diagnosis: where the speed drops, as findings computed from run.json alone.

Each module in MODULES has ``findings(run) -> list[dict]``; a finding is
``{"cause", "test", "host", "text", "evidence"}`` (schemas/run.schema.json
``diagnosis``). Nothing here talks to a host: a pure function of the record.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

# ``of_kinds``: the causes only a kind can tell (iperf3's streams), asked of the kinds in the run
MODULES = ("path", "bus", "of_kinds", "cpu", "queue", "short")


def diagnose(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every module's findings for *run*, in MODULES order."""
    found: list[dict[str, Any]] = []
    for name in MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        found.extend(module.findings(run))
    return found
