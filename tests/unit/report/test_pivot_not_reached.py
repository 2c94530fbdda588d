"""A run stopped before some of its matrix cells (Ctrl-C, to be finished with ``apply
--resume``) keeps the plan's table: the cells it did not reach read ``not run``. Its plan's
``baseline: {link: p2p25}`` was refused before ("link has no such value (it has: p2p1)") and
the default table laid out instead, so the interrupted run's table looked like another plan's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from nasplan.report import pivot, render_report
from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[3]
TS253D = ROOT / "docs" / "examples" / "ts253d-10g"  # a lab run: 1G, 2.5G, 10G; SMB, iperf3
LINKS = (("smb-1g", "p2p1"), ("smb-2g5", "p2p25"), ("smb-10g", "p2p10"))


def interrupted() -> dict[str, Any]:
    """The lab run's SMB tests as the cells of ``smb`` over ``link``, the run stopped after the
    first: the plan lists all three cells (and an iperf3 test), the run has a record of one."""
    run = load_run(TS253D)
    tests = {t["id"]: t for t in run["tests"]}
    planned = {t["id"]: t for t in run["plan"]["tests"]}
    run["plan"]["tests"] = [
        {**copy.deepcopy(planned[test_id]), "id": f"smb[link={link}]"} for test_id, link in LINKS
    ]
    run["plan"]["tests"].append({**planned["p2p-2g5-read"], "id": "net[link=p2p25]"})
    first = copy.deepcopy(tests["smb-1g"])
    first.update(id="smb[link=p2p1]", base_id="smb", cell={"link": "p2p1"})
    run["tests"] = [first]
    run["status"] = "interrupted"
    run["plan"]["table"] = {
        "rows": ["link"],
        "columns": ["test", "direction"],
        "baseline": {"link": "p2p25"},
    }
    return run


def test_the_cells_a_stopped_run_did_not_reach_read_not_run_in_the_plan_s_table() -> None:
    run = interrupted()
    stubs = pivot.not_reached(run)
    assert [(s["id"], s["base_id"], s["cell"], s["status"]) for s in stubs] == [
        ("smb[link=p2p25]", "smb", {"link": "p2p25"}, "not run"),
        ("smb[link=p2p10]", "smb", {"link": "p2p10"}, "not run"),
        ("net[link=p2p25]", "net", {"link": "p2p25"}, "not run"),
    ]
    table, error = pivot.run_table(run)
    assert error is None and table is not None and not table["default"]
    assert table["baseline"] == {"link": "p2p25"}
    (page,) = table["tables"]
    assert page["header"] == ["link", "smb · write", "smb · read", "net · reverse"]
    texts = {row["values"][0]: [c["text"] for c in row["cells"]] for row in page["rows"]}
    assert list(texts) == ["p2p1", "p2p25", "p2p10"]
    assert texts["p2p25"] == texts["p2p10"] == ["not run"] * 3
    # what was measured is there, with no ratio: its baseline was not reached
    write = page["rows"][0]["cells"][0]
    assert write["n"] == 5 and write["ratio"] is None and "×" not in write["text"]
    assert texts["p2p1"][2] == "not run"  # the iperf3 cell, never begun
    report = render_report(run)
    assert "⚠ the plan's table" not in report
    assert "| p2p25 | not run | not run | not run |" in report


def test_a_finished_run_has_nothing_not_reached() -> None:
    run = load_run(TS253D)
    assert pivot.not_reached(run) == []
    assert pivot.run_table(run) == (None, None)
