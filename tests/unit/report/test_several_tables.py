"""Several tables per plan (``tables:``) in one report.md, and ``report --table --out FILE``
beside it: a kept lab run (docs/examples/ts253d-matrix: a link matrix, SMB at two sizes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.input.plan import load_plan
from nasplan.report import pivot, render_report
from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[3]
MATRIX = ROOT / "docs" / "examples" / "ts253d-matrix"
LINKS = {"title": "The links", "rows": ["link"], "columns": ["test", "direction"],
         "baseline": {"link": "p2p25"}}  # fmt: skip
SIZES = {"rows": ["size"], "columns": ["link", "direction"], "baseline": {"size": "32MiB"}}


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A copy of the kept run, its plan given two tables and no single one."""
    copy = tmp_path / "run"
    shutil.copytree(MATRIX, copy)
    run = json.loads((copy / "run.json").read_text())
    run["plan"].pop("table")
    run["plan"]["tables"] = [LINKS, SIZES]
    (copy / "run.json").write_text(json.dumps(run))
    return copy


def section(report: str, heading: str) -> str:
    """The report's text from ``heading`` to the next ``## `` heading."""
    start = report.index(heading)
    end = report.find("\n## ", start + len(heading))
    return report[start : end if end >= 0 else None]


def test_each_table_of_the_plan_is_in_the_one_report(run_dir: Path) -> None:
    report = render_report(load_run(run_dir))
    assert report.count("## Table: ") == 2
    links = section(report, "## Table: The links")
    # the smb test varies in size, which neither rows nor columns name: a table per size, and
    # one of the tests without a size
    assert "### without size\n\n| link | net · forward | net-read · reverse |" in links
    assert "### size=32MiB\n\n| link | smb · write | smb · read |" in links
    assert "### size=128MiB" in links
    sizes = section(report, "## Table: size × link, direction")
    assert "| size | lan · write | lan · read | p2p25 · write |" in sizes
    assert "| 32MiB |" in sizes and "| 128MiB |" in sizes
    # the tables come in the plan's order, before the hosts
    assert (
        report.index("## Table: The links")
        < report.index("## Table: size")
        < report.index("## Hosts")
    )


def test_a_single_table_keeps_working_and_takes_a_title(run_dir: Path) -> None:
    run = load_run(run_dir)
    run["plan"].pop("tables")
    run["plan"]["table"] = {**SIZES, "title": "Small and large copies"}
    report = render_report(run)
    assert report.count("## Table: ") == 1
    assert "## Table: Small and large copies" in report


def test_the_single_table_comes_first_then_the_list(run_dir: Path) -> None:
    run = load_run(run_dir)
    run["plan"]["table"] = SIZES
    laid = pivot.run_tables(run)
    titles = [t["title"] for t, _ in laid if t]
    assert titles == ["size × link, direction", "The links", "size × link, direction"]


def test_report_table_out_writes_beside_and_leaves_report_md_alone(run_dir: Path) -> None:
    CliRunner().invoke(main, ["report", str(run_dir)], catch_exceptions=False)
    before = (run_dir / "report.md").read_text()
    assert before.count("## Table: ") == 2
    result = CliRunner().invoke(
        main,
        ["report", str(run_dir), "--table", "rows=test,columns=link/direction,baseline=link=lan",
         "--out", "by-test.md"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(run_dir / "by-test.md")
    written = (run_dir / "by-test.md").read_text()
    assert written.count("## Table: ") == 1
    assert "## Table: test × link, direction" in written
    assert "| test | lan · forward |" in written
    assert (run_dir / "report.md").read_text() == before


def test_an_out_that_is_report_md_with_a_table_is_refused(run_dir: Path) -> None:
    CliRunner().invoke(main, ["report", str(run_dir)], catch_exceptions=False)
    before = (run_dir / "report.md").read_text()
    result = CliRunner().invoke(
        main, ["report", str(run_dir), "--table", "rows=size", "--out", "report.md"]
    )
    assert result.exit_code == 2
    assert "--out report.md: that is the run's report.md, whose tables are the plan's" in (
        result.output
    )
    assert (run_dir / "report.md").read_text() == before


PLAN = """name: cells
inventory: inventory.yaml
matrix:
  link: [lan, p2p]
tables:
  - {rows: [link], columns: [direction], title: Links}
  - rows: [link]
    columns: [disk]
tests:
  - {id: net, kind: iperf3, server: nas, client: ws, target: "nas.{{ matrix.link }}"}
"""
INVENTORY = """
hosts:
  nas:
    address: 198.18.0.10
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.0.10/24}
      p2p: {name: eth1, role: test, speed: 10G}
  ws: {address: 198.18.0.11}
"""


def test_a_listed_table_the_plan_cannot_lay_out_is_named_where_it_stands(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert caught.value.messages == [
        f"{path}:8:15: tables[1].columns[0]: no dimension 'disk' in the plan (there are: link, "
        "test, direction)"
    ]
    path.write_text(PLAN.replace("[disk]", "[direction]"))
    plan: Any = load_plan(path)
    assert [t.get("title") for t in plan.resolved["tables"]] == ["Links", None]


def test_a_table_s_tests_leave_the_others_out(run_dir: Path) -> None:
    """``tests: [smb]``: the table of the SMB copies alone, no page of the iperf3 tests that
    share its link dimension."""
    run = load_run(run_dir)
    run["plan"]["tables"] = [{**LINKS, "tests": ["smb"]}]
    links = section(render_report(run), "## Table: The links")
    assert "### size=32MiB\n\n| link | smb · write | smb · read |" in links
    assert "without size" not in links and "net · forward" not in links
