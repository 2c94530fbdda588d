"""Optional PNG/SVG charts drawn with matplotlib (``nasplan report --charts png|svg``).

matplotlib is not a dependency: without it the user gets a clear message, and the Mermaid
charts in report.md are still there.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.report.mermaid import rate_unit

CHART_FORMATS = ("png", "svg")
CHARTS_DIR = "charts"


def _pyplot() -> Any:
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        raise InputError(
            "--charts needs matplotlib: install matplotlib (pip install matplotlib, or "
            "apt install python3-matplotlib) in nasplan's environment, or leave --charts out: "
            "report.md has Mermaid charts either way"
        ) from None
    matplotlib.use("Agg")  # no display needed
    # Same run.json, same bytes: no creation date, fixed ids in SVG.
    matplotlib.rcParams["svg.hashsalt"] = "nasplan"
    return importlib.import_module("matplotlib.pyplot")


def pyplot() -> Any:
    """matplotlib.pyplot drawing to files (reproducible SVG); InputError when not installed."""
    return _pyplot()


def throughput_points(run: Mapping[str, Any]) -> list[tuple[str, float, float | None]]:
    """``(test id, median bit/s, TCP maximum bit/s or None)`` of each test with a result."""
    points = []
    for test in run.get("tests", []):
        median = (test.get("summary") or {}).get("median")
        if median is not None:
            theoretical = (test.get("path") or {}).get("theoretical_bits_per_second")
            points.append((str(test["id"]), float(median), theoretical))
    return points


def write_charts(run: Mapping[str, Any], run_dir: Path, chart_format: str) -> list[str]:
    """Draw the throughput chart into ``run_dir/charts/``; return paths relative to run_dir."""
    if chart_format not in CHART_FORMATS:
        raise InputError(f"--charts {chart_format!r}: expected png or svg")
    points = throughput_points(run)
    if not points:
        return []
    pyplot = _pyplot()
    unit, factor = rate_unit([p[1] for p in points])
    figure, axes = pyplot.subplots(figsize=(max(4.0, 1.2 * len(points) + 2), 4))
    names = [p[0] for p in points]
    axes.bar(names, [p[1] / factor for p in points], color="#4878a8", label="median")
    maxima = [(name, p[2] / factor) for name, p in zip(names, points, strict=True) if p[2]]
    if maxima:
        axes.scatter(
            [m[0] for m in maxima], [m[1] for m in maxima], marker="_", s=600, color="#c03030",
            label="TCP maximum",
        )  # fmt: skip
    axes.set_ylabel(unit)
    axes.set_title(f"{run['plan']['name']}: median throughput per test")
    axes.legend(loc="lower right")
    axes.tick_params(axis="x", labelrotation=20)
    figure.tight_layout()
    relative = f"{CHARTS_DIR}/throughput.{chart_format}"
    (run_dir / CHARTS_DIR).mkdir(exist_ok=True)
    metadata: dict[str, Any] = {"Date": None} if chart_format == "svg" else {}
    figure.savefig(run_dir / relative, format=chart_format, metadata=metadata, dpi=100)
    pyplot.close(figure)
    return [relative]
