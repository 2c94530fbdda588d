"""nasplan compare's table: any number of run-label dimensions, with the runs' own matrix cells,
laid out as report/pivot.py lays a run out; compare's verdicts and exit codes unchanged."""

from __future__ import annotations

import copy
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.analysis import summarize
from nasplan.cli import main
from nasplan.compare import compare_runs, render
from nasplan.compare.model import exit_code
from nasplan.report import pivot
from nasplan.results import load_run, save_run
from nasplan.significance import verdict
from nasplan.units import format_bits_per_second, format_bytes_per_second

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "tests" / "fixtures" / "runs" / "sample"
TS253D = ROOT / "docs" / "examples" / "ts253d-10g"


def lan_run(values: list[float]) -> dict[str, Any]:
    """The sample run's lan-single test alone, its repetitions giving ``values`` (bit/s)."""
    run = load_run(SAMPLE)
    test = next(t for t in run["tests"] if t["id"] == "lan-single")
    template = {**test["repetitions"][0], "status": "ok", "error": None}
    test["repetitions"] = [
        {**template, "index": i, "bits_per_second": v} for i, v in enumerate(values, start=1)
    ]
    test.update(status="ok", error=None, summary=summarize(values))
    run.update(tests=[test], status="ok")
    return run


# RAM × disk × link, as hardware changed between eight runs: a median per combination
COMBINATIONS = itertools.product(("1G", "4G"), ("hdd", "ssd"), ("1G", "10G"))
MEDIANS = {combination: 100e6 * (1 + index) for index, combination in enumerate(COMBINATIONS)}


@pytest.fixture()
def eight() -> tuple[list[dict[str, Any]], list[str]]:
    runs, labels = [], []
    for (ram, disk, link), median in MEDIANS.items():
        runs.append(lan_run([median * 0.98, median, median * 1.02]))
        labels.append(f"ram={ram},disk={disk},link={link}")
    return runs, labels


def test_three_label_dimensions_make_the_default_table(eight: Any) -> None:
    runs, labels = eight
    comparison = compare_runs(runs, labels)
    assert comparison["matrix"] is None  # three dimensions: no two-dimensional table
    table = comparison["table"]
    assert table["default"] and table["rows"] == ["ram"] and table["columns"] == ["disk", "link"]
    page = table["tables"][0]
    assert page["header"] == ["ram", "hdd · 1G", "hdd · 10G", "ssd · 1G", "ssd · 10G"]
    for row in page["rows"]:
        (ram,) = row["values"]
        for heading, cell in zip(page["header"][1:], row["cells"], strict=True):
            disk, link = heading.split(" · ")
            median, base = MEDIANS[(ram, disk, link)], MEDIANS[("1G", disk, link)]
            assert cell["median"] == median and cell["n"] == 3
            if ram == "1G":
                # the sample's repetitions took under 3 s: said in every cell
                assert cell["baseline"] and cell["text"].endswith(
                    f" baseline ⚠ under 3 s ({median * 0.98 / 1e6:.1f}–{median * 1.02 / 1e6:.1f}, "
                    "n=3)"
                )
                continue
            assert cell["ratio"] == pytest.approx(median / base)
            expected = verdict(
                [base * 0.98, base, base * 1.02], [median * 0.98, median, median * 1.02]
            )
            assert (cell["verdict"], cell["rule"]) == (expected.verdict, "welch-log")
    markdown = render(comparison)
    assert "## Table: ram × disk, link" in markdown
    assert "## ram ×" not in markdown  # no two-dimensional tables beside it
    row = next(line for line in markdown.splitlines() if line.startswith("| 4G |"))
    first = MEDIANS[("4G", "hdd", "1G")]
    assert row.split(" | ")[1] == (
        f"{format_bits_per_second(first)} ×{first / MEDIANS[('1G', 'hdd', '1G')]:.2f}* "
        f"⚠ under 3 s ({first * 0.98 / 1e6:.1f}–{first * 1.02 / 1e6:.1f}, n=3)"
    )


def test_a_table_asked_for_takes_any_label_dimension_and_baseline(eight: Any) -> None:
    runs, labels = eight
    spec = pivot.parse_table_option("rows=disk/link,columns=ram,baseline=disk=hdd")
    comparison = compare_runs(runs, labels, spec)
    page = comparison["table"]["tables"][0]
    assert page["header"] == ["disk", "link", "1G", "4G"]
    assert [r["values"] for r in page["rows"]] == [
        ["hdd", "1G"], ["hdd", "10G"], ["ssd", "1G"], ["ssd", "10G"]
    ]  # fmt: skip
    ssd = page["rows"][3]["cells"][1]
    assert ssd["ratio"] == pytest.approx(
        MEDIANS[("4G", "ssd", "10G")] / MEDIANS[("4G", "hdd", "10G")]
    )
    # the comparison's own rows, verdicts and exit code are what they were
    plain = compare_runs(runs, labels)
    assert comparison["tests"] == plain["tests"] and comparison["headline"] == plain["headline"]
    assert exit_code(comparison, ["worse"]) == exit_code(plain, ["worse"]) == 0
    assert json.loads(render(comparison, "json"))["table"]["tables"][0]["header"][0] == "disk"


def test_two_label_dimensions_keep_their_matrix_without_a_table_asked_for() -> None:
    runs = [lan_run([v, v, v]) for v in (100e6, 200e6, 300e6, 400e6)]
    labels = ["link=1G,disk=hdd", "link=1G,disk=ssd", "link=10G,disk=hdd", "link=10G,disk=ssd"]
    comparison = compare_runs(runs, labels)
    assert comparison["table"] is None and comparison["matrix"] is not None
    assert "## link × disk" in render(comparison)


def matrix_run(ram_factor: float) -> dict[str, Any]:
    """The ts253d lab run's SMB tests as cells of a link matrix, rates times ``ram_factor``."""
    run = load_run(TS253D)
    kept = []
    for test_id, link in (("smb-1g", "p2p1"), ("smb-2g5", "p2p25"), ("smb-10g", "p2p10")):
        test = copy.deepcopy(next(t for t in run["tests"] if t["id"] == test_id))
        test.update(id=f"smb[link={link}]", base_id="smb", cell={"link": link})
        for rep in test["repetitions"]:
            rep["bytes_per_second"] *= ram_factor
        for direction, summary in test["directions"].items():
            values = [
                r["bytes_per_second"] for r in test["repetitions"] if r["direction"] == direction
            ]
            test["directions"][direction] = summarize(values, summary["metric"])
        kept.append(test)
    run["tests"] = kept
    return run


def test_label_dimensions_combine_with_the_runs_matrix_cells() -> None:
    runs = [matrix_run(1.0), matrix_run(1.5)]
    spec = pivot.parse_table_option("rows=link,columns=ram/direction,baseline=ram=1G")
    comparison = compare_runs(runs, ["ram=1G", "ram=4G"], spec)
    page = comparison["table"]["tables"][0]
    assert page["header"] == ["link", "1G · write", "1G · read", "4G · write", "4G · read"]
    for row in page["rows"]:
        (link,) = row["values"]
        for heading, cell in zip(page["header"][1:], row["cells"], strict=True):
            ram, direction = heading.split(" · ")
            test = next(t for t in runs[ram == "4G"]["tests"] if t["cell"] == {"link": link})
            assert cell["median"] == test["directions"][direction]["median"]
            assert cell["bottleneck"] == test["bottleneck"][direction]["verdict"]
            if ram == "4G":
                assert cell["ratio"] == pytest.approx(1.5)
                assert cell["text"].startswith(
                    f"{format_bytes_per_second(cell['median'])} ×1.50* ⚠ under 3 s ("
                )
    # without --table: the label and the cells make the default (ram as rows)
    default = compare_runs(runs, ["ram=1G", "ram=4G"])["table"]
    assert default["default"] and (default["rows"], default["columns"]) == (
        ["ram"],
        ["link", "direction"],
    )
    first = default["tables"][0]["rows"][1]["cells"][0]  # 4G, p2p1 write
    assert first["median"] == statistics.median(
        r["bytes_per_second"]
        for r in runs[1]["tests"][0]["repetitions"]
        if r["direction"] == "write"
    )


def test_compare_table_on_the_command_line_and_its_exit_2(tmp_path: Path) -> None:
    for name, factor in (("a", 1.0), ("b", 1.5)):
        (tmp_path / name).mkdir()
        save_run(tmp_path / name, matrix_run(factor))
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--label", "ram=1G"]
    args += ["--label", "ram=4G"]
    result = CliRunner().invoke(main, [*args, "--table", "rows=link,columns=ram/direction"])
    assert result.exit_code == 0, result.output
    assert "| link | 1G · write | 1G · read | 4G · write | 4G · read |" in result.output
    bad = CliRunner().invoke(main, [*args, "--table", "rows=disk"])
    assert bad.exit_code == 2
    assert bad.output == (
        "nasplan: --table: no dimension 'disk' in the results "
        "(there are: ram, test, link, direction)\n"
    )
