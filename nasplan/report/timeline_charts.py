"""Optional matplotlib figure per test: throughput and CPU busy on one time axis (``--charts``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nasplan.report.charts import CHARTS_DIR, pyplot
from nasplan.report.timeline import chart_file, tcp_maximum, unit_for

_DIRECTION_COLOURS = {"write": "#c06020", "read": "#2070b0", "reverse": "#7040a0"}
_CPU_COLOURS = ("#505050", "#30a050", "#a03060", "#8080c0")


def _draw(figure: Any, test: Mapping[str, Any]) -> None:
    throughput = test["timeline"]["throughput"]
    kind = str(test.get("kind"))
    maximum = tcp_maximum(test)
    unit, factor = unit_for(kind, [v for s in throughput for v in s["bits_per_second"]])
    rate_axes = figure.add_subplot(1, 1, 1)
    labelled: set[str] = set()
    for s in throughput:
        label = s.get("direction") or "rate"
        rate_axes.plot(
            s["t_s"],
            [None if v is None else v / factor for v in s["bits_per_second"]],
            marker=".",
            color=_DIRECTION_COLOURS.get(str(s.get("direction")), "#4878a8"),
            label=None if label in labelled else f"{label} ({unit})",
        )
        labelled.add(label)
        fall = s.get("fall")
        if fall and s["t_s"]:
            # the series' first point is one second after its repetition began
            fell_at = s["t_s"][0] - 1 + fall["after_s"]
            rate_axes.axvline(fell_at, color="#c03030", linestyle=":", linewidth=1)
    if maximum:
        rate_axes.axhline(
            maximum / factor, color="#c03030", linestyle="--", linewidth=1, label="TCP maximum"
        )
    rate_axes.set_xlabel("seconds since the test started")
    rate_axes.set_ylabel(unit)
    highest = max([v for s in throughput for v in s["bits_per_second"] if v is not None] or [0])
    rate_axes.set_ylim(0, max(highest, maximum or 0) / factor * 1.15 or 1)
    rate_axes.set_xlim(left=0)
    cpu_axes = rate_axes.twinx()
    for colour, (host, resources) in zip(
        _CPU_COLOURS, sorted((test.get("resources") or {}).items()), strict=False
    ):
        points = (resources or {}).get("series")
        if points:
            cpu_axes.plot(
                points["t_s"],
                points["cpu_busy_percent"],
                color=colour,
                linestyle="-.",
                linewidth=1,
                label=f"CPU busy {host} (%)",
            )
    cpu_axes.set_ylim(0, 100)
    cpu_axes.set_ylabel("CPU busy, all cores (%)")
    handles, labels = rate_axes.get_legend_handles_labels()
    cpu_handles, cpu_labels = cpu_axes.get_legend_handles_labels()
    rate_axes.legend(
        handles + cpu_handles,
        labels + cpu_labels,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    rate_axes.set_title(f"{test['id']}: rate and CPU per second")


def write_timeline_charts(run: Mapping[str, Any], run_dir: Path, chart_format: str) -> list[str]:
    """One figure per test with a timeline into ``run_dir/charts/``; paths relative to run_dir."""
    tests = [t for t in run.get("tests", []) if (t.get("timeline") or {}).get("throughput")]
    if not tests:
        return []
    plt = pyplot()
    (run_dir / CHARTS_DIR).mkdir(exist_ok=True)
    written = []
    for test in tests:
        figure = plt.figure(figsize=(8, 4.5))
        _draw(figure, test)
        relative = chart_file(str(test["id"]), chart_format)
        metadata: dict[str, Any] = {"Date": None} if chart_format == "svg" else {}
        figure.savefig(
            run_dir / relative,
            format=chart_format,
            metadata=metadata,
            dpi=100,
            bbox_inches="tight",  # the legend sits below the axes
        )
        plt.close(figure)
        written.append(relative)
    return written
