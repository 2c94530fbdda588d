"""Optional PNG/SVG charts drawn with matplotlib (``nasplan report|compare --charts png|svg``).

One figure per quantity (throughput in bit/s; file transfer and disk rates in MiB/s), so no axis
mixes units. Bars are grouped by test (and direction), one series per run with a legend; the TCP
maximum (a UDP test's rate asked) is a short marker over its own test's bars, named in the
legend; each bar's whiskers span its repetitions' minimum to maximum (a wide spread shows as
long ones); a test that failed or was skipped keeps its place with the word in it instead of a
bar. Labels are horizontal on the category axis, so a chart still reads at 12 or more bars.
matplotlib is not a dependency: without it the user gets a clear message, and the Mermaid charts
in the Markdown are still there.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.measure import kinds
from nasplan.measure.series import TCP_MAXIMUM
from nasplan.quantities import BITS, BYTES, QUANTITIES, quantity_of

CHART_FORMATS = ("png", "svg")
CHARTS_DIR = "charts"
# Colours of the runs' series (colour-blind safe, matplotlib's tab10 order), then the limit's.
_SERIES_COLOURS = ("#4878a8", "#e08030", "#50a050", "#c04040", "#8060b0", "#8c564b", "#d070b0")
_LIMIT_COLOUR = "#202020"
_RANGE_COLOUR = "#606060"
_MARK_COLOUR = "#c04040"
_FILE_NAMES = {BITS.name: "throughput", BYTES.name: "transfer-and-disk-rates"}


@dataclass
class Chart:
    """One quantity's grouped bars: ``values[series][group]`` (None: no bar), the limit of
    each bar (``limits[series][group]``, e.g. its path's TCP maximum, None when none), its
    repetitions' ``(min, max)`` (``ranges[series][group]``, None with one repetition) and, for a
    bar not drawn, why (``marks[series][group]``: ``failed``, ``skipped``; None)."""

    quantity: str
    title: str
    groups: list[str] = field(default_factory=list)
    series: list[str] = field(default_factory=list)
    values: list[list[float | None]] = field(default_factory=list)
    limits: list[list[float | None]] = field(default_factory=list)
    ranges: list[list[tuple[float, float] | None]] = field(default_factory=list)
    marks: list[list[str | None]] = field(default_factory=list)
    # what each limit is (``TCP maximum``, a UDP test's ``rate asked``)
    limit_names: list[list[str]] = field(default_factory=list)

    def add(
        self,
        index: int,
        value: float | None,
        limit: float | None,
        summary: Mapping[str, Any] | None,
        mark: str | None,
        limit_name: str = TCP_MAXIMUM,
    ) -> None:
        """Append one bar (or its mark) of series ``index`` to the last group."""
        for rows in (self.values, self.limits, self.ranges, self.marks, self.limit_names):
            while len(rows) <= index:
                rows.append([])
        self.values[index].append(value)
        self.limits[index].append(limit)
        self.limit_names[index].append(limit_name)
        self.ranges[index].append(_range(summary) if value is not None else None)
        self.marks[index].append(mark if value is None else None)


def _range(summary: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """A summary's ``(min, max)`` when it has more than one value, else None."""
    low, high = (summary or {}).get("min"), (summary or {}).get("max")
    if (summary or {}).get("n", 0) < 2 or low is None or high is None:
        return None
    return float(low), float(high)


NOT_IN_RUN = "not in this run"


def _mark(status: Any, median: Any) -> str | None:
    """Why a bar is missing: the test's status when it did not end ok, ``no result`` else."""
    if median is not None:
        return None
    return str(status) if status and status != "ok" else "no result"


# matplotlib is imported only when --charts asks for it (a test stands in a broken one here).
_import = importlib.import_module


def _install_hint(prefix: str, base_prefix: str, executable: str) -> str:
    """How to get matplotlib into the Python nasplan runs in: pip into a venv (a system
    package is not seen there), else the system's package or pip."""
    if prefix != base_prefix:
        return f"{executable} -m pip install matplotlib"
    return "apt install python3-matplotlib, or pip install matplotlib"


def _pyplot() -> Any:
    hint = _install_hint(sys.prefix, sys.base_prefix, sys.executable)
    try:
        matplotlib = _import("matplotlib")
        pyplot = _import("matplotlib.pyplot")
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] != "matplotlib":
            raise _broken(exc, hint) from None
        raise InputError(
            f"--charts needs matplotlib: install it ({hint}), or leave --charts out: "
            "the Markdown has Mermaid charts either way"
        ) from None
    except ImportError as exc:  # there, but it does not load (built for another numpy)
        raise _broken(exc, hint) from None
    matplotlib.use("Agg")  # no display needed
    # Same input, same bytes: no creation date, fixed ids in SVG.
    matplotlib.rcParams["svg.hashsalt"] = "nasplan"
    return pyplot


def _broken(exc: ImportError, hint: str) -> InputError:
    said = " ".join(str(exc).split())[:300]
    return InputError(
        f"--charts: matplotlib is installed but does not load ({said}): it may have been built "
        f"for another numpy; upgrade it ({hint.replace('install', 'install --upgrade', 1)}), "
        "or leave --charts out: the Markdown has Mermaid charts either way"
    )


def pyplot() -> Any:
    """matplotlib.pyplot drawing to files (reproducible SVG); InputError when not installed."""
    return _pyplot()


def _limit(theoretical_bits_per_second: float | None, quantity: str) -> float | None:
    """The TCP maximum in the chart's own quantity: bit/s, or bytes/s on a byte-rate chart."""
    if theoretical_bits_per_second is None:
        return None
    return (
        theoretical_bits_per_second / 8 if quantity == BYTES.name else theoretical_bits_per_second
    )


def run_charts(run: Mapping[str, Any]) -> list[Chart]:
    """A run's charts: per quantity, one bar per test and direction, the TCP maximum as limit;
    a test that failed has its group with the mark ``failed`` and no bar."""
    charts: dict[str, Chart] = {}
    for test in run.get("tests", []):
        kind = kinds.readout(test)
        found = kind.series(test)
        for series in found:
            quantity = quantity_of(series.metric)
            median = series.summary.get("median")
            if quantity not in _FILE_NAMES:
                continue
            chart = charts.setdefault(
                quantity,
                Chart(quantity, f"{run['plan']['name']}: median {QUANTITIES[quantity].title}"),
            )
            named = kind.named(test, found)
            chart.groups.append(f"{test['id']} ({series.direction})" if named else test["id"])
            if not chart.series:
                chart.series.append("median")
            chart.add(
                0,
                None if median is None else float(median),
                _limit(series.theoretical_bits_per_second, quantity),
                series.summary,
                _mark(test.get("status"), median),
                series.limit_name,
            )
    return list(charts.values())


def compare_charts(comparison: Mapping[str, Any]) -> list[Chart]:
    """A comparison's charts: per quantity, a group per test row, a series per run."""
    titles = [str(r["title"]) for r in comparison["runs"]]
    charts: dict[str, Chart] = {}
    for test in comparison["tests"]:
        quantity = quantity_of(test["metric"])
        if quantity not in _FILE_NAMES:
            continue
        medians = [side["median"] if side else None for side in test["runs"]]
        if all(side is None for side in test["runs"]):
            continue
        chart = charts.setdefault(
            quantity,
            Chart(
                quantity,
                f"Median {QUANTITIES[quantity].title} per test and run",
                series=titles,
            ),
        )
        chart.groups.append(str(test["label"]))
        for index, (median, side) in enumerate(zip(medians, test["runs"], strict=True)):
            theoretical = side.get("theoretical_bits_per_second") if side else None
            # a run without this test: an empty slot marked, not read as a bar too short to see
            mark = _mark(side.get("status"), median) if side else NOT_IN_RUN
            named = str((side or {}).get("limit_name") or TCP_MAXIMUM)
            chart.add(index, median, _limit(theoretical, quantity), side, mark, named)
    return list(charts.values())


def figure_of(pyplot: Any, chart: Chart) -> Any:
    """Horizontal grouped bars: groups top to bottom, one bar per series, limits as markers,
    min–max whiskers, a failed test's mark; the matplotlib Figure (the caller closes it)."""
    unit, factor = QUANTITIES[chart.quantity].unit(
        [v for row in chart.values for v in row] + [v for row in chart.limits for v in row]
    )
    count, width = len(chart.series), 0.8 / max(1, len(chart.series))
    height = max(2.5, 0.9 + len(chart.groups) * (0.25 + 0.22 * count))
    figure, axes = pyplot.subplots(figsize=(10.5, height))
    positions = list(range(len(chart.groups)))
    labelled: set[str] = set()
    for index, (name, row) in enumerate(zip(chart.series, chart.values, strict=True)):
        offsets = [p - 0.4 + width * (index + 0.5) for p in positions]
        shown = [(o, v / factor) for o, v in zip(offsets, row, strict=True) if v is not None]
        axes.barh(
            [o for o, _ in shown],
            [v for _, v in shown],
            height=width * 0.92,
            color=_SERIES_COLOURS[index % len(_SERIES_COLOURS)],
            label=name if count > 1 else "median",
        )
        # each bar's own limit, a short mark across that bar only
        limits = chart.limits[index] if index < len(chart.limits) else []
        names = chart.limit_names[index] if index < len(chart.limit_names) else []
        for offset, limit, named in zip(offsets, limits, names, strict=False):
            if limit:
                said = f"{named} of the path" if named == TCP_MAXIMUM else named
                axes.plot(
                    [limit / factor] * 2, [offset - width / 2, offset + width / 2],
                    color=_LIMIT_COLOUR, linewidth=2, label=_once(labelled, said),
                )  # fmt: skip
        _whiskers(axes, chart, index, offsets, factor, labelled)
        marks = chart.marks[index] if index < len(chart.marks) else []
        for offset, mark in zip(offsets, marks, strict=False):
            if mark:
                axes.text(
                    0, offset, f" {mark}", va="center", ha="left", fontsize="small",
                    color=_MARK_COLOUR, fontweight="bold",
                )  # fmt: skip
    axes.set_yticks(positions, chart.groups)
    axes.invert_yaxis()  # the first test at the top, as in the tables
    axes.set_xlabel(unit)
    axes.set_title(chart.title)
    axes.grid(axis="x", alpha=0.3)
    # outside the axes, right of the plot, so no bar is hidden whatever the number of bars
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    figure.tight_layout()
    return figure


def _draw(pyplot: Any, chart: Chart, path: Path, chart_format: str) -> None:
    figure = figure_of(pyplot, chart)
    metadata: dict[str, Any] = {"Date": None} if chart_format == "svg" else {}
    figure.savefig(path, format=chart_format, metadata=metadata, dpi=100)
    pyplot.close(figure)


def _once(labelled: set[str], label: str) -> str | None:
    """``label`` the first time (one legend entry), None after."""
    if label in labelled:
        return None
    labelled.add(label)
    return label


def _whiskers(
    axes: Any, chart: Chart, index: int, offsets: Sequence[float], factor: float, labelled: set[str]
) -> None:
    """Series ``index``'s min–max whiskers, one errorbar container for its bars that have one."""
    ranges = chart.ranges[index] if index < len(chart.ranges) else []
    found = [
        (offset, value / factor, low / factor, high / factor)
        for offset, value, span in zip(offsets, chart.values[index], ranges, strict=False)
        if span is not None and value is not None
        for low, high in (span,)
    ]
    if not found:
        return
    axes.errorbar(
        [value for _, value, _, _ in found],
        [offset for offset, _, _, _ in found],
        xerr=[[max(0.0, v - low) for _, v, low, _ in found],
              [max(0.0, high - v) for _, v, _, high in found]],
        fmt="none", ecolor=_RANGE_COLOUR, elinewidth=1, capsize=3,
        label=_once(labelled, "min–max of the repetitions"),
    )  # fmt: skip


def draw_charts(
    charts: Sequence[Chart], out_dir: Path, chart_format: str, relative_to: Path
) -> list[str]:
    """Draw ``charts`` into ``out_dir`` (``throughput.png``, ``transfer-and-disk-rates.png``);
    return their paths relative to ``relative_to``."""
    if chart_format not in CHART_FORMATS:
        raise InputError(f"--charts {chart_format!r}: expected png or svg")
    charts = [c for c in charts if c.groups]
    if not charts:
        return []
    pyplot = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts:
        path = out_dir / f"{_FILE_NAMES[chart.quantity]}.{chart_format}"
        _draw(pyplot, chart, path, chart_format)
        written.append(path.relative_to(relative_to).as_posix())
    return written


def write_charts(run: Mapping[str, Any], run_dir: Path, chart_format: str) -> list[str]:
    """Draw a run's charts into ``run_dir/charts/``; return paths relative to run_dir."""
    return draw_charts(run_charts(run), run_dir / CHARTS_DIR, chart_format, run_dir)


def write_compare_charts(
    comparison: Mapping[str, Any], out_dir: Path, chart_format: str, relative_to: Path
) -> list[str]:
    """Draw a comparison's charts into ``out_dir``; return paths relative to ``relative_to``."""
    return draw_charts(compare_charts(comparison), out_dir, chart_format, relative_to)
