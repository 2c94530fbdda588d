"""--charts figures (matplotlib): what each figure says, read from its Figure objects, not pixels.

The bar charts of a run and a comparison (nasplan/report/charts.py) and the per-test timeline
figure (nasplan/report/timeline_charts.py), drawn from kept runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from nasplan.compare import compare_runs
from nasplan.report import charts, timeline_charts
from nasplan.results import load_run

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"

pytest.importorskip("matplotlib")


@pytest.fixture()
def plt() -> Any:
    pyplot = charts.pyplot()
    yield pyplot
    pyplot.close("all")


def _throughput(run: dict[str, Any]) -> charts.Chart:
    return next(c for c in charts.run_charts(run) if c.quantity == "bits")


def _whiskers(figure: Any) -> list[Any]:
    """The error bar containers of a figure's axes (matplotlib's ErrorbarContainer)."""
    from matplotlib.container import ErrorbarContainer

    return [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]


def _legend(axes: Any) -> list[str]:
    legend = axes.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_a_wide_spread_has_its_min_max_whiskers(plt: Any) -> None:
    """sample's p2p-parallel: 8.10–9.41 Gbit/s over 3 repetitions, flagged wide spread."""
    run = load_run(RUNS / "sample")
    chart = _throughput(run)
    index = chart.groups.index("p2p-parallel")
    summary = run["tests"][1]["summary"]
    assert summary["wide_spread"]
    assert chart.ranges[0][index] == (summary["min"], summary["max"])
    figure = charts.figure_of(plt, chart)
    (container,) = _whiskers(figure)
    # one whisker per bar with repetitions to span (the failed test has none)
    segments = container.lines[2][0].get_segments()
    assert len(segments) == 2
    spans = sorted((min(s[:, 0]), max(s[:, 0])) for s in segments)
    assert spans[-1] == pytest.approx((summary["min"] / 1e9, summary["max"] / 1e9))
    assert "min–max of the repetitions" in _legend(figure.axes[0])


def test_a_failed_test_keeps_its_place_with_a_mark(plt: Any) -> None:
    """sample's p2p-reverse failed: its group is there, without a bar, saying ``failed``."""
    run = load_run(RUNS / "sample")
    chart = _throughput(run)
    assert chart.groups == ["lan-single", "p2p-parallel", "p2p-reverse"]
    assert chart.values[0][2] is None and chart.marks[0] == [None, None, "failed"]
    figure = charts.figure_of(plt, chart)
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == chart.groups
    marks = [t for t in axes.texts if t.get_text().strip() == "failed"]
    assert len(marks) == 1
    # on the failed test's row, not another's
    assert round(marks[0].get_position()[1]) == 2
    assert len(axes.patches) == 2  # two bars, none for the failed test


def test_a_compare_marks_a_run_whose_test_failed(plt: Any) -> None:
    first = load_run(RUNS / "sample")
    second = copy.deepcopy(first)
    second["run_id"] += "-b"
    failed = second["tests"][0]
    failed.update(status="failed", error="iperf3: connection refused")
    for rep in failed["repetitions"]:
        rep.update(status="failed", bits_per_second=None)
    failed["summary"] = {**failed["summary"], "n": 0, "median": None, "min": None, "max": None}
    chart = _throughput_of(charts.compare_charts(compare_runs([first, second])))
    row = chart.groups.index("lan-single")
    assert chart.marks[1][row] == "failed" and chart.marks[0][row] is None
    figure = charts.figure_of(plt, chart)
    # lan-single in the second run, p2p-reverse (failed when kept) in both
    assert [t.get_text().strip() for t in figure.axes[0].texts].count("failed") == 3
    assert _whiskers(figure)  # the first run's repetitions still have their spread


def test_a_compare_marks_a_test_one_run_lacks(plt: Any) -> None:
    """A test missing from one run: its empty slot says so (not a bar too short to see)."""
    first = load_run(RUNS / "sample")
    second = copy.deepcopy(first)
    second["run_id"] += "-b"
    second["tests"] = [t for t in second["tests"] if t["id"] != "lan-single"]
    chart = _throughput_of(charts.compare_charts(compare_runs([first, second])))
    row = chart.groups.index("lan-single")
    assert chart.values[1][row] is None
    assert chart.marks[1][row] == "not in this run" and chart.marks[0][row] is None
    figure = charts.figure_of(plt, chart)
    (mark,) = [t for t in figure.axes[0].texts if t.get_text().strip() == "not in this run"]
    # in the second run's slot of that row (two bars a row: at row - 0.2 and row + 0.2)
    assert abs(mark.get_position()[1] - (row + 0.2)) < 1e-9


def _throughput_of(found: list[charts.Chart]) -> charts.Chart:
    return next(c for c in found if c.quantity == "bits")


def test_the_rate_fell_marker_is_in_the_legend(plt: Any) -> None:
    run = load_run(RUNS / "smb-fall-lab")
    figure = plt.figure(figsize=timeline_charts.FIGURE_SIZE)
    timeline_charts._draw(figure, run["tests"][0])
    rate_axes = figure.axes[0]
    assert "rate fell (a cache filled)" in _legend(rate_axes)
    (fell,) = [line for line in rate_axes.get_lines() if line.get_linestyle() == ":"]
    assert fell.get_label() == "rate fell (a cache filled)"


def test_the_timeline_figure_draws_each_host_s_cpu_and_memory(plt: Any) -> None:
    run = load_run(RUNS / "timeline-lab")
    test = run["tests"][1]
    figure = plt.figure(figsize=timeline_charts.FIGURE_SIZE)
    timeline_charts._draw(figure, test)
    _, cpu_axes, memory_axes = figure.axes
    assert _legend(cpu_axes) == ["nas", "ws"] and _legend(memory_axes) == ["nas", "ws"]
    assert memory_axes.get_ylabel() == "memory available (GiB)"
    assert cpu_axes.get_ylabel() == "CPU busy, all cores (%)"
    nas = test["resources"]["nas"]["series"]
    (line, other) = memory_axes.get_lines()
    assert list(line.get_xdata()) == nas["t_s"]
    # the lab's two hosts share one machine's memory: both lines must show where they coincide
    assert list(line.get_ydata()) == pytest.approx(list(other.get_ydata()), rel=1e-3)
    assert line.get_linewidth() > other.get_linewidth()
    assert (line.get_linestyle(), other.get_linestyle()) == ("-", "--")
    assert list(line.get_ydata()) == pytest.approx([v / 2**30 for v in nas["mem_available_bytes"]])
    (cpu_line, _) = cpu_axes.get_lines()
    assert list(cpu_line.get_ydata()) == pytest.approx(nas["cpu_busy_percent"])


def test_a_test_without_sampled_series_says_so_in_its_panels(plt: Any) -> None:
    run = load_run(RUNS / "timeline-lab")
    test = copy.deepcopy(run["tests"][0])
    test["resources"] = {}
    figure = plt.figure(figsize=timeline_charts.FIGURE_SIZE)
    timeline_charts._draw(figure, test)
    for axes in figure.axes[1:]:
        assert [t.get_text() for t in axes.texts] == ["not sampled"]


def test_figures_are_written_for_a_run(tmp_path: Path) -> None:
    run = load_run(RUNS / "sample")
    assert charts.write_charts(run, tmp_path, "svg") == ["charts/throughput.svg"]
    assert "failed" in (tmp_path / "charts" / "throughput.svg").read_text()
