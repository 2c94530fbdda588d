"""How the write-up's table finds each cell's baseline (report/pivot_match.py): a key that goes
with the row stands beside it, a baseline the row's other values miss is the nearest one, and
every cell with a rate has its ratio, the word baseline, or why it has none. Built from a kept
lab run's records made into the matrix cells the write-ups' plans give."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nasplan.report import pivot
from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[3]
TS253D = ROOT / "docs" / "examples" / "ts253d-10g"  # a lab run: 1G, 2.5G, 10G; SMB, iperf3
RATE = re.compile(r"^[0-9.]+ (MiB/s|Mbit/s|Gbit/s|ms) ")
SAID = re.compile(r"^[0-9.]+ (MiB/s|Mbit/s|Gbit/s|ms) (×[0-9.]+|baseline|no ratio: [a-z ]+)")


def record(run: Mapping[str, Any], test_id: str, base_id: str, **cell: Any) -> dict[str, Any]:
    """A copy of the run's record ``test_id`` as the matrix records the cell of ``base_id``."""
    found = copy.deepcopy(next(t for t in run["tests"] if t["id"] == test_id))
    found["id"] = f"{base_id}[{','.join(f'{k}={v}' for k, v in cell.items())}]"
    found.update(base_id=base_id, cell=cell)
    return found


@pytest.fixture(scope="module")
def kept() -> dict[str, Any]:
    return load_run(TS253D)


def median(test: Mapping[str, Any], direction: str) -> float:
    return float(test["directions"][direction]["median"])


def table_of(tests: list[dict[str, Any]], option: str) -> dict[str, Any]:
    return pivot.build(pivot.points_of(tests), pivot.parse_table_option(option))


def rows_of(page: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """First row value -> {heading: cell or row value} of one table."""
    heads = page["header"]
    found = {}
    for row in page["rows"]:
        values = dict(zip(heads, row["values"], strict=False))
        cells = dict(zip(heads[len(row["values"]) :], row["cells"], strict=True))
        found[row["values"][0]] = {**values, **cells}
    return found


def every_rate_says_its_ratio(table: Mapping[str, Any]) -> None:
    """Each cell with a rate carries ×ratio, ``baseline`` or ``no ratio: why``."""
    for page in table["tables"]:
        for row in page["rows"]:
            for cell in row["cells"]:
                if RATE.match(cell["text"]):
                    assert SAID.match(cell["text"]), cell["text"]


def test_an_mtu_an_include_sets_per_link_stands_beside_the_row_and_keeps_its_ratio(
    kept: dict[str, Any],
) -> None:
    # matrix: {link: [p2p1, p2p25, p2p10], include: [{link: p2p10, mtu: 9000}]}
    tests = [
        record(kept, "smb-1g", "smb", link="p2p1"),
        record(kept, "smb-2g5", "smb", link="p2p25"),
        record(kept, "smb-10g", "smb", link="p2p10", mtu=9000),
    ]
    table = table_of(tests, "rows=link,columns=test/direction,baseline=link=p2p25")
    assert [t["title"] for t in table["tables"]] == [""]  # one table, not one per mtu
    (page,) = table["tables"]
    assert page["header"] == ["link", "mtu", "smb · write", "smb · read"]
    rows = rows_of(page)
    assert [rows[link]["mtu"] for link in ("p2p1", "p2p25", "p2p10")] == ["–", "–", "9000"]
    for direction in ("write", "read"):
        cell = rows["p2p10"][f"smb · {direction}"]
        assert cell["ratio"] == pytest.approx(
            median(tests[2], direction) / median(tests[1], direction)
        )
        assert f"×{cell['ratio']:.2f}" in cell["text"]
    assert any(n.startswith("`mtu` goes with link (one value per row") for n in table["notes"])
    every_rate_says_its_ratio(table)


def test_a_row_the_baseline_never_ran_at_its_other_values_is_against_the_nearest_said(
    kept: dict[str, Any],
) -> None:
    # matrix: {link: [p2p1, p2p25, p2p10], mtu: [1500], include: [{link: p2p10, mtu: 9000}]}:
    # the include changes mtu, so it is a cell of its own beside p2p10's at 1500
    tests = [
        record(kept, "smb-1g", "smb", link="p2p1", mtu=1500),
        record(kept, "smb-2g5", "smb", link="p2p25", mtu=1500),
        record(kept, "smb-1g", "smb", link="p2p10", mtu=1500),
        record(kept, "smb-10g", "smb", link="p2p10", mtu=9000),
    ]
    table = table_of(tests, "rows=link,columns=direction,baseline=link=p2p25")
    assert [t["title"] for t in table["tables"]] == ["mtu=1500", "mtu=9000"]
    jumbo = rows_of(table["tables"][1])["p2p10"]
    write = jumbo["write"]
    assert write["ratio"] == pytest.approx(median(tests[3], "write") / median(tests[1], "write"))
    assert (
        "No link=p2p25 cell has mtu=9000: the cells with mtu=9000 are compared with its cell "
        "with mtu=1500 (the nearest it has)." in table["notes"]
    )
    every_rate_says_its_ratio(table)


def test_a_target_per_path_and_the_mac_s_row_find_their_baseline(kept: dict[str, Any]) -> None:
    # matrix: {include: [{setup: pc-2g5, client: pc, target: nas.p2p25},
    #                    {setup: pc-10g, client: pc, target: nas.p2p10},
    #                    {setup: pc-10g-x2, client: pc, target: nas.p2p10, parallel: 2},
    #                    {setup: mac-10g, client: mac, target: nas.p2p10}]}
    tests = [
        record(kept, "p2p-2g5", "tcp", setup="pc-2g5", client="pc", target="nas.p2p25"),
        record(kept, "p2p-10g", "tcp", setup="pc-10g", client="pc", target="nas.p2p10"),
        record(kept, "p2p-10g-p2", "tcp", setup="pc-10g-x2", client="pc", target="nas.p2p10",
               parallel=2),
        record(kept, "lan-1g", "tcp", setup="mac-10g", client="mac", target="nas.p2p10"),
    ]  # fmt: skip
    table = table_of(tests, "rows=setup,columns=direction,baseline=setup=pc-2g5")
    (page,) = table["tables"]
    assert page["header"] == ["setup", "client", "target", "parallel", "forward"]
    rows = rows_of(page)
    assert rows["mac-10g"]["client"] == "mac" and rows["pc-10g-x2"]["parallel"] == "2"
    base = tests[0]["summary"]["median"]
    for setup, test in zip(("pc-10g", "pc-10g-x2", "mac-10g"), tests[1:], strict=True):
        assert rows[setup]["forward"]["ratio"] == pytest.approx(test["summary"]["median"] / base)
    assert "baseline" in rows["pc-2g5"]["forward"]["text"]
    note = next(n for n in table["notes"] if "go with setup" in n)
    assert note.startswith("`client`, `target`, `parallel` go with setup")
    every_rate_says_its_ratio(table)


def test_a_cell_without_a_ratio_says_why(kept: dict[str, Any]) -> None:
    failed = record(kept, "smb-2g5", "smb", link="p2p25")
    failed.update(status="failed", error="smbclient: NT_STATUS_LOGON_FAILURE", directions={})
    for rep in failed["repetitions"]:
        rep.update(status="failed", bytes_per_second=None)
    tests = [failed, record(kept, "smb-10g", "smb", link="p2p10")]
    tests.append(record(kept, "p2p-10g", "net", link="p2p10"))
    table = table_of(tests, "rows=link,columns=test/direction,baseline=link=p2p25")
    rows = rows_of(table["tables"][0])
    assert " no ratio: baseline failed ⚠ under 3 s (" in rows["p2p10"]["smb · write"]["text"]
    assert rows["p2p10"]["smb · write"]["no_ratio"] == "baseline failed"
    # no p2p25 iperf3 test at all: its cell there is `not run`, and so is the reason
    assert rows["p2p25"]["net · forward"]["text"] == "not run"
    assert rows["p2p10"]["net · forward"]["no_ratio"] == "baseline not run"
    every_rate_says_its_ratio(table)


def test_tests_the_table_cannot_hold_are_named_under_it(kept: dict[str, Any]) -> None:
    run = copy.deepcopy(kept)
    smb = [
        record(kept, "smb-2g5", "smb", link="p2p25", size="32MiB"),
        record(kept, "smb-10g", "smb", link="p2p10", size="32MiB"),
    ]
    net = [record(kept, "p2p-10g", "net", link="p2p10")]  # no size: not a row of rows=size
    run["tests"] = [*smb, *net, next(t for t in kept["tests"] if t["id"] == "nas-disk")]
    run["plan"]["tests"] = [{"id": t["id"], "kind": t["kind"]} for t in run["tests"]]
    table, error = pivot.run_table(run, pivot.parse_table_option("rows=size,columns=link"))
    assert error is None and table is not None
    assert (
        "Not in this table (they have no size): `net`; their results are in the Results table "
        "below." in table["notes"]
    )
    assert (
        "Not in this table (not matrix cells): `nas-disk`; their results are in the Results "
        "table below." in table["notes"]
    )
    assert [r["values"] for r in table["tables"][0]["rows"]] == [["32MiB"]]
