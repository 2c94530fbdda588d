"""Measurements: one module per kind (iperf3, ...): pure argv and parse, one I/O function.

A *test kind* (``kinds()``) turns one plan test into one run.json test record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.units import format_bits_per_second

if TYPE_CHECKING:
    from nasplan.context import RunContext
    from nasplan.plan import TestSpec


@dataclass(frozen=True)
class TestKind:
    """A kind of test: the tools it needs on which host, how to run it, how to describe it.

    ``needs(test)``: host name -> tools that host must have (installed by its platform).
    """

    name: str
    needs: Callable[[TestSpec], dict[str, tuple[str, ...]]]
    run: Callable[[TestSpec, RunContext], dict[str, Any]]
    describe: Callable[[TestSpec], str]


def kinds() -> dict[str, TestKind]:
    """Every test kind by its plan name (``kind: iperf3``)."""
    from nasplan.measure import disk_test, iperf3_test, latency_test, transfer_test

    every = (iperf3_test.KIND, transfer_test.KIND, latency_test.KIND, disk_test.KIND)
    return {kind.name: kind for kind in every}


def summary_text(summary: dict[str, Any]) -> str:
    """A test summary's median for the progress line, in the unit its metric names."""
    median, metric = summary.get("median"), summary.get("metric", "bits_per_second")
    if median is None:
        return ""
    if metric.endswith("_ms"):
        return f"median {median:.3f} ms"
    if metric == "bytes_per_second":
        return f"median {median / 2**20:.1f} MiB/s"
    return f"median {format_bits_per_second(median)}"
