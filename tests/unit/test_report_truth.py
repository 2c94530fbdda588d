"""Report and compare say what was measured: per direction, the network in force, one unit per
quantity, charts per quantity, noise not turned into headlines. From a real lab run (see
tests/fixtures/runs/mixed/README.md): SMB, NFS and rsync transfers, a disk, iperf3 with and without
target, --bidir, a cable addressed by the plan at MTU 9000."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from nasplan.analysis import summarize
from nasplan.compare import compare_runs, render
from nasplan.report import mermaid, render_report
from nasplan.report.charts import compare_charts, run_charts, write_compare_charts
from nasplan.results import load_run

MIXED = Path(__file__).parent.parent / "fixtures" / "runs" / "mixed"


@pytest.fixture()
def run() -> dict[str, Any]:
    return load_run(MIXED)


def test_fixture_is_the_real_mixed_run(run: dict[str, Any]) -> None:
    kinds = {t["id"]: t["kind"] for t in run["tests"]}
    assert kinds["smb"] == "transfer" and kinds["disk"] == "disk" and kinds["lan"] == "iperf3"


def scaled(run: dict[str, Any], test_id: str, direction: str, factor: float) -> dict[str, Any]:
    """A copy of ``run`` whose ``test_id`` ``direction`` repetitions are ``factor`` as fast."""
    run = copy.deepcopy(run)
    test = next(t for t in run["tests"] if t["id"] == test_id)
    for rep in test["repetitions"]:
        if rep.get("direction") == direction and rep.get("bytes_per_second"):
            rep["bytes_per_second"] *= factor
            rep["bits_per_second"] *= factor
    values = [
        r["bytes_per_second"]
        for r in test["repetitions"]
        if r.get("direction") == direction and r["status"] == "ok"
    ]
    test["directions"][direction] = summarize(values, "bytes_per_second")
    return run


def rows(markdown: str, first_cell: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.split("|")[1:-1]]
        for line in markdown.splitlines()
        if line.startswith(f"| {first_cell} |")
    ]


def test_each_transfer_direction_is_its_own_row_and_statistic(run: dict[str, Any]) -> None:
    after = scaled(run, "smb", "read", 2.0)  # only reads got faster
    comparison = compare_runs([run, after], ["before", "after"])
    smb = [t for t in comparison["tests"] if t["id"] == "smb"]
    assert [(t["direction"], t["label"]) for t in smb] == [
        ("write", "smb (write)"),
        ("read", "smb (read)"),
    ]
    write, read = (t["versus_first"][1] for t in smb)
    assert write["verdict"] == "within noise" and write["ratio"] == pytest.approx(1.0)
    assert read["verdict"] == "better" and read["ratio"] == pytest.approx(2.0)
    assert "5 vs 5 repetitions" in read["explanation"]  # not 10 vs 10: directions not pooled
    table = list(csv.DictReader(io.StringIO(render(comparison, "csv"))))
    smb_rows = [(r["direction"], r["n"], r["run_index"]) for r in table if r["test_id"] == "smb"]
    assert smb_rows == [("write", "5", "0"), ("write", "5", "1"), ("read", "5", "0"),
                        ("read", "5", "1")]  # fmt: skip
    medians = {(r["direction"], r["run_index"]): float(r["median"]) for r in table
               if r["test_id"] == "smb"}  # fmt: skip
    test = next(t for t in run["tests"] if t["id"] == "smb")
    assert medians[("read", "0")] == test["directions"]["read"]["median"]
    markdown = render(comparison)
    (read_row,) = rows(markdown, "smb (read)")
    assert read_row[4] == "**better** ⚠ under 3 s"  # the fixture's copies take under a second
    assert "Headline: smb (read) is **better** in after" in markdown
    data = json.loads(render(comparison, "json"))
    assert data["format_version"] == 2 and data["tests"][0]["direction"] == "forward"


def test_byte_rates_are_mib_per_second_in_compare_as_in_the_report(run: dict[str, Any]) -> None:
    markdown = render(compare_runs([run, copy.deepcopy(run)]))
    disk = next(t for t in run["tests"] if t["id"] == "disk")
    mib = disk["directions"]["write"]["median"] / 2**20
    assert rows(markdown, "disk (write)")[0][1] == f"{mib:.1f} MiB/s"
    assert f"{mib:.1f} MiB/s" in render_report(run)
    assert " MB/s" not in "\n".join(" ".join(r) for r in rows(markdown, "disk (write)"))


def test_three_against_three_is_tested_for_small_samples_and_named(run: dict[str, Any]) -> None:
    # the disk test ran 3 times per direction (2.1 to 3.4 GB/s), 34 % slower after: Welch's
    # t-test on the logarithms, fit for 3 vs 3, cannot tell it from chance with that spread,
    # and the report says so with p and n: not significant, never "within noise"
    after = copy.deepcopy(run)
    disk = next(t for t in after["tests"] if t["id"] == "disk")
    for rep in disk["repetitions"]:
        rep["bytes_per_second"] *= 0.66
    for summary in disk["directions"].values():
        for key in ("min", "median", "mean", "max"):
            summary[key] *= 0.66
    comparison = compare_runs([run, after])
    disk_rows = [t for t in comparison["tests"] if t["id"] == "disk"]
    assert {t["versus_first"][1]["verdict"] for t in disk_rows} == {"not significant"}
    assert {t["versus_first"][1]["rule"] for t in disk_rows} == {"welch-log"}
    markdown = render(comparison)
    assert rows(markdown, "disk (write)")[0][4] == "not significant ⚠ under 3 s"
    assert "Welch's t-test on log values p = " in rows(markdown, "disk (write)")[0][5]
    assert "3 vs 3 repetitions" in rows(markdown, "disk (write)")[0][5]
    assert "Headline: disk" not in markdown


def test_file_size_compares_across_a_labelled_dimension(run: dict[str, Any]) -> None:
    big = copy.deepcopy(run)
    smb = next(t for t in big["tests"] if t["id"] == "smb")
    smb["params"]["size"], smb["params"]["size_bytes"] = "64MiB", 64 * 2**20
    refused = compare_runs([run, big])
    assert not next(t for t in refused["tests"] if t["id"] == "smb")["comparable"]
    assert "Label the runs along what changed" in render(refused)
    labelled = compare_runs([run, big], ["size=32MiB", "size=64MiB"])
    smb_rows = [t for t in labelled["tests"] if t["id"] == "smb"]
    assert all(t["comparable"] for t in smb_rows)
    assert smb_rows[0]["across"] == ["size: 32MiB → 64MiB", "size_bytes: 33554432 → 67108864"]
    assert "compared across the labelled dimension that changes the workload" in render(labelled)


def test_bidir_reverse_is_its_own_row(run: dict[str, Any]) -> None:
    bidir = next(t for t in run["tests"] if t["params"].get("bidir"))
    assert all(r["reverse_bits_per_second"] > 1e9 for r in bidir["repetitions"])
    comparison = compare_runs([run, copy.deepcopy(run)])
    labels = [t["label"] for t in comparison["tests"] if t["id"] == bidir["id"]]
    assert labels == [f"{bidir['id']} (forward)", f"{bidir['id']} (reverse)"]
    report = render_report(run)
    assert f"| {bidir['id']} (reverse) |" in report


def test_report_shows_the_network_in_force_during_the_tests(run: dict[str, Any]) -> None:
    report = render_report(run)
    nas_nics = report.split("### nas network interfaces")[1].split("###")[0]
    assert "| eth2 | cable (test) | 9000 † |" in nas_nics  # MTU the plan set, not 1500
    assert "198.19.114.1/30 †" in nas_nics  # the address the plan gave the cable
    assert "| eth0 | lan (lan) | 1500 |" in nas_nics  # untouched
    flowchart = mermaid.blocks(report)[0]
    assert "cable: 10 Gbit/s · MTU 9000<br/>198.19.114.1 ↔ 198.19.114.2" in flowchart
    assert (
        "| nas | eth2 | MTU 1500, no address | MTU 9000, 198.19.114.1/30 | MTU 1500, no address |"
        in (report)
    )


def test_a_test_without_target_is_named_by_interface_in_the_report(run: dict[str, Any]) -> None:
    report = render_report(run)
    lan_row = next(line for line in report.splitlines() if line.startswith("| lan |"))
    assert "→ ?" not in lan_row and "→ nas" in lan_row
    assert "Best path: pc → ?" not in report


def test_report_charts_one_per_quantity_with_the_limit_per_test(run: dict[str, Any]) -> None:
    blocks = [
        mermaid.diagram(b)
        for b in mermaid.blocks(render_report(run))
        if mermaid.diagram(b).startswith("xychart")
    ]
    assert all(mermaid.validate(b) == [] for b in blocks)
    bits, byte_rates = blocks
    assert 'y-axis "Gbit/s"' in bits and "line [" not in bits
    assert 'y-axis "MiB/s"' in byte_rates
    assert '"disk write"' in byte_rates and '"smb read"' in byte_rates
    charts = run_charts(run)
    assert [c.quantity for c in charts] == ["bits", "bytes"]
    assert charts[0].limits[0][0] == run["tests"][0]["path"]["theoretical_bits_per_second"]
    assert "smb (read)" in charts[1].groups and "disk (write)" in charts[1].groups
    smb = next(t for t in run["tests"] if t["id"] == "smb")
    limits = dict(zip(charts[1].groups, charts[1].limits[0], strict=True))
    # on a MiB/s axis the TCP maximum is in bytes/s too, never bit/s on the wrong axis
    assert limits["smb (read)"] == smb["path"]["theoretical_bits_per_second"] / 8
    assert limits["disk (write)"] is None


def test_compare_charts_group_tests_with_a_series_per_run(
    run: dict[str, Any], tmp_path: Path
) -> None:
    runs = [run, scaled(run, "smb", "read", 1.5), scaled(run, "smb", "read", 2.0),
            scaled(run, "nfs", "write", 0.5)]  # fmt: skip
    comparison = compare_runs(runs, ["a", "b", "c", "d"])
    charts = compare_charts(comparison)
    by_quantity = {c.quantity: c for c in charts}
    rates = by_quantity["bytes"]
    assert rates.series == ["a", "b", "c", "d"]  # one series (legend entry) per run
    assert len(rates.groups) >= 6  # one group per test and direction
    assert all(len(values) == len(rates.groups) for values in rates.values)
    # each run's bar carries its own path's limit (a reshaped link has another)
    assert all(len(limits) == len(rates.groups) for limits in rates.limits)
    markdown = render(comparison)
    horizontal = [
        mermaid.diagram(b)
        for b in mermaid.blocks(markdown)
        if mermaid.diagram(b).startswith("xychart-beta horizontal")
    ]
    # one chart per quantity: bit/s, MiB/s, ms
    assert [b.splitlines()[3].split('"')[1] for b in horizontal] == ["Gbit/s", "MiB/s", "ms"]
    assert all(mermaid.validate(b) == [] for b in horizontal)
    files = write_compare_charts(comparison, tmp_path / "c-charts", "svg", tmp_path)
    assert files == ["c-charts/throughput.svg", "c-charts/transfer-and-disk-rates.svg"]
    assert (tmp_path / files[1]).read_text().startswith("<?xml")


def test_a_failure_links_the_raw_output_with_the_tool_s_own_words(run: dict[str, Any]) -> None:
    failed = copy.deepcopy(run)
    rsync = next(t for t in failed["tests"] if t["id"] == "rsync")
    rsync["status"], rsync["error"] = "failed", "write 1: ssh: connect to host ... refused"
    rsync["repetitions"][0].update(status="failed", raw_file="raw/rsync/write 1.txt")
    report = render_report(failed)
    line = next(x for x in report.splitlines() if x.startswith("- **rsync: rsync"))
    assert line.endswith("([raw output](raw/rsync/write%201.txt))")
