"""The table off the first path, each a state a user met: a failed test in an ``against`` cell,
an ``against`` ratio on a short cell or without a baseline, iSCSI (no volume) against SMB on
each volume, a transfer stopped after its read, a run whose tests carry warnings. Built from a
kept lab run's records (docs/examples/ts253d-10g) made into matrix cells."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from run_states import check_table

from nasplan.cli import main
from nasplan.measure.record import stopped_record
from nasplan.report import pivot, render_report
from nasplan.report.pivot_cell import SHORT_BASE
from nasplan.results import load_run, save_run

ROOT = Path(__file__).resolve().parents[3]
TS253D = ROOT / "docs" / "examples" / "ts253d-10g"
LINKS = (("smb-1g", "p2p1"), ("smb-2g5", "p2p25"), ("smb-10g", "p2p10"))


def as_cell(run: Mapping[str, Any], test_id: str, base_id: str, **cell: str) -> dict[str, Any]:
    found = copy.deepcopy(next(t for t in run["tests"] if t["id"] == test_id))
    found["id"] = f"{base_id}[{','.join(f'{k}={v}' for k, v in cell.items())}]"
    found.update(base_id=base_id, cell=cell)
    return found


@pytest.fixture()
def volumes() -> dict[str, Any]:
    """The run's SMB tests as cells of a link × volume matrix (the SSD twice the HDD), its
    plan's table the write-ups' shape: rows link, columns volume and direction, against the HDD
    volume and against the 2.5G link."""
    run = load_run(TS253D)
    tests = []
    for test_id, link in LINKS:
        for volume, factor in (("hdd", 1.0), ("ssd", 2.0)):
            record = as_cell(run, test_id, "smb", link=link, volume=volume)
            for rep in record["repetitions"]:
                if rep.get("bytes_per_second"):
                    rep["bytes_per_second"] *= factor
            tests.append(record)
    run["tests"] = tests
    run["plan"]["table"] = {
        "rows": ["link"], "columns": ["volume", "direction"], "baseline": {"volume": "hdd"},
        "against": [{"link": "p2p25"}],
    }  # fmt: skip
    return run


def cell_at(table: Mapping[str, Any], row: str, column: str) -> dict[str, Any]:
    for page in table["tables"]:
        heads = page["header"][len(table["rows"]) :]
        for one in page["rows"]:
            if one["values"][0] == row and column in heads:
                return dict(one["cells"][heads.index(column)])
    raise KeyError((row, column))


def test_a_failed_test_in_an_against_cell_says_so_and_the_report_is_written(
    volumes: dict[str, Any], tmp_path: Path
) -> None:
    failed = next(t for t in volumes["tests"] if t["id"] == "smb[link=p2p25,volume=ssd]")
    failed.update(status="failed", error="mount: permission denied")
    for rep in failed["repetitions"]:
        rep.update(status="failed", bytes_per_second=None, error="mount: permission denied")
    table, _ = pivot.run_table(volumes)
    check_table(table)
    cell = cell_at(table, "p2p10", "ssd · write")
    assert cell["against"] == [{"label": "link=p2p25", "no_ratio": "baseline failed"}]
    assert " no ratio of link=p2p25: baseline failed " in cell["text"]
    save_run(tmp_path, volumes)
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "no ratio of link=p2p25: baseline failed" in (tmp_path / "report.md").read_text()


def test_an_against_ratio_built_on_a_short_cell_is_marked(volumes: dict[str, Any]) -> None:
    # the 2.5G cells' repetitions took under 3 s; the 10G HDD cell's (the main baseline) and
    # the 10G SSD cell's own did not
    for test in volumes["tests"]:
        for rep in test["repetitions"]:
            rep["duration_s"] = 1.5 if test["cell"]["link"] == "p2p25" else 4.0
    table, _ = pivot.run_table(volumes)
    check_table(table)
    cell = cell_at(table, "p2p10", "ssd · write")
    (against,) = cell["against"]
    assert against["short_baseline"] and cell["short_baseline"] and not cell["short"]
    assert cell["text"].count(SHORT_BASE) == 1, cell["text"]


def test_iscsi_without_a_volume_is_against_smb_on_each_volume(volumes: dict[str, Any]) -> None:
    """The NAS question: iSCSI vs SMB on the same disks, in the natural layout (no dummy
    ``volume: [lun]``): each iSCSI cell is compared with each volume's SMB cell, a ratio each,
    and the note under the table says so."""
    run = load_run(TS253D)
    luns = [as_cell(run, test_id, "lun", link=link) for test_id, link in LINKS]
    volumes["tests"] += luns
    volumes["plan"]["table"] = {
        "rows": ["link"], "columns": ["test", "volume", "direction"],
        "baseline": {"test": "smb"}, "against": [{"link": "p2p25"}],
    }  # fmt: skip
    table, _ = pivot.run_table(volumes)
    check_table(table)
    cell = cell_at(table, "p2p10", "lun · write")
    hdd = cell_at(table, "p2p10", "smb · hdd · write")
    ssd = cell_at(table, "p2p10", "smb · ssd · write")
    assert "baseline not run" not in cell["text"]
    by_label = {e["label"]: e["ratio"] for e in cell["ratios"]}
    assert by_label == {
        "volume=hdd": pytest.approx(cell["median"] / hdd["median"]),
        "volume=ssd": pytest.approx(cell["median"] / ssd["median"]),
    }
    assert " of volume=hdd " in cell["text"] and " of volume=ssd " in cell["text"]
    # against the 2.5G link: its own lun cell, the same test without a volume
    (against,) = cell["against"]
    assert against["label"] == "link=p2p25" and against["ratio"] > 0
    assert any("without volume (their test has none) are compared with each" in n
               for n in table["notes"])  # fmt: skip


def test_a_transfer_stopped_after_its_read_shows_what_finished() -> None:
    """Ctrl-C just after a transfer's read: run.json holds an ok write and an ok read of
    repetition 1, no summaries (its kind never summarised it); the table and the results row
    show that pair, n 1, not ``–``; the error is said once."""
    run = load_run(TS253D)
    record = as_cell(run, "smb-10g", "smb", link="p2p10")
    record["repetitions"] = [r for r in record["repetitions"] if r["index"] == 1]
    record["directions"] = {}
    record = stopped_record(record, 3)
    run["tests"] = [record]
    table, _ = pivot.run_table(run)
    check_table(table)
    write = cell_at(table, "p2p10", "write")
    assert write["n"] == 1 and write["median"] and write["status"] == "interrupted"
    report = render_report(run)
    row = next(line for line in report.splitlines() if line.startswith("| smb[link=p2p10] (read)"))
    assert " | 1 | " in row and " | – | – | 1 |" not in row
    assert "interrupted: interrupted" not in report


def test_warnings_are_counted_at_the_top_and_in_the_test_s_status() -> None:
    run = load_run(TS253D)
    lossy = next(t for t in run["tests"] if t["id"] == "lan-1g")
    lossy["warnings"] = ["UDP 67.5 % lost (a sender-limited 701 Mbit/s of 4 Gbit/s asked)"]
    report = render_report(run)
    assert "Run status: **ok, 2 warnings** (every test ran; see [Warnings](#warnings))." in report
    row = next(line for line in report.splitlines() if line.startswith("| lan-1g |"))
    assert row.endswith("| ok ⚠ 1 warning |")
    assert "- lan-1g: UDP 67.5 % lost" in report


def test_fail_on_warnings_gates_a_run_that_ended_ok(tmp_path: Path) -> None:
    run = load_run(TS253D)  # every test ok, one with a warning
    save_run(tmp_path, run)
    plain = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    gated = CliRunner().invoke(main, ["report", str(tmp_path), "--fail-on", "warnings"])
    assert gated.exit_code == 1
    assert "nasplan: --fail-on warnings: the run has 1 warning" in gated.output
    assert (tmp_path / "report.md").is_file()
    for test in run["tests"]:
        test["warnings"] = []
    run["warnings"] = []
    save_run(tmp_path, run)
    clean = CliRunner().invoke(main, ["report", str(tmp_path), "--fail-on", "warning"])
    assert clean.exit_code == 0, clean.output


def test_the_wording_users_paste() -> None:
    """A set faster than one file says ``faster``, one file is ``1 file``, 4.58 files/s is not
    ``5``, and a table of files/s says its unit."""
    from nasplan.report import headline

    run = load_run(TS253D)
    record = as_cell(run, "smb-10g", "smb", link="p2p10")
    record["params"]["files"] = {"count": 1, "size": "64MiB"}
    for rep in record["repetitions"]:
        rep.update(files_per_second=4.58, one_file_bytes_per_second=rep["bytes_per_second"] / 1.48)
    (write, _) = headline.rows(record)
    assert write["measured"] == "SMB write, 1 file of 64 MiB"
    assert "4.58 files/s; 48 % faster than one file of the same bytes" in write["also"]
    assert "-48 %" not in write["also"]
    run["tests"] = [record]
    table, _ = pivot.run_table(run, pivot.parse_table_option("rows=link,metric=files_per_second"))
    assert table is not None
    cell = table["tables"][0]["rows"][0]["cells"][0]
    assert cell["text"].startswith("4.58 files/s "), cell["text"]
