"""Rate over time in report.md: Mermaid line charts, rate falls, the matplotlib figure."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from nasplan.analysis import summarize
from nasplan.measure import timeline
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.tools import fio
from nasplan.report import mermaid, render_report
from nasplan.report import timeline as report_timeline
from nasplan.report.render import write_report
from nasplan.results import load_run, run_errors, save_run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SAMPLE = FIXTURES / "runs" / "sample"


def iperf3_intervals() -> list[float | None]:
    raw = (FIXTURES / "iperf3" / "3.12" / "tcp-single.json").read_text()
    return [row["bits_per_second"] for row in iperf3.parse(raw)["intervals"]]


def disk_record() -> dict[str, Any]:
    """A disk test whose one write repetition is the real cache-then-disk fio log."""
    log = fio.parse_bw_log(
        (FIXTURES / "fio" / "bwlog" / "buffered-write-cache-then-disk_bw.1.log").read_text()
    )
    t_s, rates = timeline.fio_points(log, 0.4, "write")
    series = timeline.series(
        repetition=1, direction="write", source="fio", t_s=t_s, bits_per_second=rates,
        started_s=0.4, detect_fall=True,
    )  # fmt: skip
    rate = 480 * 2**20 / 22.1
    return {
        "id": "disk-fall", "kind": "disk", "name": "NAS volume, buffered", "status": "ok",
        "error": None,
        "params": {"host": "nas", "path": "/volume1", "direction": "write",
                   "size_bytes": 480 * 2**20, "block_bytes": 2**20, "direct": False,
                   "repetitions": 1},
        "path": None,
        "repetitions": [{"index": 1, "status": "ok", "error": None, "raw_file": None,
                         "direction": "write", "bytes_per_second": rate, "started_s": 0.4,
                         "ended_s": 22.6}],
        "summary": summarize([rate], "bytes_per_second"), "efficiency": None,
        "directions": {"write": summarize([rate], "bytes_per_second")}, "cache_warning": None,
        "timeline": timeline.timeline([series]),
    }  # fmt: skip


@pytest.fixture()
def run() -> dict[str, Any]:
    """The sample run with real per-second data: iperf3's intervals and a fio log that falls."""
    run = copy.deepcopy(load_run(SAMPLE))
    lan = run["tests"][0]
    t_s, rates = timeline.iperf3_points(iperf3_intervals(), started_s=0.2)
    lan["timeline"] = timeline.timeline(
        [timeline.series(repetition=1, direction=None, source="iperf3", t_s=t_s,
                         bits_per_second=rates, started_s=0.2, detect_fall=False)]
    )  # fmt: skip
    run["tests"].append(disk_record())
    return run


def test_the_run_with_timelines_matches_the_schema(run: dict[str, Any]) -> None:
    assert run_errors(run) == []


def test_an_old_run_has_no_rate_over_time_section() -> None:
    report = render_report(load_run(SAMPLE))
    assert "Rate over time" not in report and "rate per second" not in report


def test_each_timeline_is_a_valid_mermaid_chart_of_a_bar_a_second(run: dict[str, Any]) -> None:
    report = render_report(run)
    assert "## Rate over time" in report
    charts = [b for b in mermaid.blocks(report) if "per second" in b]
    assert len(charts) == 2
    assert all(mermaid.validate(chart) == [] for chart in charts)
    network = next(c for c in charts if '"lan-single: ' in c)
    assert 'y-axis "Mbit/s"' in network
    rate, band = (line for line in network.splitlines() if line.strip().startswith("bar ["))
    (flat,) = (line for line in network.splitlines() if line.strip().startswith("line ["))
    assert set(flat.strip()[6:-1].split(", ")) == {"956.41"}
    values = [float(v) for v in rate.strip()[5:-1].split(", ")]
    # iperf3 3.12 over a 1G tbf: its first second bursts; second 0 measured nothing: the band
    # (full height, drawn over it) stands there, not a bar at 0; at a measured second the band
    # lies below the axis (no rect drawn: a 0 would be a brown stub under the bar)
    assert values == [0, 982.79, 949.78]
    assert band.strip() == "bar [1000, -1000, -1000]"
    legend = report.split(network)[1].split("\n")[3]
    assert legend == (
        "*Blue bars: rate; grey line: TCP maximum; brown band: nothing measured then.*"
    )
    disk = next(c for c in charts if '"disk-fall: ' in c)
    assert 'y-axis "MiB/s"' in disk and "TCP maximum" not in report.split(disk)[1].split("\n")[3]


def test_a_fall_is_named_with_its_time_and_both_rates(run: dict[str, Any]) -> None:
    report = render_report(run)
    assert "Rates that fell after the first seconds:" in report
    (line,) = [x for x in report.splitlines() if x.startswith("- **disk-fall**")]
    assert "write repetition 1: the rate fell after 4 s, from 60.0 MiB/s to 22.0 MiB/s" in line
    assert "lan-single" not in report.split("Rates that fell")[1].split("###")[0]


def test_long_series_are_averaged_to_a_chart_mermaid_can_draw() -> None:
    values: list[float | None] = [8e8] * 300 + [2e8] * 300
    record = {
        "id": "long", "kind": "transfer", "path": {"theoretical_bits_per_second": 9.5e8},
        "timeline": {"throughput": [{"t_s": [float(t) for t in range(1, 601)],
                                     "bits_per_second": values}]},
    }  # fmt: skip
    chart = report_timeline.mermaid_chart(record)
    assert chart is not None and mermaid.validate(mermaid.blocks(chart + "\n")[0]) == []
    assert "3 s averages" in chart
    # every 3 s bucket has a measured second: one bar series, no band
    (rate,) = (line for line in chart.splitlines() if line.strip().startswith("bar ["))
    assert len(rate.split(", ")) == 201


def test_seconds_without_a_point_are_gaps() -> None:
    grid = report_timeline.per_second(
        [{"t_s": [1.0, 2.0], "bits_per_second": [5.0, 6.0]},
         {"t_s": [4.1, 5.0], "bits_per_second": [7.0, None]}]
    )  # fmt: skip
    assert grid == [None, 5.0, 6.0, None, 7.0, None]


def test_charts_png_draws_rate_and_cpu_per_test(run: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run["tests"][-1]["resources"] = {
        "nas": {"samples": 3, "cpu_busy_percent_median": 20.0, "cpu_busy_percent_max": 30.0,
                "mem_available_bytes_min": 2**30, "duration_s": 2.0,
                "series": {"t_s": [1.0, 2.0], "cpu_busy_percent": [10.0, 30.0],
                           "mem_available_bytes": [2**30, 2**30], "disks": {}, "nics": {}}},
    }  # fmt: skip
    save_run(tmp_path, run)
    write_report(tmp_path, charts="png")
    names = {p.name for p in (tmp_path / "charts").iterdir()}
    timelines = {n for n in names if n.startswith("timeline-")}
    assert timelines == {"timeline-disk-fall.png", "timeline-lan-single.png"}
    assert (tmp_path / "charts" / "timeline-disk-fall.png").read_bytes()[:4] == b"\x89PNG"
    report = (tmp_path / "report.md").read_text()
    assert "![disk-fall: rate, CPU and memory per second](charts/timeline-disk-fall.png)" in report
    # each figure once; the timeline figures by their test, after the run's summary charts
    assert report.count("](charts/") == len(names)
    section = report.index("## Rate over time")
    for name in names:
        assert (report.index(f"(charts/{name})") > section) == (name in timelines), name


def test_report_of_a_real_lab_run_over_1g() -> None:
    run = load_run(FIXTURES / "runs" / "timeline-lab")
    report = render_report(run)
    section = report.split("## Rate over time")[1].split("## How the numbers")[0]
    assert "Rates that fell" not in section  # nothing throttled the lab's disk
    # a test without a name of its own is headed by its id alone, not "net: net"
    assert "### net (iperf3)" in section and "### smb (transfer)" in section
    assert "### fio" not in section
    assert "bytes per second on the client's NIC towards the NAS" in section
    every = mermaid.blocks(section)
    # each test: its rate, then CPU and memory on each of the two hosts
    assert len(every) == 10 and all(mermaid.validate(chart) == [] for chart in every)
    # per test: its rate, then the sampler's CPU and memory (test_the_sampler_s_...)
    charts = [chart for chart in every if ": rate per second" in chart]
    assert len(charts) == 2
    # iperf3 in Mbit/s; a file transfer in MiB/s as its table (the README's unit for files)
    for chart, unit, maximum in zip(charts, ("Mbit/s", "MiB/s"), (956.41, 114.01), strict=True):
        assert f'y-axis "{unit}"' in chart
        rate, band = (x.strip()[5:-1] for x in chart.splitlines() if x.strip().startswith("bar"))
        (flat,) = (x.strip()[6:-1] for x in chart.splitlines() if x.strip().startswith("line"))
        assert set(flat.split(", ")) == {str(maximum)}  # 1G at MTU 1500, tc framing
        points = [float(v) for v in rate.split(", ")]
        assert 0.9 * maximum < max(points) < 1.05 * maximum, chart
        # second 0 was not measured: a full-height band there, over the rate's 0, not a bar
        top = float(chart.split('y-axis "')[1].split("--> ")[1].split("\n")[0])
        gaps = [float(v) for v in band.split(", ")]
        assert gaps[0] == top and set(gaps) == {-top, top}
        assert all(p == 0 for p, g in zip(points, gaps, strict=True) if g > 0)
        # the rate blue, the band brown, the maximum grey, and the line under the chart says so
        assert mermaid.colours(chart) == [
            mermaid.DATA_COLOURS[0],
            mermaid.GAP_COLOUR,
            mermaid.LIMIT_COLOUR,
        ]
    said = "Blue bars: rate; grey line: TCP maximum; brown band: nothing measured then."
    assert section.count(f"```\n\n*{said}*") == 2


def test_a_real_smb_write_that_fell_when_the_nas_cache_was_full() -> None:
    run = load_run(FIXTURES / "runs" / "smb-fall-lab")
    (series,) = run["tests"][0]["timeline"]["throughput"]
    assert (series["source"], series["direction"], series["nic"]) == ("nic", "write", "eth0")
    assert series["fall"]["after_s"] == 2.0
    # the NAS's disk was throttled to 25 MB/s: what the NIC carried once its cache was full
    assert 20e6 < series["fall"]["after_bits_per_second"] / 8 < 26.5e6
    assert series["fall"]["before_bits_per_second"] > 3 * series["fall"]["after_bits_per_second"]
    report = render_report(run)
    assert (
        "- **smb-write** write repetition 1: the rate fell after 2 s, from 95.8 MB/s "
        "(91.4 MiB/s) to 25.3 MB/s (24.1 MiB/s), 26 % of the earlier rate" in report
    )
    (chart,) = [b for b in mermaid.blocks(report) if "smb-write: rate" in b]
    assert mermaid.validate(chart) == []


def test_the_sampler_s_cpu_and_memory_are_drawn_beside_the_rate() -> None:
    """The memory series the FreeNAS write-up graphed (vmstat): each host's CPU busy and memory
    available, from run.json's resources.<host>.series, a chart a host (two hosts' bars at one
    second would hide each other), each host in its own data colour, one y-axis for all."""
    run = load_run(FIXTURES / "runs" / "timeline-lab")
    test = run["tests"][1]
    assert test["id"] == "smb"
    cpu_nas, cpu_ws, memory_nas, memory_ws = report_timeline.resource_charts(test)
    charts = {
        ("cpu_busy_percent", "nas"): cpu_nas,
        ("cpu_busy_percent", "ws"): cpu_ws,
        ("mem_available_bytes", "nas"): memory_nas,
        ("mem_available_bytes", "ws"): memory_ws,
    }
    assert "smb: CPU busy on nas, per second" in cpu_nas and "*Blue bars: nas.*" in cpu_nas
    assert "smb: CPU busy on ws, per second" in cpu_ws and "*Orange bars: ws.*" in cpu_ws
    assert "smb: memory available on ws, per second" in memory_ws
    series = {host: test["resources"][host]["series"] for host in ("nas", "ws")}
    for (key, host), chart in charts.items():
        (body,) = mermaid.blocks(chart)
        assert mermaid.validate(body) == []
        assert ('y-axis "%" 0 -->' in body) == (key == "cpu_busy_percent")
        assert ('y-axis "GiB" 0 -->' in body) == (key != "cpu_busy_percent")
        bars = [x.strip()[5:-1] for x in body.splitlines() if x.strip().startswith("bar")]
        drawn = [float(v) for v in bars[0].split(", ")]
        scale = 1 if key == "cpu_busy_percent" else 2**30
        assert drawn == [round(v / scale, 2) for v in series[host][key]]
        colour = mermaid.DATA_COLOURS[0 if host == "nas" else 1]
        assert mermaid.colours(body) == [colour]  # every second sampled: no band
    # one y-axis for both hosts of a quantity, so their heights compare
    assert cpu_nas.split("y-axis")[1].split("\n")[0] == cpu_ws.split("y-axis")[1].split("\n")[0]
    # the sampler's first point is one second after it started: the axis starts there
    assert 'x-axis "seconds since sampling started" 1 -->' in memory_nas
    report = render_report(run)
    assert all(chart in report for chart in charts.values())


def test_a_test_without_sampled_series_has_no_resource_charts() -> None:
    run = load_run(FIXTURES / "runs" / "all-kinds")
    assert [report_timeline.resource_charts(t) for t in run["tests"]] == [[]] * len(run["tests"])
