"""Measurements: one module per kind (iperf3, ...): pure argv and parse, one I/O function.

A *test kind* (``kinds()``) turns one plan test into one run.json test record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasplan.context import RunContext
    from nasplan.plan import TestSpec


@dataclass(frozen=True)
class TestKind:
    """A kind of test: the tools it needs on its hosts, how to run it, how to describe it."""

    name: str
    tools: tuple[str, ...]
    run: Callable[[TestSpec, RunContext], dict[str, Any]]
    describe: Callable[[TestSpec], str]


def kinds() -> dict[str, TestKind]:
    """Every test kind by its plan name (``kind: iperf3``)."""
    from nasplan.measure import iperf3_test

    return {kind.name: kind for kind in (iperf3_test.KIND,)}
