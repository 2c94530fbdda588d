"""Optional matplotlib figure per test (``--charts``): its rate, each host's CPU busy and memory
available (the resource sampler's series, like vmstat), on one time axis."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nasplan.measure import kinds
from nasplan.report.charts import CHARTS_DIR, pyplot
from nasplan.report.timeline import chart_file, unit_for

_DIRECTION_COLOURS = {"write": "#c06020", "read": "#2070b0", "reverse": "#7040a0"}
_HOST_COLOURS = ("#505050", "#30a050", "#a03060", "#8080c0")
_FALL_COLOUR = "#c03030"
FIGURE_SIZE = (8, 8)


_HOST_STYLES = (("-", 3.0), ("--", 1.5), (":", 1.5), ("-.", 1.5))


def _legend(axes: Any) -> None:
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _draw_rate(axes: Any, test: Mapping[str, Any]) -> None:
    """The rate of each repetition, its limit (the TCP maximum, a UDP test's rate asked), and
    a dotted line where a rate fell."""
    throughput = test["timeline"]["throughput"]
    kind = kinds.readout(test)
    limit = kind.timeline_limit(test)
    maximum = limit[0] if limit else None
    unit, factor = unit_for(kind, [v for s in throughput for v in s["bits_per_second"]])
    labelled: set[str] = set()
    for s in throughput:
        label = f"{s.get('direction') or 'rate'} ({unit})"
        axes.plot(
            s["t_s"],
            [None if v is None else v / factor for v in s["bits_per_second"]],
            marker=".",
            color=_DIRECTION_COLOURS.get(str(s.get("direction")), "#4878a8"),
            label=None if label in labelled else label,
        )
        labelled.add(label)
        fall = s.get("fall")
        if fall and s["t_s"]:
            # the series' first point is one second after its repetition began
            fell_at = s["t_s"][0] - 1 + fall["after_s"]
            axes.axvline(
                fell_at, color=_FALL_COLOUR, linestyle=":", linewidth=1,
                label=None if "fell" in labelled else "rate fell (a cache filled)",
            )  # fmt: skip
            labelled.add("fell")
    if limit:
        axes.axhline(limit[0] / factor, color=_FALL_COLOUR, linestyle="--", linewidth=1,
                     label=limit[1])  # fmt: skip
    axes.set_ylabel(unit)
    highest = max([v for s in throughput for v in s["bits_per_second"] if v is not None] or [0])
    axes.set_ylim(0, max(highest, maximum or 0) / factor * 1.15 or 1)
    axes.set_title(f"{test['id']}: rate, CPU and memory per second")
    _legend(axes)


def _draw_hosts(axes: Any, test: Mapping[str, Any], key: str, scale: float, what: str) -> bool:
    """Each host's sampled ``key`` (divided by ``scale``) over time; False when none has it."""
    drawn = False
    hosts = sorted((test.get("resources") or {}).items())
    for index, (colour, (host, resources)) in enumerate(zip(_HOST_COLOURS, hosts, strict=False)):
        points = (resources or {}).get("series") or {}
        values = points.get(key) or []
        if any(v is not None for v in values):
            shown = [None if v is None else v / scale for v in values]
            # hosts on one machine (a lab) sample the same values: a wide solid line under
            # narrower dashed ones, so a line on top of another still shows both
            style, width = _HOST_STYLES[index % len(_HOST_STYLES)]
            axes.plot(
                points["t_s"], shown, color=colour, linestyle=style, linewidth=width, label=host
            )
            drawn = True
    axes.set_ylabel(what)
    if drawn:
        _legend(axes)
    else:
        axes.text(0.5, 0.5, "not sampled", transform=axes.transAxes, ha="center", va="center")
    return drawn


def _memory_unit(test: Mapping[str, Any]) -> tuple[str, float]:
    """GiB (2^30 bytes) when a host has 2 GiB or more available, else MiB (2^20)."""
    values = [
        v
        for resources in (test.get("resources") or {}).values()
        for v in ((resources or {}).get("series") or {}).get("mem_available_bytes") or []
        if v is not None
    ]
    return ("GiB", 2.0**30) if max(values or [0]) >= 2 * 2**30 else ("MiB", 2.0**20)


def _draw(figure: Any, test: Mapping[str, Any]) -> None:
    """Three panels on one time axis: the rate, each host's CPU busy, its memory available."""
    rate_axes, cpu_axes, memory_axes = figure.subplots(3, 1, sharex=True)
    _draw_rate(rate_axes, test)
    _draw_hosts(cpu_axes, test, "cpu_busy_percent", 1.0, "CPU busy, all cores (%)")
    cpu_axes.set_ylim(0, 100)
    unit, scale = _memory_unit(test)
    if _draw_hosts(memory_axes, test, "mem_available_bytes", scale, f"memory available ({unit})"):
        memory_axes.set_ylim(bottom=0)
    memory_axes.set_xlabel("seconds since the test started")
    memory_axes.set_xlim(left=0)


def write_timeline_charts(run: Mapping[str, Any], run_dir: Path, chart_format: str) -> list[str]:
    """One figure per test with a timeline into ``run_dir/charts/``; paths relative to run_dir."""
    tests = [t for t in run.get("tests", []) if (t.get("timeline") or {}).get("throughput")]
    if not tests:
        return []
    plt = pyplot()
    (run_dir / CHARTS_DIR).mkdir(exist_ok=True)
    written = []
    for test in tests:
        figure = plt.figure(figsize=FIGURE_SIZE)
        _draw(figure, test)
        relative = chart_file(str(test["id"]), chart_format)
        metadata: dict[str, Any] = {"Date": None} if chart_format == "svg" else {}
        figure.savefig(
            run_dir / relative,
            format=chart_format,
            metadata=metadata,
            dpi=100,
            bbox_inches="tight",  # the legends sit right of the axes
        )
        plt.close(figure)
        written.append(relative)
    return written
