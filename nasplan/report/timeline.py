"""Per-second timelines in the report: a Mermaid chart per test (a bar a second, a band of its
own colour where nothing was measured, never a bar at 0) and the rate falls.

Pure functions of run.json's ``tests[].timeline`` (and ``resources.<host>.series`` for the
optional matplotlib figure in timeline_charts.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure import kinds
from nasplan.measure.kind import Readout
from nasplan.measure.timeline import SOURCE_TEXT
from nasplan.quantities import BYTES
from nasplan.report import mermaid

CHART_PREFIX = "charts/timeline-"
# Mermaid draws every point; longer tests are averaged over a few seconds per point.
MAX_CHART_POINTS = 240
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _stem(test_id: str) -> str:
    return f"{CHART_PREFIX}{_UNSAFE.sub('-', test_id)}."


def chart_file(test_id: str, chart_format: str) -> str:
    """``charts/timeline-<test id>.<format>``, relative to the run directory."""
    return _stem(test_id) + chart_format


def unit_for(kind: Readout, bits_per_second: Sequence[float | None]) -> tuple[str, float]:
    """The unit a test's rates are shown in, with its size in bit/s: a bit rate in bit/s; a
    byte rate (file transfers, iSCSI, disks) in MiB/s, as their tables (the TCP maximum too)."""
    if kind.timeline_quantity is BYTES:
        return "MiB/s", 8.0 * 2**20
    return mermaid.rate_unit(bits_per_second)


def per_second(throughput: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Every series of a test on one grid of whole seconds of its clock (index = second);
    a second no series covers is None (nothing was measured then, e.g. between repetitions)."""
    points = [
        (t, value)
        for s in throughput
        for t, value in zip(s.get("t_s") or [], s.get("bits_per_second") or [], strict=False)
    ]
    if not points:
        return []
    grid: list[float | None] = [None] * (max(0, round(max(t for t, _ in points))) + 1)
    for t, value in points:
        if value is not None:
            grid[max(0, round(t))] = value
    return grid


def _buckets(values: Sequence[float | None], size: int) -> list[float | None]:
    """Averages of ``size`` consecutive values (None when a bucket has no value)."""
    out: list[float | None] = []
    for start in range(0, len(values), size):
        present = [v for v in values[start : start + size] if v is not None]
        out.append(sum(present) / len(present) if present else None)
    return out


def mermaid_chart(test: Mapping[str, Any]) -> str | None:
    """A chart of a test's rate over its seconds, a bar a second (no bar where nothing was
    measured: between repetitions), with its limit (the path's TCP maximum, a UDP test's rate
    asked) as a flat line; None when the test has no timeline."""
    throughput = (test.get("timeline") or {}).get("throughput") or []
    grid = per_second(throughput)
    if not any(v is not None for v in grid):
        return None
    kind = kinds.readout(test)
    limit = kind.timeline_limit(test)
    maximum = limit[0] if limit else None
    unit, factor = unit_for(kind, [*grid, maximum])
    step = max(1, math.ceil(len(grid) / MAX_CHART_POINTS))
    values = [None if v is None else v / factor for v in _buckets(grid, step)]
    title = f"{test['id']}: rate per second"
    if step > 1:
        title = f"{test['id']}: rate, {step} s averages"
    flat: list[tuple[list[float], str]] = []
    said = [f"{mermaid.DATA_NAMES[0].capitalize()} bars: rate"]
    if limit:
        flat.append(([limit[0] / factor] * len(values), mermaid.LIMIT_COLOUR))
        said.append(f"{mermaid.LIMIT_NAME} line: {limit[1]}")
    if any(v is None for v in values):
        said.append(f"{mermaid.GAP_NAME} band: nothing measured then")
    top = max([v for v in values if v is not None] + [maximum / factor if maximum else 0.0])
    return mermaid.steps_chart(
        title,
        "seconds since the test started",
        values,
        unit,
        top,
        lines=flat,
        caption="; ".join(said) + ".",
    )


def _host_grids(test: Mapping[str, Any], key: str) -> dict[str, list[float | None]]:
    """host -> its sampled ``key`` (``cpu_busy_percent``, ``mem_available_bytes``) on a grid of
    whole seconds since its first sample; hosts with no value left out."""
    grids = {}
    for host, resources in sorted((test.get("resources") or {}).items()):
        points = (resources or {}).get("series") or {}
        grid = per_second([{"t_s": points.get("t_s") or [], "bits_per_second": points.get(key)}])
        if any(v is not None for v in grid):
            grids[host] = grid
    return grids


def _hosts_charts(
    test: Mapping[str, Any], key: str, what: str, unit: str, scale: float, top: float = 0.0
) -> list[str]:
    """A chart per host of one sampled quantity, a bar a second (two hosts' bars at one second
    would hide each other), each host in its own colour on one x-axis and y-axis for all, from
    the first point any host sampled (the sampler's first point is a second after its start);
    a band where nothing was sampled (between a test's parts)."""
    grids = _host_grids(test, key)
    hosts = list(grids)
    if not hosts:
        return []
    length = max(len(grids[h]) for h in hosts)
    step = max(1, math.ceil(length / MAX_CHART_POINTS))
    bars = {h: [None if v is None else v / scale for v in _buckets(grids[h], step)] for h in hosts}
    first = min(next(i for i, v in enumerate(bars[h]) if v is not None) for h in hosts)
    width = max(len(bars[h]) for h in hosts)
    every = "per second" if step == 1 else f"{step} s averages"
    x_label = "seconds since sampling started" if step == 1 else f"{step} s steps since then"
    highest = max([v for h in hosts for v in bars[h] if v is not None] + [top])
    charts = []
    for index, host in enumerate(hosts):
        values = bars[host][first:] + [None] * (width - len(bars[host]))
        colour = mermaid.DATA_COLOURS[index % len(mermaid.DATA_COLOURS)]
        said = f"{mermaid.DATA_NAMES[index % len(mermaid.DATA_NAMES)].capitalize()} bars: {host}"
        if any(v is None for v in values):
            said += f"; {mermaid.GAP_NAME} band: nothing sampled then"
        chart = mermaid.steps_chart(
            f"{test['id']}: {what} on {host}, {every}",
            x_label,
            values,
            unit,
            highest,
            colour,
            x_start=first,
            caption=said + ".",
        )
        if chart:
            charts.append(chart)
    return charts


def resource_charts(test: Mapping[str, Any]) -> list[str]:
    """Mermaid charts of what the resource sampler saw on the test's hosts, like vmstat, one a
    host: CPU busy (all cores, %) and memory available (GiB, 2^30 bytes; MiB under 2 GiB)."""
    memory = [v for g in _host_grids(test, "mem_available_bytes").values() for v in g if v]
    unit, scale = ("GiB", 2.0**30) if max(memory or [0]) >= 2 * 2**30 else ("MiB", 2.0**20)
    return [
        *_hosts_charts(test, "cpu_busy_percent", "CPU busy", "%", 1.0, 100.0),
        *_hosts_charts(test, "mem_available_bytes", "memory available", unit, scale),
    ]


def _rate_text(kind: Readout, bits_per_second: float) -> str:
    if not kind.path_rate:
        return f"{bits_per_second / 8 / 2**20:.1f} MiB/s"
    return f"{bits_per_second / 8 / 10**6:.1f} MB/s ({bits_per_second / 8 / 2**20:.1f} MiB/s)"


def fall_texts(test: Mapping[str, Any]) -> list[str]:
    """One sentence per repetition of a test whose rate fell after its first seconds."""
    kind = kinds.readout(test)
    texts = []
    for s in (test.get("timeline") or {}).get("throughput") or []:
        fall = s.get("fall")
        if not fall:
            continue
        what = " ".join(p for p in (s.get("direction"), f"repetition {s['repetition']}") if p)
        before, after = fall["before_bits_per_second"], fall["after_bits_per_second"]
        texts.append(
            f"{what}: the rate fell after {fall['after_s']:g} s, from "
            f"{_rate_text(kind, before)} to {_rate_text(kind, after)}, "
            f"{after / before * 100:.0f} % of the earlier rate: a cache took the first seconds, "
            f"then the disk's own speed (or another limit) set the rate"
        )
    return texts


def views(run: Mapping[str, Any], chart_files: Sequence[str] = ()) -> list[dict[str, Any]]:
    """What the report's *Rate over time* section shows, one entry per test with a timeline:
    ``{"id", "name", "kind", "sources", "chart", "resources", "falls", "figure"}``
    (``resources``: resource_charts)."""
    found = []
    for test in run.get("tests", []):
        throughput = (test.get("timeline") or {}).get("throughput") or []
        if not throughput:
            continue
        sources = sorted({str(s.get("source")) for s in throughput})
        stem = _stem(test["id"])
        figure = next(
            (f for f in chart_files if f.startswith(stem) and "." not in f[len(stem) :]), None
        )
        found.append(
            {
                "id": test["id"],
                "name": test.get("name") or test["id"],
                "kind": test.get("kind"),
                "sources": [SOURCE_TEXT.get(s, s) for s in sources],
                "chart": mermaid_chart(test),
                "resources": resource_charts(test),
                "falls": fall_texts(test),
                "figure": figure,
            }
        )
    return found


def is_timeline_file(path: str) -> bool:
    """True for a chart file drawn by timeline_charts (shown under *Rate over time*)."""
    return path.startswith(CHART_PREFIX)
