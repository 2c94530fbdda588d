"""The write-up's table (report/pivot.py): kept lab runs' records made matrix cells, laid out,
and every cell checked against the record it came from."""

from __future__ import annotations

import copy
import json
import re
import shutil
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.report import pivot, render_report
from nasplan.results import load_run, save_run
from nasplan.significance import verdict
from nasplan.units import format_bits_per_second, format_bytes_per_second

ROOT = Path(__file__).resolve().parents[3]
TS253D = ROOT / "docs" / "examples" / "ts253d-10g"  # a lab run: 1G, 2.5G, 10G; SMB, iperf3
MIXED = ROOT / "tests" / "fixtures" / "runs" / "mixed"  # a lab run: SMB, rsync, NFS; --bidir


def as_cell(record: Mapping[str, Any], base_id: str, **cell: Any) -> dict[str, Any]:
    """A copy of a real run's record as the matrix expansion records a cell of ``base_id``."""
    found = copy.deepcopy(dict(record))
    found["id"] = f"{base_id}[{','.join(f'{k}={pivot.value_text(v)}' for k, v in cell.items())}]"
    found.update(base_id=base_id, cell=cell)
    return found


def by_id(run: Mapping[str, Any], test_id: str) -> dict[str, Any]:
    return next(t for t in run["tests"] if t["id"] == test_id)


@pytest.fixture()
def links() -> dict[str, Any]:
    """The ts253d lab run with its SMB and iperf3 tests as cells of a ``link`` matrix
    (iperf3's reverse tests by their ``reverse`` cell, as a matrix over it records them)."""
    run = load_run(TS253D)
    kept = []
    for test_id, link in (("smb-1g", "p2p1"), ("smb-2g5", "p2p25"), ("smb-10g", "p2p10")):
        kept.append(as_cell(by_id(run, test_id), "smb", link=link))
    for test_id, link in (("lan-1g", "p2p1"), ("p2p-2g5", "p2p25"), ("p2p-10g", "p2p10")):
        kept.append(as_cell(by_id(run, test_id), "net", link=link, reverse=False))
        kept.append(as_cell(by_id(run, f"{test_id}-read"), "net", link=link, reverse=True))
    run["tests"] = [*kept, by_id(run, "nas-disk")]  # a test outside the matrix stays out
    return run


def cells(table: Mapping[str, Any], title: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    """(row, column heading) -> cell, of the table headed ``title``."""
    page = next(t for t in table["tables"] if t["title"] == title)
    heads = page["header"][len(table["rows"]) :]
    return {
        ("/".join(row["values"]), head): cell
        for row in page["rows"]
        for head, cell in zip(heads, row["cells"], strict=True)
    }


def test_each_cell_is_its_record_s_median_spread_ratio_and_verdict(links: dict[str, Any]) -> None:
    spec = pivot.parse_table_option("rows=link,columns=direction,baseline=link=p2p25")
    table = pivot.build(pivot.points_of(links["tests"]), spec)
    assert [t["title"] for t in table["tables"]] == [
        "smb",
        "net, reverse=false",
        "net, reverse=true",
    ]
    smb = cells(table, "smb")
    assert sorted(smb) == sorted(
        (link, d) for link in ("p2p1", "p2p25", "p2p10") for d in ("write", "read")
    )
    for (link, direction), cell in smb.items():
        record = next(
            t for t in links["tests"] if t["cell"] == {"link": link} and t["base_id"] == "smb"
        )
        summary = record["directions"][direction]
        base = by_id(links, "smb[link=p2p25]")["directions"][direction]
        assert (cell["median"], cell["min"], cell["max"], cell["n"]) == (
            summary["median"],
            summary["min"],
            summary["max"],
            summary["n"],
        )
        assert cell["bottleneck"] == record["bottleneck"][direction]["verdict"]
        values = [
            r["bytes_per_second"] for r in record["repetitions"] if r["direction"] == direction
        ]
        assert cell["values"] == values
        assert cell["text"].startswith(format_bytes_per_second(summary["median"]))
        assert cell["text"].endswith(f"n={summary['n']}) {cell['bottleneck']}")
        if link == "p2p25":
            assert cell["baseline"] and cell["ratio"] is None and " baseline " in cell["text"]
            continue
        assert cell["ratio"] == pytest.approx(summary["median"] / base["median"])
        base_values = [
            r["bytes_per_second"]
            for r in by_id(links, "smb[link=p2p25]")["repetitions"]
            if r["direction"] == direction
        ]
        expected = verdict(base_values, values)
        assert (cell["verdict"], cell["rule"]) == (expected.verdict, "mann-whitney")
        assert f"×{cell['ratio']:.2f}*" in cell["text"]  # 5 vs 5, far apart: significant
    # the write-up's own numbers: 10G write ×1.59 of 2.5G, read ×1.98
    assert smb[("p2p10", "write")]["text"] == (
        "294.6 MiB/s ×1.59* ⚠ under 3 s (220.5–364.6, n=5) protocol-bound"
    )  # the lab's copies took under 3 s: the cell says so, as the results table does
    assert smb[("p2p1", "read")]["text"].endswith("n=5) network-bound")


def test_iperf3_s_direction_is_forward_or_reverse_and_bidir_gives_both() -> None:
    run = load_run(MIXED)
    lan, back = by_id(run, "lan"), by_id(run, "lan-read")
    tests = [as_cell(lan, "net", link="lan"), as_cell(back, "net", link="lan-r")]
    tests.append(as_cell(by_id(run, "p2p10-bidir"), "net", link="p2p10"))
    points = pivot.points_of(tests)
    assert [(p.coordinates["link"], p.direction, p.metric) for p in points] == [
        ("lan", "forward", "bits_per_second"),
        ("lan-r", "reverse", "bits_per_second"),
        ("p2p10", "forward", "bits_per_second"),
        ("p2p10", "reverse", "reverse_bits_per_second"),
    ]
    table = pivot.build(points, pivot.TableSpec(("link",), ("direction",)))
    found = cells(table)
    bidir = by_id(run, "p2p10-bidir")
    back_values = [r["reverse_bits_per_second"] for r in bidir["repetitions"]]
    assert found[("p2p10", "reverse")]["median"] == statistics.median(back_values)
    assert found[("p2p10", "forward")]["median"] == bidir["summary"]["median"]
    assert found[("lan", "reverse")]["status"] == "not run"  # lan ran forward only
    assert found[("lan-r", "reverse")]["text"].startswith(
        format_bits_per_second(back["summary"]["median"])
        + " no ratio: baseline not run ⚠ under 3 s (937.2–952.3, n=5)"
    )
    # no baseline named: against the first row's cell of the same direction
    assert table["baseline"] == {"link": "lan"}
    assert found[("p2p10", "forward")]["ratio"] == pytest.approx(
        bidir["summary"]["median"] / lan["summary"]["median"]
    )
    assert found[("lan-r", "reverse")]["ratio"] is None  # its baseline cell did not run


def test_a_missing_failed_or_skipped_cell_says_so_and_is_never_a_zero(
    links: dict[str, Any],
) -> None:
    mixed = load_run(MIXED)
    rsync = as_cell(by_id(mixed, "rsync"), "copy", link="p2p10", method="rsync")
    failed = as_cell(by_id(links, "smb[link=p2p1]"), "copy", link="p2p1", method="smb")
    failed.update(status="failed", error="smbclient: NT_STATUS_LOGON_FAILURE", directions={})
    for rep in failed["repetitions"]:
        rep.update(status="failed", bytes_per_second=None)
    skipped = as_cell(by_id(mixed, "nfs"), "copy", link="p2p25", method="nfs")
    skipped.update(status="skipped", directions={}, repetitions=[])
    tests = [failed, as_cell(by_id(links, "smb[link=p2p10]"), "copy", link="p2p10", method="smb")]
    tests += [rsync, skipped]
    spec = pivot.parse_table_option("rows=link,columns=method/direction,baseline=link=p2p10")
    found = cells(pivot.build(pivot.points_of(tests), spec))
    assert found[("p2p1", "smb · write")]["text"] == "failed"
    assert found[("p2p1", "smb · read")]["text"] == "failed"  # direction: both, none ran
    assert found[("p2p1", "rsync · write")]["text"] == "not run"  # excluded from the matrix
    assert found[("p2p25", "nfs · read")]["text"] == "skipped"
    assert found[("p2p25", "smb · write")]["text"] == "not run"
    for cell in found.values():
        if cell["status"] != "ok":
            assert cell["median"] is None and cell["ratio"] is None
            assert not re.search(r"\b0(\.0)? (MiB|Mbit)", cell["text"])
    summary = rsync["directions"]["read"]
    assert found[("p2p10", "rsync · read")]["text"] == (
        f"{format_bytes_per_second(summary['median'])} baseline ⚠ under 3 s "
        f"({summary['min'] / 2**20:.1f}–{summary['max'] / 2**20:.1f}, n=3) protocol-bound"
    )


def test_significance_marks_follow_the_repetitions_each_side_has(links: dict[str, Any]) -> None:
    base = by_id(links, "smb[link=p2p25]")
    close = as_cell(base, "smb", link="p2p25b")  # the same values, 1 % higher: within noise
    for rep in close["repetitions"]:
        rep["bytes_per_second"] *= 1.01
    three = as_cell(by_id(links, "smb[link=p2p10]"), "smb", link="three")
    three["repetitions"] = [r for r in three["repetitions"] if r["index"] <= 3]
    one = as_cell(by_id(links, "smb[link=p2p10]"), "smb", link="one")
    one["repetitions"] = [r for r in one["repetitions"] if r["index"] == 1]
    spec = pivot.parse_table_option("rows=link,columns=direction,baseline=link=p2p25")
    found = cells(pivot.build(pivot.points_of([base, close, three, one]), spec))
    assert found[("p2p25b", "write")]["verdict"] == "within noise"
    assert " ×1.01 ≈ ⚠ under 3 s (" in found[("p2p25b", "write")]["text"]
    assert found[("three", "write")]["rule"] == "welch-log"  # 5 vs 3
    assert found[("three", "write")]["n"] == 3
    assert found[("one", "write")]["verdict"] == "too few repetitions to tell"
    assert " n too small ⚠ under 3 s (n=1)" in found[("one", "write")]["text"]


def test_without_a_spec_a_matrix_run_gets_the_first_dimension_as_rows(
    links: dict[str, Any],
) -> None:
    table, error = pivot.run_table(links)
    assert error is None and table is not None and table["default"]
    assert (table["rows"], table["columns"]) == (["link"], ["reverse", "direction"])
    assert table["baseline"] == {"link": "p2p1"}
    assert "No table was asked for" in table["notes"][-1]
    report = render_report(links)
    assert report.index("## Table: link × reverse, direction") < report.index("## Hosts")
    assert "| p2p10 | 294.6 MiB/s ×2.97* ⚠ under 3 s (220.5–364.6, n=5) protocol-bound |" in report
    plain = load_run(TS253D)
    assert pivot.run_table(plain) == (None, None)
    assert "## Table" not in render_report(plain)


def test_the_plan_s_table_lays_it_out_and_a_wrong_one_is_said(links: dict[str, Any]) -> None:
    links["plan"]["table"] = {"rows": ["link"], "columns": ["test", "reverse", "direction"],
                              "baseline": {"link": "p2p25"}}  # fmt: skip
    report = render_report(links)
    assert (
        "| link | smb · write | smb · read | net · false · forward | net · true · reverse |"
        in report
    )
    assert "| p2p10 | 294.6 MiB/s ×1.59* ⚠ under 3 s (220.5–364.6, n=5) protocol-bound | " in report
    assert "Baseline: the cell with link=p2p25 and the same other values" in report
    links["plan"]["table"] = {"rows": ["disk"]}
    report = render_report(links)
    assert (
        "⚠ the plan's table: no dimension 'disk' in the results (there are: test, link, "
        "reverse, direction): the default table instead." in report
    )
    assert "## Table: link × reverse, direction" in report


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("rows=link,columns=method/direction,baseline=link=p2p25/size=1GiB,metric=duration_s",
         None),
        ("rows=link,colums=size", "unknown 'colums'"),
        ("rows=link,columns", "expected rows=DIM"),
        ("columns=link", "rows name no dimension"),
        ("rows=link,columns=link", "link named twice"),
        ("rows=link,baseline=p2p25", "baseline is DIM=VALUE"),
    ],
)  # fmt: skip
def test_the_table_option_is_parsed_or_refused_in_one_line(text: str, said: str | None) -> None:
    if said is None:
        spec = pivot.parse_table_option(text)
        assert spec == pivot.TableSpec(
            ("link",), ("method", "direction"), (("link", "p2p25"), ("size", "1GiB")), "duration_s"
        )
        return
    with pytest.raises(InputError, match=re.escape(said)) as caught:
        pivot.parse_table_option(text)
    assert "\n" not in str(caught.value)


@pytest.fixture()
def run_dir(tmp_path: Path, links: dict[str, Any]) -> Path:
    shutil.copytree(TS253D, tmp_path / "run")
    save_run(tmp_path / "run", links)
    return tmp_path / "run"


def test_report_table_writes_the_asked_layout(run_dir: Path, links: dict[str, Any]) -> None:
    table = "rows=link,columns=test/direction,baseline=link=p2p10"
    result = CliRunner().invoke(main, ["report", str(run_dir), "--table", table])
    assert result.exit_code == 0, result.output
    report = (run_dir / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| p2p25 |"))
    write = by_id(links, "smb[link=p2p25]")["directions"]["write"]["median"]
    base = by_id(links, "smb[link=p2p10]")["directions"]["write"]["median"]
    assert row.split(" | ")[1] == f"{format_bytes_per_second(write)} ×{write / base:.2f}* " + (
        "⚠ under 3 s (178.1–191.9, n=5) protocol-bound"
    )


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("rows=size", "nasplan: --table: no dimension 'size' in the results (there are: test, "
         "link, reverse, direction)"),
        ("rows=link,baseline=link=p2p5", "nasplan: --table: baseline link=p2p5: link has no "
         "such value (it has: p2p1, p2p25, p2p10)"),
        ("rows=link,columns=direction,baseline=size=1GiB", "nasplan: --table: no dimension "
         "'size' in the results"),
        ("link", "nasplan: --table 'link': expected rows=DIM[/DIM...][,columns=...]"),
    ],
)  # fmt: skip
def test_report_table_refuses_what_the_run_lacks_with_exit_2(
    run_dir: Path, table: str, said: str
) -> None:
    before = (run_dir / "report.md").read_bytes()
    result = CliRunner().invoke(main, ["report", str(run_dir), "--table", table])
    assert result.exit_code == 2
    assert result.output.startswith(said) and result.output.count("\n") == 1
    assert "Traceback" not in result.output
    assert (run_dir / "report.md").read_bytes() == before  # nothing written


def test_report_table_of_a_run_without_a_matrix_lays_out_its_tests(tmp_path: Path) -> None:
    shutil.copytree(TS253D, tmp_path / "run")
    result = CliRunner().invoke(
        main, ["report", str(tmp_path / "run"), "--table", "rows=test,columns=direction"]
    )
    assert result.exit_code == 0, result.output
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| test | forward | reverse | – | write | read |" in report
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    disk = by_id(run, "nas-disk")["directions"]["write"]["median"]
    row = next(line for line in report.splitlines() if line.startswith("| nas-disk |"))
    assert row.split(" | ")[4].startswith(format_bytes_per_second(disk))
    ping = next(line for line in report.splitlines() if line.startswith("| ping-10g |"))
    # the first test is the baseline: a row of another column says it has none there
    assert ping.split(" | ")[1:] == ["not run", "not run",
                                     "0.045 ms no ratio: baseline not run (0.043–0.048, n=3)",
                                     "not run", "not run |"]  # fmt: skip


def test_a_plain_plan_s_table_lays_its_tests_out() -> None:
    run = load_run(TS253D)
    run["plan"]["table"] = {"rows": ["test"], "columns": ["direction"]}
    report = render_report(run)
    assert "## Table: test × direction" in report
    assert "No table was asked for" not in report
    row = next(line for line in report.splitlines() if line.startswith("| smb-10g |"))
    assert row.split(" | ")[4:] == [
        "294.6 MiB/s no ratio: baseline not run ⚠ under 3 s (220.5–364.6, n=5) protocol-bound",
        "422.5 MiB/s no ratio: baseline not run ⚠ under 3 s (350.6–514.2, n=5) protocol-bound |",
    ]


def test_tests_without_a_split_dimension_share_a_table_and_two_results_are_not_one(
    links: dict[str, Any],
) -> None:
    spec = pivot.TableSpec(("link",), ("test", "direction"), (("link", "p2p25"),))
    table = pivot.build(pivot.points_of(links["tests"]), spec)
    assert [t["title"] for t in table["tables"]] == [
        "without reverse", "reverse=false", "reverse=true"
    ]  # fmt: skip
    twice = [*links["tests"], as_cell(by_id(links, "smb[link=p2p10]"), "smb", link="p2p10")]
    twice[-1]["id"] = "smb-again"
    found = cells(pivot.build(pivot.points_of(twice), spec), "without reverse")
    assert found[("p2p10", "smb · write")]["text"] == "2 results (smb-again, smb[link=p2p10])"
    assert found[("p2p10", "smb · write")]["median"] is None


def test_a_cell_against_the_hdd_volume_and_against_the_2_5g_link(links: dict[str, Any]) -> None:
    """The TS-253D write-up's table: each cell ×x of the HDD volume beside ×y of 2.5GbE. The
    kept run's SMB records stand in for the SSD volume too (their numbers scaled by 2)."""
    kept = [t for t in links["tests"] if t.get("base_id") == "smb"]
    both = []
    for record in kept:
        hdd = as_cell(record, "smb", **record["cell"], volume="hdd")
        ssd = as_cell(record, "smb", **record["cell"], volume="ssd")
        for rep in ssd["repetitions"]:
            rep["bytes_per_second"] *= 2
        for summary in ssd["directions"].values():
            summary.update({k: summary[k] * 2 for k in ("median", "min", "max")})
        both += [hdd, ssd]
    spec = pivot.parse_table_option(
        "rows=link,columns=volume/direction,baseline=volume=hdd,against=link=p2p25"
    )
    table = pivot.build(pivot.points_of(both), spec)
    found = cells(table)
    cell = found[("p2p10", "ssd · write")]
    hdd = found[("p2p10", "hdd · write")]
    assert cell["ratio"] == pytest.approx(2.0)
    (other,) = cell["against"]
    base = by_id(links, "smb[link=p2p25]")["directions"]["write"]["median"]
    assert other["label"] == "link=p2p25"
    assert other["ratio"] == pytest.approx(cell["median"] / (2 * base))
    assert f"×2.00* ×{other['ratio']:.2f}* of link=p2p25 " in cell["text"]
    # the HDD volume is the baseline of its row; the 2.5G cell is that further baseline itself
    assert hdd["baseline"] and " of link=p2p25 " in hdd["text"]
    itself = found[("p2p25", "ssd · write")]
    assert itself["against"] == [{"label": "link=p2p25", "baseline": True}]
    assert " baseline of link=p2p25 " in itself["text"]
    twice = found[("p2p25", "hdd · write")]  # the baseline of both: said once, not twice
    assert " baseline, also of link=p2p25 " in twice["text"]
    assert "baseline baseline" not in twice["text"]
    assert any("Also against the cell with link=p2p25" in n for n in table["notes"])
    plan = pivot.spec_from_plan(
        {"rows": ["link"], "columns": ["volume"], "baseline": {"volume": "hdd"},
         "against": [{"link": "p2p25"}]}
    )  # fmt: skip
    assert plan.against == ((("link", "p2p25"),),) and plan.baseline == (("volume", "hdd"),)
    with pytest.raises(InputError, match="link has no such value"):
        pivot.build(pivot.points_of(both), pivot.parse_table_option(
            "rows=link,columns=volume,against=link=p2p5"))  # fmt: skip


def test_a_test_without_the_baseline_s_dimension_says_so(links: dict[str, Any]) -> None:
    """iperf3 per link beside copies to each volume, tabled against the HDD volume: the
    iperf3 cells have no volume, so no baseline — not a baseline that did not run."""
    copies = [t for t in links["tests"] if t.get("base_id") == "smb"]
    net = [t for t in links["tests"] if t.get("base_id") == "net" and not t["cell"].get("reverse")]
    volumes = [as_cell(r, "smb", **r["cell"], volume=v) for r in copies for v in ("hdd", "ssd")]
    spec = pivot.parse_table_option("rows=link,columns=volume/direction,baseline=volume=hdd")
    table = pivot.build(pivot.points_of([*net, *volumes]), spec)

    iperf3 = cells(table, "net, reverse=false")[("p2p10", "forward")]
    assert iperf3["ratio"] is None and iperf3["no_ratio"] == "no volume", iperf3["text"]
    assert "no ratio: no volume" in iperf3["text"] and "not run" not in iperf3["text"]
    assert cells(table, "smb")[("p2p10", "ssd · write")]["ratio"] == pytest.approx(1.0)
