"""A plan's ``table:`` (nasplan/input/table.py): checked against the plan's matrix before
anything connects, every problem at its FILE:LINE:COL."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.input.plan import load_plan

INVENTORY = """
hosts:
  nas:
    address: 198.18.0.10
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.0.10/24}
      p2p: {name: eth1, role: test, speed: 10G}
  ws: {address: 198.18.0.11}
"""

PLAN = """name: cells
inventory: inventory.yaml
matrix:
  link: [lan, p2p]
  mtu: [1500, 9000]
table:
  rows: [link]
  columns: [COLUMN, direction]
  baseline: {BASELINE}
tests:
  - {id: net, kind: iperf3, server: nas, client: ws, target: "nas.{{ matrix.link }}"}
"""


def write(tmp_path: Path, column: str = "mtu", baseline: str = "link: lan") -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.replace("COLUMN", column).replace("BASELINE", baseline))
    return path


def test_a_table_of_the_plan_s_dimensions_loads_into_run_json_s_plan(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, baseline="mtu: 1500"))
    assert plan.resolved["table"] == {
        "rows": ["link"], "columns": ["mtu", "direction"], "baseline": {"mtu": 1500}
    }  # fmt: skip
    assert [dict(t.cell) for t in plan.tests][-1] == {"link": "p2p", "mtu": 9000}


def test_a_dimension_or_value_the_plan_lacks_is_named_where_it_stands(tmp_path: Path) -> None:
    path = write(tmp_path, column="disk", baseline="link: p2p25, mtu: 9000")
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert caught.value.messages == [
        f"{path}:8:13: table.columns[0]: no dimension 'disk' in the plan (there are: link, mtu, "
        "test, direction)",
        f"{path}:9:20: table.baseline.link: link has no value 'p2p25' (it has: lan, p2p)",
    ]
    result = CliRunner().invoke(main, ["validate", str(write(tmp_path, column="link"))])
    assert result.exit_code == 2
    assert result.output.endswith("table.columns: 'link' is in rows and columns\n")
    assert "Traceback" not in result.output


def test_a_plan_without_a_matrix_may_lay_out_its_tests_and_directions(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(
        "name: plain\ninventory: inventory.yaml\n"
        "table: {rows: [test], columns: [direction]}\n"
        "tests:\n  - {id: net, kind: iperf3, server: nas, client: ws}\n"
    )
    assert load_plan(path).resolved["table"] == {"rows": ["test"], "columns": ["direction"]}
    path.write_text(path.read_text().replace("rows: [test]", "rows: [link]"))
    with pytest.raises(InputError, match=r"table\.rows\[0\]: no dimension 'link' in the plan "
                       r"\(there are: test, direction\)"):  # fmt: skip
        load_plan(path)


def test_a_table_s_tests_are_the_plan_s_and_its_dimensions_theirs(tmp_path: Path) -> None:
    """``tests: [net]`` lays out that test only: a test it does not name is not there, and a
    dimension only another test has is none of the table's."""
    path = write(tmp_path)
    path.write_text(
        path.read_text().replace("table:\n", "table:\n  tests: [net, nope]\n")
        + "  - {id: ping, kind: latency, server: nas, client: ws, matrix: {count: [5, 10]}}\n"
    )
    with pytest.raises(InputError) as caught:
        load_plan(path)
    assert caught.value.messages == [
        f"{path}:7:16: table.tests[1]: no test 'nope' in the plan (there are: net, ping)"
    ]
    path.write_text(path.read_text().replace("[net, nope]", "[net]").replace("mtu, d", "count, d"))
    with pytest.raises(InputError, match=r"table\.columns\[0\]: no dimension 'count' in the plan "
                       r"\(there are: link, mtu, test, direction\)"):  # fmt: skip
        load_plan(path)
