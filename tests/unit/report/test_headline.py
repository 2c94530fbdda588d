"""Every kind's headline and results rows in its own terms (issue 25), from kept runs and small
runs of each kind built on them."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from nasplan.analysis import summarize, theoretical_udp_bits_per_second
from nasplan.compare import compare_runs
from nasplan.measure import kinds
from nasplan.report import mermaid, render_report
from nasplan.report.headline import headline, rows
from nasplan.results import load_run

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def table_row(report: str, first_cell: str) -> list[str]:
    for line in report.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    raise AssertionError(f"no table row for {first_cell!r}")


def iscsi_test(write_rates: list[float], read_rates: list[float]) -> dict[str, Any]:
    """A FreeNAS-shaped iSCSI test: both directions, write first."""
    reps = []
    for direction, rates in (("write", write_rates), ("read", read_rates)):
        for index, rate in enumerate(rates, start=1):
            reps.append(
                {"index": index, "direction": direction, "status": "ok", "error": None,
                 "raw_file": None, "bytes": 2**26, "duration_s": 2**26 / rate,
                 "bytes_per_second": rate, "bits_per_second": rate * 8}
            )  # fmt: skip
    return {
        "id": "blk", "kind": "iscsi", "name": "iSCSI LUN", "status": "ok", "error": None,
        "params": {"server": "nas", "client": "ws", "target": "nas", "address": "198.18.0.10",
                   "method": "iscsi", "iqn": "iqn.2026-12.lab:nas", "lun": 0, "scratch": True,
                   "size_bytes": 2**26, "request_bytes": 2**20, "queue_depth": 8,
                   "repetitions": len(write_rates), "direction": "both"},
        "path": {"speed_bits_per_second": 10**9, "mtu_bytes": 1500, "framing": "tc",
                 "theoretical_bits_per_second": 956406869.2},
        "repetitions": reps,
        "summary": summarize([r * 8 for r in write_rates], "bits_per_second"),
        "efficiency": None,
        "directions": {"write": summarize(write_rates, "bytes_per_second"),
                       "read": summarize(read_rates, "bytes_per_second")},
    }  # fmt: skip


def test_a_run_of_one_smb_transfer_has_its_headline_and_results_row() -> None:
    report = render_report(load_run(RUNS / "smb-fall-lab"))
    opening = report.split("## Hosts")[0]
    assert "No test produced a result." not in report
    assert "nasplan measured file transfers between nas and ws" in opening
    assert (
        "- File transfers: 30.1 MiB/s (smb-write write: ws → nas (198.19.65.10), 26 % of its "
        "TCP maximum); what limited it: protocol-bound (smb-write write)."
    ) in opening
    row = table_row(report, "smb-write (write)")
    assert row[1:6] == [
        "SMB write",
        "ws → nas (198.19.65.10)",
        "30.1 MiB/s",
        "30.1–30.1 MiB/s",
        "1",
    ]
    assert row[6] == "114.0 MiB/s TCP maximum (1 Gbit/s, MTU 1500)"
    # no empty iperf3 details, no iperf3 method notes in a run without iperf3
    assert "## Details" not in report
    assert "iperf3's `sum_received`" not in report


def udp_run() -> dict[str, Any]:
    run = load_run(RUNS / "sample")
    test = run["tests"][0]
    test["params"].update(protocol="udp", udp_bitrate_bits_per_second=10**9)
    for rep in test["repetitions"]:
        rep.update(retransmits=None, sent_bits_per_second=960e6, bits_per_second=950e6)
        rep.update(packets=100_000, lost_packets=1000, lost_percent=1.0, jitter_ms=0.021)
    test["summary"] = summarize([950e6] * 3, "bits_per_second")
    run["tests"] = [test]
    return run


def test_udp_shows_what_arrived_loss_and_jitter_against_the_rate_asked() -> None:
    report = render_report(udp_run())
    maximum = theoretical_udp_bits_per_second(10**9, 1500, "tc")
    assert round(maximum / 1e6, 1) == 972.3
    row = table_row(report, "lan-single")
    assert row[1] == "iperf3 UDP, 1 stream at 1.00 Gbit/s"
    assert row[3] == "950.0 Mbit/s"
    # judged against what it asked for, not the link
    assert row[6] == "1.00 Gbit/s rate asked (1 Gbit/s, MTU 1500)"
    assert row[7] == "95.0 %"
    assert row[8] == "sent 960.0 Mbit/s; loss 1.00 % (3000 of 300000); jitter 0.021 ms"
    # 1 Gbit/s of UDP payload asks more than a 1G link carries; 1 % lost is not over 1 %
    assert row[9] == "ok ⚠ under 3 s ⚠ asked over the UDP maximum"
    assert "UDP maximum 972.3 Mbit/s." in report  # the path's own, in its details
    assert "TCP throughput" not in report and "TCP maximum" not in report.split("## How")[0]
    assert "nasplan measured UDP throughput with iperf3" in report
    assert "| # | Status | Arrived | Sent | Lost datagrams | Loss | Jitter |" in report
    assert "| 1 | ok | 950.0 Mbit/s | 960.0 Mbit/s | 1000 of 100000 | 1.0 % | 0.021 ms |" in report
    assert "- iperf3 UDP: 950.0 Mbit/s (lan-single: ws → nas.lan (198.18.0.10), 95 % of its " in (
        report
    )
    assert "**UDP maximum**" in report


def test_udp_over_the_link_s_capacity_is_a_warning_with_its_numbers() -> None:
    run = udp_run()
    test = run["tests"][0]
    test["params"].update(udp_bitrate_bits_per_second=500 * 10**6, parallel=4)  # 2G in all
    for rep in test["repetitions"]:
        rep.update(sent_bits_per_second=1.99e9, bits_per_second=950e6, jitter_ms=41.5)
        rep.update(packets=100_000, lost_packets=52_000, lost_percent=52.0)
    caveats = kinds.readout(test).caveats(test)
    assert [c.mark for c in caveats] == [
        "⚠ asked over the UDP maximum", "⚠ loss 52.0 %", "⚠ jitter 41.5 ms"
    ]  # fmt: skip
    assert caveats[0].text == (
        "UDP at 2.00 Gbit/s asks more than the path's UDP maximum (972.3 Mbit/s): the path "
        "cannot carry it, and what did not fit was lost"
    )
    assert caveats[1].text.startswith(
        "UDP loss 52.0 % (156000 of 300000 datagrams) at 2.00 Gbit/s, over the 1 % "
    )
    row = table_row(render_report(run), "lan-single")
    assert row[1] == "iperf3 UDP, 4 streams at 500.0 Mbit/s a stream"
    assert row[6] == "2.00 Gbit/s rate asked (1 Gbit/s, MTU 1500)" and row[7] == "47.5 %"
    assert row[9].endswith("⚠ asked over the UDP maximum ⚠ loss 52.0 % ⚠ jitter 41.5 ms")
    # a sender that could not send what it asked is said as such, not as the path's loss
    for rep in test["repetitions"]:
        rep.update(sent_bits_per_second=0.6e9, bits_per_second=0.6e9, jitter_ms=0.02)
        rep.update(lost_packets=0, lost_percent=0.0)
    test["params"].update(udp_bitrate_bits_per_second=200 * 10**6)  # 800M in all: it fits
    (short,) = kinds.readout(test).caveats(test)
    assert short.mark == "⚠ sent under the rate asked"
    assert short.text.startswith("the UDP sender sent 600.0 Mbit/s (median), 75 % of the")
    test["params"]["protocol"] = "tcp"
    assert kinds.readout(test).caveats(test) == []


def test_iscsi_goes_through_the_per_direction_path_everywhere() -> None:
    test = iscsi_test([110e6, 112e6, 111e6], [100e6, 101e6, 99e6])
    found = kinds.readout(test).series(test)
    assert [(s.direction, s.metric, len(s.values)) for s in found] == [
        ("write", "bytes_per_second", 3),
        ("read", "bytes_per_second", 3),
    ]
    # the console: each direction in MiB/s, not one number in bit/s
    assert kinds.readout(test).result_text(test) == (
        "write median 105.9 MiB/s, read median 95.4 MiB/s"
    )
    run = load_run(RUNS / "sample")
    run["tests"] = [test]
    report = render_report(run)
    assert "iscsi None" not in report and "blk None" not in report
    (chart,) = [b for b in mermaid.blocks(report) if "xychart" in b]
    assert 'x-axis ["blk write", "blk read"]' in chart and 'y-axis "MiB/s"' in chart
    assert table_row(report, "blk (read)")[1:4] == [
        "iSCSI read",
        "nas (198.18.0.10) → ws",
        "95.4 MiB/s",
    ]
    # compare: a row per direction, each with its own repetitions
    other = copy.deepcopy(run)
    other["tests"] = [iscsi_test([55e6, 56e6, 57e6], [200e6, 201e6, 202e6])]
    comparison = compare_runs([run, other], ["a", "b"])
    by_direction = {t["direction"]: t for t in comparison["tests"]}
    assert set(by_direction) == {"write", "read"}
    assert [s["n"] for s in by_direction["read"]["runs"]] == [3, 3]
    assert by_direction["read"]["runs"][0]["median"] == 100e6


def test_a_median_over_the_path_maximum_is_flagged_and_explained() -> None:
    report = render_report(load_run(RUNS / "all-kinds"))
    row = table_row(report, "lan-iperf3")
    # a 1 s iperf3 run: also too short to trust
    assert row[7] == "100.1 %" and row[-1] == "ok ⚠ over the maximum ⚠ under 3 s ⚠ 1 warning"
    assert "100.1 % of its TCP maximum ⚠ over the maximum" in report
    assert "⚠ Over the maximum: lan-iperf3 ran faster than the path's maximum allows" in report
    assert "the path or the speed nasplan assumed is wrong" in report


@pytest.mark.parametrize("kept", ["sample", "all-kinds", "mixed", "smb-fall-lab", "timeline-lab"])
def test_every_kind_of_every_kept_run_has_a_headline_and_rows(kept: str) -> None:
    run = load_run(RUNS / kept)
    lines = headline(run["tests"])
    groups = {line.split(":")[0] for line in lines}
    kinds = {t["kind"] for t in run["tests"]}
    assert len(groups) >= len(kinds)
    report = render_report(run)
    for test in run["tests"]:
        for row in rows(test):
            table_row(report, row["label"])
    assert "(forward)" not in report.split("## Results")[1].split("##")[0] or kept == "mixed"
