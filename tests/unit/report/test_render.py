"""report.md: a pure, reproducible function of run.json that shows what a user expects."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.facts.storage import parse_mdstat
from nasplan.measure import kinds
from nasplan.report import render_report, write_report
from nasplan.report.headline import value_range
from nasplan.report.render import cell, gibibytes, nominal_speed, percent
from nasplan.results import load_run, save_run

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


@pytest.fixture()
def run() -> dict[str, Any]:
    return load_run(SAMPLE)


@pytest.fixture()
def report(run: dict[str, Any]) -> str:
    return render_report(run)


def table_row(report: str, first_cell: str) -> list[str]:
    """The cells of the first table row starting with ``first_cell``."""
    for line in report.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    raise AssertionError(f"no table row for {first_cell!r}")


def test_rendering_twice_gives_identical_bytes(run: dict[str, Any]) -> None:
    assert render_report(run).encode() == render_report(copy.deepcopy(run)).encode()


@pytest.mark.parametrize("kept", ["sample", "all-kinds"])
def test_a_run_from_before_renders_as_it_did_then(tmp_path: Path, kept: str) -> None:
    """``nasplan report`` on a kept run gives the report.md nasplan wrote for it then.

    Each fixture's report.md was rendered when the run was made (all-kinds: a lab run of every
    kind); when a change to the report is intended, render it again with ``nasplan report``
    and commit the new report.md.
    """
    source = SAMPLE.parent / kept
    copied = tmp_path / "run"
    shutil.copytree(source, copied)
    result = CliRunner().invoke(main, ["report", str(copied)])
    assert result.exit_code == 0, result.output
    assert (copied / "report.md").read_bytes() == (source / "report.md").read_bytes()


def test_report_from_a_copied_run_dir_is_byte_identical(tmp_path: Path) -> None:
    first = tmp_path / "a" / "run"
    second = tmp_path / "elsewhere" / "deeper" / "run"
    shutil.copytree(SAMPLE, first)
    shutil.copytree(SAMPLE, second)
    report_path = write_report(first)
    assert report_path == first / "report.md"
    assert write_report(second).read_bytes() == report_path.read_bytes()
    text = report_path.read_text()
    assert str(tmp_path) not in text
    assert str(Path.cwd()) not in text


def test_opening_paragraph_says_what_where_when_and_the_headline(report: str) -> None:
    lines = report.splitlines()
    assert lines[0] == "# nas-upgrade"
    assert "between nas and ws on 2026-11-30 17:30:00 UTC" in report
    assert "3 tests (2 ok, 1 failed)" in report
    assert (
        "- iperf3 TCP: best 9.39 Gbit/s (p2p-parallel: ws → nas.p2p (198.18.1.1), 95 % of its "
        "TCP maximum), worst 941.5 Mbit/s (lan-single: ws → nas.lan (198.18.0.10), 98 % of its "
        "TCP maximum)."
    ) in report
    assert "deliver what the cards promise?" in report


def test_hosts_table_shows_platform_hint_gib_and_iperf3(report: str) -> None:
    nas = table_row(report, "nas")
    assert nas[:3] == ["nas", "198.18.0.10", "debian (inventory says synology)"]
    assert "Intel(R) Celeron(R) J4125 CPU @ 2.00GHz, 4 cores" in nas
    assert "7.7 GiB" in nas
    assert nas[-1] == "3.12"
    assert table_row(report, "ws")[2] == "debian"


def test_nic_tables_show_inventory_role_mtu_speed_without_loopback(report: str) -> None:
    assert "| eth1 | p2p (test) | 9000 | 10 Gbit/s | veth | 198.18.1.1/30 |" in report
    assert "| eth0 | lan (lan) | 1500 | 10 Gbit/s | veth | 198.18.0.20/24 |" in report
    assert "| lo |" not in report


def test_results_table_shows_median_range_efficiency_and_maximum(report: str) -> None:
    lan = table_row(report, "lan-single")
    assert lan == [
        "lan-single",
        "iperf3 TCP, 1 stream",
        "ws → nas.lan (198.18.0.10)",
        "941.5 Mbit/s",
        "939.8–941.5 Mbit/s",
        "3",
        "956.4 Mbit/s TCP maximum (1 Gbit/s, MTU 1500)",
        "98.4 %",
        "retransmits 2; CPU client / server 12.5 % / 30.1 %",
        "ok ⚠ under 3 s",  # 2 s repetitions: too short to trust
    ]
    p2p = table_row(report, "p2p-parallel")
    assert p2p[1] == "iperf3 TCP, 4 streams"
    assert p2p[3:5] == ["9.39 Gbit/s", "8.10–9.41 Gbit/s"]
    assert p2p[-1] == "ok ⚠ wide spread ⚠ under 3 s"


def test_failed_test_is_listed_with_its_error(report: str) -> None:
    row = table_row(report, "p2p-reverse")
    # -R: the data flows from the NAS to the client, and the arrow says so
    assert row[2] == "nas.p2p (198.18.1.1) → ws"
    assert "Path: nas eth1 → ws eth1, 10 Gbit/s" in report
    assert row[3] == "–"
    assert row[-1] == "failed"
    assert (
        "- **p2p-reverse: P2P 10G, NAS sends (-R)**: failed: repetition 1: iperf3 on ws" in report
    )
    assert "- repetition 2: iperf3 on ws: unable to connect to server: Connection refused" in report


def test_details_link_each_raw_file_relative_to_the_report(report: str) -> None:
    links = re.findall(r"\[raw\]\(([^)]+)\)", report)
    assert len(links) == 9
    assert "raw/lan-single/rep-1.json" in links
    for link in links:
        assert (SAMPLE / link).is_file()
    assert "Median 941.5 Mbit/s (117.7 MB/s, 112.2 MiB/s) of 3" in report


def test_method_section_explains_framing_formula_and_spread(report: str) -> None:
    method = report.split("## How the numbers were computed", 1)[1]
    assert "rate × (MTU − 52) / (MTU + 14)" in method
    assert "rate × (MTU − 52) / (MTU + 38)" not in method  # the sample only used tc
    assert "1 Gbit/s × 1448 / 1514 = 956.4 Mbit/s" in method
    assert "what the receiver got" in method
    assert "Mbit/s = 10^6 bit/s" in method
    assert "exceeds 10 %" in method


def test_ethernet_framing_gets_its_own_formula(run: dict[str, Any]) -> None:
    run["tests"][0]["path"].update(framing="ethernet", theoretical_bits_per_second=941482444.7)
    report = render_report(run)
    assert "rate × (MTU − 52) / (MTU + 38)" in report
    assert "1 Gbit/s × 1448 / 1538 = 941.5 Mbit/s" in report


def test_warnings_and_actions_are_shown(report: str) -> None:
    assert "- nas: inventory says platform 'synology' but the host looks like 'debian'" in report
    assert "- **nas**: installed iperf3 with apt-get" in report
    assert "## Unreachable hosts" not in report


def test_unreachable_host_is_reported_with_its_error(run: dict[str, Any]) -> None:
    run["status"] = "unreachable"
    run["hosts"]["nas"].update(
        platform=None, reachable=False, error="ssh: connect to 198.18.0.10 port 22: timed out"
    )
    run["hosts"]["nas"]["facts"] = None
    run["tests"] = [run["tests"][2]]
    run["tests"][0].update(path=None, summary=None, repetitions=[], error="nas is not ready")
    report = render_report(run)
    assert (
        "Run status: **unreachable, 1 warning** (a host could not be used; see "
        "[Warnings](#warnings))." in report
    )
    assert "No test produced a result." in report
    assert "- **nas** (198.18.0.10): ssh: connect to 198.18.0.10 port 22: timed out" in report
    assert table_row(report, "nas")[3] == "unreachable"
    assert "Failed: nas is not ready" in report


def test_interrupted_run_without_finish_time_renders(run: dict[str, Any]) -> None:
    run.update(status="interrupted", finished_at=None, tests=[], warnings=[])
    report = render_report(run)
    assert "(the run took" not in report
    assert "3 tests (3 not run)." in report  # the plan's tests, none of which began
    assert "## Warnings\n\nNone." in report


def test_absolute_plan_path_is_shown_by_file_name_only(run: dict[str, Any]) -> None:
    run["plan_file"] = "/home/alice/lab/plans/nas-upgrade.yaml"
    run["inventory_file"] = "/home/alice/lab/inventory.yaml"
    report = render_report(run)
    assert "/home/alice" not in report
    assert "Plan `nas-upgrade.yaml`, inventory `inventory.yaml`" in report


def test_table_cells_escape_pipes_and_newlines(run: dict[str, Any]) -> None:
    run["tests"][0]["params"]["target"] = "a|b"
    report = render_report(run)
    assert "ws → a\\|b (198.18.0.10)" in report
    assert cell("line one\nline two") == "line one line two"


def test_unit_filters_name_their_units() -> None:
    assert percent(0.9844) == "98.4 %"
    assert percent(0.9459, 0) == "95 %"
    assert gibibytes(8 * 2**30) == "8.0 GiB"
    assert nominal_speed(2_500_000_000) == "2.5 Gbit/s"
    assert nominal_speed(100_000_000) == "100 Mbit/s"
    assert value_range(939_811_840, 941_530_112, "bits_per_second") == "939.8–941.5 Mbit/s"
    bits = value_range(941_000_000, 1_200_000_000, "bits_per_second")
    assert bits == "941.0 Mbit/s – 1.20 Gbit/s"


def test_write_report_refuses_an_invalid_run(tmp_path: Path, run: dict[str, Any]) -> None:
    run["tests"][0]["status"] = "great"
    save_run(tmp_path, run)
    with pytest.raises(InputError, match=r"tests\[0\]\.status: 'great' is not one of"):
        write_report(tmp_path)
    assert not (tmp_path / "report.md").exists()


def test_fixture_run_json_is_byte_for_byte_what_save_run_writes(tmp_path: Path) -> None:
    save_run(tmp_path, json.loads((SAMPLE / "run.json").read_text()))
    assert (tmp_path / "run.json").read_bytes() == (SAMPLE / "run.json").read_bytes()


def test_a_host_s_storage_layout_is_listed_under_its_name(run: dict[str, Any]) -> None:
    mdstat = (
        Path(__file__).resolve().parents[2] / "fixtures" / "storage" / "mdstat-synology-8bay.txt"
    )
    host = next(iter(run["hosts"].values()))
    host["facts"]["storage"] = {
        "md_arrays": parse_mdstat(mdstat.read_text())[3:],
        "mounts": [{"source": "/dev/md0", "mountpoint": "/", "fstype": "ext4"}],
    }
    text = render_report(run)
    name = next(iter(run["hosts"]))
    section = text.split(f"### {name} storage\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        "- RAID: md0 raid1 of 8 (sda1 sdb1 sdc1 sdd1 sde1 sdf1 sdg1 sdh1), 2.4 GiB [UUUUUUUU]",
        "- filesystems: / ext4 on /dev/md0",
    ]


def test_a_kind_without_its_own_section_is_listed_in_its_metrics_unit(
    run: dict[str, Any],
) -> None:
    other = copy.deepcopy(run["tests"][0])
    other.update(id="mtu-sweep", kind="some-new-kind", status="ok", error=None)
    other["summary"] = {**other["summary"], "metric": "path_mtu_bytes", "n": 3}
    other["summary"].update(min=1500.0, median=9000.0, max=9000.0)
    run["tests"].append(other)
    report = render_report(run)
    row = table_row(report, "mtu-sweep")
    # its results row in its metric's unit, min–max written as every other row's
    assert row[1] == "some-new-kind"
    assert row[3:6] == ["9000 bytes", "1500–9000 bytes", "3"]
    assert row[-1] == "ok"


def test_an_iscsi_test_sits_beside_the_transfers_in_mb_and_mib(run: dict[str, Any]) -> None:
    rate = 8 * 2**20 / 0.065878  # the captured 8 MiB write (tests/fixtures/iscsi)
    rep = {"index": 1, "direction": "write", "status": "ok", "error": None, "raw_file": None,
           "bytes": 8 * 2**20, "duration_s": 0.065878, "bytes_per_second": rate,
           "bits_per_second": rate * 8}  # fmt: skip
    run["tests"].append(
        {
            "id": "blk", "kind": "iscsi", "name": "iSCSI, small", "status": "ok", "error": None,
            "params": {"server": "nas", "client": "ws", "target": "nas", "address": "198.18.0.10",
                       "method": "iscsi", "iqn": "iqn.2026-12.lab.nasplan:nas.scratch", "lun": 1,
                       "scratch": True, "size_bytes": 8 * 2**20, "request_bytes": 2**20,
                       "queue_depth": 8, "chap_user": "nasplan", "repetitions": 1},
            "path": None, "repetitions": [rep], "efficiency": None,
            "summary": {"metric": "bits_per_second", "n": 1, "median": rate * 8},
            "directions": {"write": {"metric": "bytes_per_second", "n": 1, "median": rate,
                                     "min": rate, "max": rate, "wide_spread": False}},
        }
    )  # fmt: skip
    report = render_report(run)
    assert "### blk: iSCSI, small (iscsi)" in report
    assert (
        "iqn.2026-12.lab.nasplan:nas.scratch LUN 1 (scratch), 1 MiB requests, 8 in flight" in report
    )
    row = table_row(report, "iscsi")
    assert row[1:6] == ["write", "8 MiB", "0.07 s", "127.3 MB/s", "121.4 MiB/s"]
    assert "## Other tests" not in report


def test_a_loopback_the_inventory_declares_and_a_path_uses_is_in_the_nic_table(
    run: dict[str, Any],
) -> None:
    """A latency test to 127.0.0.1: its path is nas's lo, and lo is no 'not found' row."""
    run["hosts"]["nas"]["interfaces"]["loop"] = {"name": "lo", "role": "test"}
    test = run["tests"][0]
    test["params"].update(target="127.0.0.1", address="127.0.0.1")
    test["path"].update(server_interface="lo", mtu_bytes=65536)
    report = render_report(run)
    assert "not found on the host" not in report
    assert "| lo | loop (test) | 65536 |" in report
    # without the inventory's name, the path alone brings it in
    del run["hosts"]["nas"]["interfaces"]["loop"]
    assert "| lo | – | 65536 |" in render_report(run)
    # and a loopback nothing used stays out
    test["path"].update(server_interface="eth0")
    assert "| lo |" not in render_report(run)


def _headings(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("## ")]


def test_each_kind_s_section_stands_in_the_kinds_order_before_what_every_kind_shares() -> None:
    """The kept lab run of every kind: iperf3's *Details*, the file transfers, the disk and the
    latency sections (each asked of its kind, in the registry's order), then the verdicts and
    the cache warnings and the resources any kind's tests have, then how it was computed."""
    report = render_report(load_run(SAMPLE.parent / "all-kinds"))
    headings = _headings(report)
    kinds_then_shared = [
        "## Details",
        "## File transfers",
        "## Disk (fio on the host)",
        "## Latency (ping)",
        "## What limits the transfers",
        "## Cache warnings",
        "## Resource use during the tests",
        "## How the numbers were computed",
    ]
    assert [h for h in headings if h in kinds_then_shared] == kinds_then_shared


def test_kinds_that_share_a_section_are_told_in_it_once(run: dict[str, Any]) -> None:
    """iSCSI gives the transfers' section: a run of SMB and iSCSI tests has one *File transfers*
    with both, the iSCSI test's note once; a run of iSCSI alone has that section too."""
    rate = 8 * 2**20 / 0.065878
    rep = {"index": 1, "direction": "write", "status": "ok", "error": None, "raw_file": None,
           "bytes": 8 * 2**20, "duration_s": 0.065878, "bytes_per_second": rate}  # fmt: skip
    lun = {
        "id": "blk", "kind": "iscsi", "name": "iSCSI", "status": "ok", "error": None,
        "params": {"server": "nas", "client": "ws", "target": "nas", "address": "198.18.0.10",
                   "method": "iscsi", "iqn": "iqn.2026-12.lab:nas", "lun": 1, "scratch": True,
                   "size_bytes": 8 * 2**20, "repetitions": 1},
        "path": None, "repetitions": [rep], "efficiency": None,
        "summary": {"metric": "bits_per_second", "n": 1, "median": rate * 8},
        "directions": {"write": {"metric": "bytes_per_second", "n": 1, "median": rate,
                                 "min": rate, "max": rate, "wide_spread": False}},
    }  # fmt: skip
    mixed = load_run(SAMPLE.parent / "mixed")
    both = render_report({**mixed, "tests": [*mixed["tests"], lun, {**lun, "id": "blk2"}]})
    assert _headings(both).count("## File transfers") == 1
    transfers = both.split("## File transfers", 1)[1].split("\n## ", 1)[0]
    assert "### smb" in transfers and "### blk: iSCSI (iscsi)" in transfers
    assert "### blk2: iSCSI (iscsi)" in transfers
    note = kinds.kind("iscsi").section_note
    assert note and transfers.count(note) == 1
    alone = render_report({**run, "tests": [lun]})
    assert "### blk: iSCSI (iscsi)" in alone.split("## File transfers", 1)[1]
