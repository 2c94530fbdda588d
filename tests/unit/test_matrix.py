"""``matrix:`` in a plan: GitHub Actions' expansion rules, cell ids, Jinja, located errors,
limits, the network per plan cell; and the record's ``cell`` and ``base_id``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.input.matrix import (
    MAX_CELLS,
    Matrix,
    cell_id,
    combinations,
    dir_name,
    file_stem,
    select,
    split_list,
    to_json_cell,
)
from nasplan.input.plan import Plan, load_plan
from nasplan.results import run_errors

INVENTORY = """\
vars: {user: root}
hosts:
  nas:
    address: 198.18.90.2
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.90.2/24}
      p2p25: {name: eth1, role: test, speed: 2.5G, address: 198.18.91.1/30}
      p2p10: {name: eth2, role: test, speed: 10G, address: 198.18.92.1/30}
  pc: {address: 198.18.90.3}
  mac: {address: 198.18.90.4}
"""


def cells_of(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [to_json_cell(cell) for cell in combinations(Matrix.of(raw))]


def plan_at(tmp_path: Path, text: str) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str) -> Plan:
    return load_plan(plan_at(tmp_path, text))


def errors(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(InputError) as info:
        load(tmp_path, text)
    return [line.replace(f"{tmp_path}/", "") for line in info.value.messages]


# --- GitHub's rules, with the examples of their documentation --------------------------------


def test_cells_come_in_the_order_the_dimensions_are_written() -> None:
    assert cells_of({"version": [10, 12, 14], "os": ["ubuntu-latest", "windows-latest"]}) == [
        {"version": 10, "os": "ubuntu-latest"},
        {"version": 10, "os": "windows-latest"},
        {"version": 12, "os": "ubuntu-latest"},
        {"version": 12, "os": "windows-latest"},
        {"version": 14, "os": "ubuntu-latest"},
        {"version": 14, "os": "windows-latest"},
    ]


def test_include_extends_the_cells_it_changes_no_original_value_of_else_adds_one() -> None:
    matrix = {
        "fruit": ["apple", "pear"],
        "animal": ["cat", "dog"],
        "include": [
            {"color": "green"},
            {"color": "pink", "animal": "cat"},
            {"fruit": "apple", "shape": "circle"},
            {"fruit": "banana"},
            {"fruit": "banana", "animal": "cat"},
        ],
    }
    assert cells_of(matrix) == [
        {"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
        {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
        {"fruit": "pear", "animal": "cat", "color": "pink"},
        {"fruit": "pear", "animal": "dog", "color": "green"},
        {"fruit": "banana"},
        {"fruit": "banana", "animal": "cat"},
    ]


def test_include_adds_a_key_to_one_matching_cell() -> None:
    matrix = {
        "os": ["windows-latest", "ubuntu-latest"],
        "node": [14, 16],
        "include": [{"os": "windows-latest", "node": 16, "npm": 6}],
    }
    assert cells_of(matrix) == [
        {"os": "windows-latest", "node": 14},
        {"os": "windows-latest", "node": 16, "npm": 6},
        {"os": "ubuntu-latest", "node": 14},
        {"os": "ubuntu-latest", "node": 16},
    ]


def test_a_matrix_of_include_alone_is_its_entries() -> None:
    assert cells_of({"include": [{"a": 42}, {"a": "foo"}]}) == [{"a": 42}, {"a": "foo"}]


def test_exclude_removes_the_cells_matching_all_its_keys_before_include() -> None:
    matrix = {
        "os": ["macos-latest", "windows-latest"],
        "version": [12, 14, 16],
        "environment": ["staging", "production"],
        "exclude": [
            {"os": "macos-latest", "version": 12, "environment": "production"},
            {"os": "windows-latest", "version": 16},
        ],
    }
    cells = cells_of(matrix)
    assert len(cells) == 12 - 1 - 2
    assert {"os": "macos-latest", "version": 12, "environment": "staging"} in cells
    assert not [c for c in cells if c["os"] == "windows-latest" and c["version"] == 16]
    # an include that matches an excluded cell's values adds it back as a cell of its own
    again = {**matrix, "include": [{"os": "windows-latest", "version": 16, "x": 1}]}
    assert cells_of(again)[-1] == {"os": "windows-latest", "version": 16, "x": 1}


def test_true_is_not_one() -> None:
    assert cells_of({"a": [1, True], "exclude": [{"a": True}]}) == [{"a": 1}]


# --- ids, directory and file names, patterns ------------------------------------------------


def test_a_cell_id_is_the_base_id_with_its_values_as_written() -> None:
    assert cell_id("smb", {"link": "p2p10", "size": "1GiB"}) == "smb[link=p2p10,size=1GiB]"
    assert cell_id("x", {"jumbo": True, "mtu": 9000, "r": 2.5}) == "x[jumbo=true,mtu=9000,r=2.5]"
    assert cell_id("lan", {}) == "lan"


def test_raw_directories_and_host_files_are_safe_names_and_distinct() -> None:
    assert dir_name("smb[link=p2p10,size=1GiB]") == "smb[link=p2p10,size=1GiB]"
    one, two = dir_name("disk[path=/a/b]"), dir_name("disk[path=_a_b]")
    assert "/" not in one and one.startswith("disk[path=_a_b]-") and one != two
    assert dir_name("lan-1g") == "lan-1g"
    stem = file_stem("smb[link=p2p10,size=1GiB]")
    assert stem.startswith("smb_link_p2p10_size_1GiB_-") and set(stem) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
    )
    assert file_stem("lan-1g") == "lan-1g"


def test_patterns_match_ids_and_base_ids_with_only_star_and_question_mark_wild() -> None:
    ids = [
        ("smb[link=p2p10,size=1GiB]", "smb"),
        ("smb[link=p2p25,size=1GiB]", "smb"),
        ("lan", "lan"),
    ]
    assert select(ids, ["smb[link=p2p10*"]) == (["smb[link=p2p10,size=1GiB]"], [])
    assert select(ids, ["smb"]) == (["smb[link=p2p10,size=1GiB]", "smb[link=p2p25,size=1GiB]"], [])
    assert select(ids, ["smb[link=p2p10,size=1GiB]", "l?n"])[0] == [
        "smb[link=p2p10,size=1GiB]",
        "lan",
    ]
    assert select(ids, ["smb[l]", "nope*"]) == ([], ["smb[l]", "nope*"])
    assert split_list(["smb[link=p2p10,size=1GiB],lan", " x "]) == [
        "smb[link=p2p10,size=1GiB]",
        "lan",
        "x",
    ]
    # a bracket left open: a dimension's value after a comma goes on the same cell
    assert split_list(["tcp[client=pc,nic=lan*"]) == ["tcp[client=pc,nic=lan*"]
    assert split_list(["tcp[client=pc,nic=lan*,smb"]) == ["tcp[client=pc,nic=lan*", "smb"]
    assert split_list(["smb[link=p2p10*,lan"]) == ["smb[link=p2p10*", "lan"]
    ids = [("tcp[client=pc,nic=lan1]", "tcp"), ("tcp[client=pc,nic=p2p]", "tcp")]
    assert select(ids, split_list(["tcp[client=pc,nic=lan*"])) == (
        ["tcp[client=pc,nic=lan1]"],
        [],
    )


# --- plans with a matrix ----------------------------------------------------------------------

PLAN = """\
name: mx
inventory: inventory.yaml
tests:
  - id: smb
    name: SMB copy
    kind: transfer
    method: rsync
    path: /tmp
    server: nas
    client: pc
    target: "nas.{{ matrix.link }}"
    repetitions: 1
    matrix:
      link: [p2p25, p2p10]
      size: [1GiB, 10GiB]
      direction: [write]
  - {id: lat, kind: latency, server: nas, client: pc}
"""


def test_each_cell_is_a_test_with_its_id_name_cell_and_the_keys_its_dimensions_set(
    tmp_path: Path,
) -> None:
    plan = load(tmp_path, PLAN)
    ids = [t.id for t in plan.tests]
    assert ids == [
        "smb[link=p2p25,size=1GiB,direction=write]",
        "smb[link=p2p25,size=10GiB,direction=write]",
        "smb[link=p2p10,size=1GiB,direction=write]",
        "smb[link=p2p10,size=10GiB,direction=write]",
        "lat",
    ]
    first = plan.tests[0]
    assert first.base_id == "smb" and dict(first.cell) == {
        "link": "p2p25",
        "size": "1GiB",
        "direction": "write",
    }
    assert first.name == "SMB copy [link=p2p25,size=1GiB,direction=write]"
    assert first.target.label() == "nas.p2p25" and plan.tests[2].target.label() == "nas.p2p10"
    # size and direction are keys of a transfer the test does not set: the dimensions set them
    assert first.settings["size"] == "1GiB" and plan.tests[1].settings["size"] == "10GiB"
    assert first.settings["direction"] == "write"
    # link is no key of a transfer: only the Jinja sees it
    assert "link" not in first.settings
    assert plan.tests[-1].cell == {} and plan.tests[-1].base_id == "lat"
    assert [t.index for t in plan.tests] == [0, 1, 2, 3, 4]
    # run.json's plan holds every cell's test under its own id
    assert [t["id"] for t in plan.resolved["tests"]] == ids


def test_a_key_the_test_sets_itself_is_not_set_by_the_dimension(tmp_path: Path) -> None:
    text = PLAN.replace(
        "    repetitions: 1\n", "    repetitions: 1\n    size: '{{ matrix.size }}B'\n"
    )
    text = text.replace("size: [1GiB, 10GiB]", "size: [1Gi, 10Gi]")
    plan = load(tmp_path, text)
    assert [t.settings["size"] for t in plan.tests[:2]] == ["1GiB", "10GiB"]


def test_a_plan_matrix_expands_every_test_and_combines_with_a_tests_own(tmp_path: Path) -> None:
    text = PLAN.replace("      link: [p2p25, p2p10]\n", "").replace(
        "tests:\n",
        "matrix:\n  link: [p2p25, p2p10]\n  include: [{link: p2p10, mtu: 9000}]\ntests:\n",
    )
    plan = load(tmp_path, text)
    assert [t.id for t in plan.tests][:2] == [
        "smb[link=p2p25,size=1GiB,direction=write]",
        "smb[link=p2p25,size=10GiB,direction=write]",
    ]
    assert plan.tests[2].id == "smb[link=p2p10,mtu=9000,size=1GiB,direction=write]"
    assert [t.id for t in plan.tests][-2:] == ["lat[link=p2p25]", "lat[link=p2p10,mtu=9000]"]
    assert len(plan.tests) == 2 * 2 + 2


def test_typed_values_reach_the_test_typed(tmp_path: Path) -> None:
    text = """\
name: mx
inventory: inventory.yaml
tests:
  - id: tcp
    kind: iperf3
    server: nas
    client: "{{ matrix.client }}"
    duration_s: "{{ matrix.secs }}"
    matrix: {parallel: [1, 2], client: [pc, mac], secs: [1]}
"""
    plan = load(tmp_path, text)
    assert [t.id for t in plan.tests] == [
        "tcp[parallel=1,client=pc,secs=1]",
        "tcp[parallel=1,client=mac,secs=1]",
        "tcp[parallel=2,client=pc,secs=1]",
        "tcp[parallel=2,client=mac,secs=1]",
    ]
    assert plan.tests[3].settings["parallel"] == 2 and plan.tests[3].client == "mac"
    assert plan.tests[0].settings["duration_s"] == 1
    assert plan.host_names == ("mac", "nas", "pc")
    # distinct ports: one per test of the expanded plan
    assert len({t.index for t in plan.tests}) == 4


# --- located errors naming the cell and the dimension -------------------------------------


def test_a_bad_value_a_dimension_sets_is_located_at_the_matrix_value(tmp_path: Path) -> None:
    lines = errors(tmp_path, PLAN.replace("size: [1GiB, 10GiB]", "size: [1GiB, 10Gx]"))
    assert lines == [
        "plan.yaml:15:20: tests[0] smb[link=p2p25,size=10Gx,direction=write]: size: "
        "'10Gx' is not valid: expected file size: 1GiB = 2^30 bytes, 1GB = 10^9 bytes"
    ]


def test_an_error_every_cell_shares_is_told_once_at_the_tests_key(tmp_path: Path) -> None:
    lines = errors(tmp_path, PLAN.replace("    repetitions: 1\n", "    repetitions: 0\n"))
    assert len(lines) == 1
    assert lines[0].startswith(
        "plan.yaml:12:18: tests[0] smb[link=p2p25,size=1GiB,direction=write]: repetitions: "
    )


def test_a_host_a_dimension_names_is_checked_per_cell(tmp_path: Path) -> None:
    text = PLAN.replace("    client: pc\n", "").replace("direction: [write]", "client: [pc, wz]")
    assert errors(tmp_path, text) == [
        "plan.yaml:15:20: tests[0] smb[link=p2p25,size=1GiB,client=wz]: client: unknown host "
        "'wz' (inventory inventory.yaml has: mac, nas, pc)"
    ]


def test_jinja_naming_the_matrix_outside_one_or_a_dimension_it_lacks(tmp_path: Path) -> None:
    text = PLAN.replace("client: pc}", "client: pc, count: '{{ matrix.count }}'}")
    assert errors(tmp_path, text) == [
        "plan.yaml:17:62: tests[1].count: {{ matrix.* }} outside a matrix: give the test (or the "
        "plan) a matrix:"
    ]
    text = PLAN.replace("nas.{{ matrix.link }}", "nas.{{ matrix.lnk }}")
    assert errors(tmp_path, text) == [
        "plan.yaml:11:13: tests[0].target: matrix.lnk: the matrix has no dimension 'lnk' "
        "(has: link, size, direction)"
    ]


def test_a_dimension_in_the_plans_matrix_and_a_tests(tmp_path: Path) -> None:
    text = PLAN.replace("tests:\n", "matrix: {size: [1MiB]}\ntests:\n")
    assert errors(tmp_path, text) == [
        "plan.yaml:16:13: tests[0].matrix.size: dimension 'size' is in the plan's matrix too; "
        "name it in one"
    ]


def test_bad_matrices_are_located(tmp_path: Path) -> None:
    for bad, expected in [
        ("other: []", "tests[0].matrix.other: [] should be non-empty"),
        ("other: p2p10", "tests[0].matrix.other: 'p2p10' is not of type 'array'"),
        ("exclude: [{nope: 1}]", "exclude names 'nope', not a dimension of the matrix"),
        ("include: [{}]", "tests[0].matrix.include[0]: {} should be non-empty"),
        ("kind: [iperf3]", "tests[0].matrix: 'kind' should not be valid"),
        ("a b: [1]", "tests[0].matrix: 'a b' is not valid: expected a dimension's name"),
    ]:
        text = PLAN.replace("      direction: [write]\n", f"      {bad}\n")
        lines = errors(tmp_path, text)
        assert len(lines) == 1 and expected in lines[0], (bad, lines)
        assert lines[0].startswith("plan.yaml:1"), lines


def test_an_id_cannot_use_the_matrix(tmp_path: Path) -> None:
    lines = errors(tmp_path, PLAN.replace("id: smb", "id: 'smb-{{ matrix.link }}'"))
    assert lines == [
        "plan.yaml:4:9: tests[0].id: an id cannot use the matrix: each cell's id is the test's "
        "id with its cell added"
    ]


def test_a_matrix_over_the_limit_is_refused_before_any_cell_is_built(tmp_path: Path) -> None:
    values = list(range(40))
    text = PLAN.replace("      direction: [write]\n", f"      a: {values}\n      b: {values}\n")
    started = time.monotonic()
    lines = errors(tmp_path, text)
    assert lines == [
        f"plan.yaml:14:7: tests[0].matrix: the matrix has more than {MAX_CELLS} cells; "
        "split the plan"
    ]
    # the plan's and the test's together
    text = PLAN.replace("tests:\n", f"matrix: {{a: {values}}}\ntests:\n").replace(
        "      direction: [write]\n", f"      b: {values}\n"
    )
    assert "more than 1000 cells" in errors(tmp_path, text)[0]
    # a billion cells on paper is refused as fast
    huge = "".join(f"      d{n}: {values}\n" for n in range(8))
    assert (
        "more than 1000 cells"
        in errors(tmp_path, PLAN.replace("      direction: [write]\n", huge))[0]
    )
    assert time.monotonic() - started < 5


def test_duplicate_ids_from_values_that_print_alike(tmp_path: Path) -> None:
    lines = errors(tmp_path, PLAN.replace("direction: [write]", "x: [1, '1']"))
    assert lines[0] == (
        "plan.yaml:4:9: tests[0] smb[link=p2p25,size=1GiB,x=1]: id: duplicate test id "
        "'smb[link=p2p25,size=1GiB,x=1]' (also tests[0])"
    )


# --- the network per plan cell ----------------------------------------------------------------

NETWORK_PLAN = """\
name: mx
inventory: inventory.yaml
matrix: {mtu: [1500, 9000]}
interfaces:
  - {host: nas, interface: p2p10, mtu: "{{ matrix.mtu }}"}
tests:
  - {id: tcp, kind: iperf3, server: nas, client: pc, target: nas.p2p10}
  - {id: lat, kind: latency, server: nas, client: pc, target: nas.p2p10}
"""


def test_network_settings_using_the_plans_matrix_are_each_cells_own(tmp_path: Path) -> None:
    plan = load(tmp_path, NETWORK_PLAN)
    assert [t.id for t in plan.tests] == ["tcp[mtu=1500]", "tcp[mtu=9000]", "lat[mtu=1500]",
                                          "lat[mtu=9000]"]  # fmt: skip
    mtus = [t.network.interfaces[0].mtu_bytes if t.network else None for t in plan.tests]
    assert mtus == [1500, 9000, 1500, 9000]
    # one NetworkSpec per distinct setting, shared by its cells (the engine groups by it)
    assert plan.tests[0].network is plan.tests[2].network
    assert plan.network.interfaces[0].mtu_bytes == 1500


def test_network_settings_need_a_plan_matrix_and_valid_values(tmp_path: Path) -> None:
    text = NETWORK_PLAN.replace("matrix: {mtu: [1500, 9000]}\n", "")
    assert errors(tmp_path, text) == [
        "plan.yaml:4:3: interfaces: {{ matrix.* }} in the network settings needs a plan-level "
        "matrix:"
    ]
    lines = errors(tmp_path, NETWORK_PLAN.replace("9000]", "99999]"))
    assert len(lines) == 1 and "99999 is greater than the maximum of 9216" in lines[0]
    assert lines[0].endswith("(matrix cell mtu=99999)")


# --- the record --------------------------------------------------------------------------------


def test_a_cells_record_carries_its_base_id_and_cell_and_passes_the_run_schema(
    tmp_path: Path,
) -> None:
    from nasplan.measure.record import new_record

    plan = load(tmp_path, PLAN)
    record = new_record(plan.tests[2], {}, "bits_per_second")
    assert record["id"] == "smb[link=p2p10,size=1GiB,direction=write]"
    assert record["base_id"] == "smb"
    assert record["cell"] == {"link": "p2p10", "size": "1GiB", "direction": "write"}
    plain = new_record(plan.tests[-1], {}, "bits_per_second")
    assert "cell" not in plain and "base_id" not in plain
    json.dumps(record)
    assert run_errors({"schema_version": 1, "tests": [record]})  # the run's other keys missing
    assert not [e for e in run_errors({"tests": [record]}) if "tests[0]" in e]


def test_the_example_matrix_plan_validates_and_lists_its_cells() -> None:
    from click.testing import CliRunner

    from nasplan.cli import main

    example = str(Path(__file__).resolve().parents[2] / "plans" / "examples" / "matrix.yaml")
    validated = CliRunner().invoke(main, ["validate", example])
    assert (validated.exit_code, validated.stdout) == (0, "ok\n")
    listed = CliRunner().invoke(main, ["apply", example, "--list-tests", "--format", "json"])
    assert listed.exit_code == 0
    document = json.loads(listed.stdout)
    assert document["count"] == document["matrix_cells"] == 3 * 3 + 3 * 2 * 2
    assert document["tests"][0]["id"] == "tcp[link=lan,parallel=1,reverse=false]"


def test_validate_as_json_takes_a_cells_error_apart(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nasplan.cli import main

    path = plan_at(tmp_path, PLAN.replace("size: [1GiB, 10GiB]", "size: [1GiB, 10Gx]"))
    result = CliRunner().invoke(main, ["validate", str(path), "--format", "json"])
    assert result.exit_code == 2
    (error,) = json.loads(result.stdout)["errors"]
    assert (error["line"], error["column"], error["path"]) == (15, 20, "tests[0].size")
    assert error["message"].startswith("smb[link=p2p25,size=10Gx,direction=write]: '10Gx' is not")


def test_an_exclude_that_leaves_no_cell_is_an_error_not_the_test_without_its_matrix(
    tmp_path: Path,
) -> None:
    excluded = "      exclude:\n        - {link: p2p25}\n        - {link: p2p10}\n"
    text = PLAN.replace("      direction: [write]\n", "      direction: [write]\n" + excluded)
    assert errors(tmp_path, text) == [
        "plan.yaml:18:9: tests[0].matrix.exclude: exclude leaves no cell of the matrix: nothing "
        "of the test would run; remove an exclude entry, or the test"
    ]
    # the plan's matrix alike
    plan_level = PLAN.replace(
        "tests:\n",
        "matrix:\n  link: [p2p25, p2p10]\n  exclude: [{link: p2p25}, {link: p2p10}]\ntests:\n",
    ).replace("      link: [p2p25, p2p10]\n", "")
    assert errors(tmp_path, plan_level) == [
        "plan.yaml:5:12: matrix.exclude: exclude leaves no cell of the matrix: none of the "
        "plan's tests would run; remove an exclude entry, or the test"
    ]
    # one exclude entry fewer leaves cells: they run
    kept = load(tmp_path, text.replace("        - {link: p2p10}\n", ""))
    assert [t.cell["link"] for t in kept.tests if t.cell] == ["p2p10", "p2p10"]


def test_a_list_over_its_limit_is_one_short_line_not_the_list_again(tmp_path: Path) -> None:
    entries = "".join(f"        - {{link: p2p10, n: {n}}}\n" for n in range(1500))
    text = PLAN.replace("      direction: [write]\n", f"      include:\n{entries}")
    lines = errors(tmp_path, text)
    assert lines == ["plan.yaml:17:9: tests[0].matrix.include: 1500 entries: at most 1000 allowed"]


def test_jinja_in_matrix_values_is_rendered_over_vars_and_the_cell_shows_what_it_gave(
    tmp_path: Path,
) -> None:
    """Matrix values are plan values: their Jinja (over hosts, groups and vars; not matrix) is
    rendered before the matrix is expanded, and the cell's id shows the value it gave."""
    text = PLAN.replace("tests:\n", "vars: {big: 10GiB, streams: 4}\ntests:\n").replace(
        "size: [1GiB, 10GiB]", "size: [1GiB, '{{ vars.big }}']"
    )
    par = (
        "  - {id: par, kind: iperf3, server: nas, client: pc,\n"
        "     matrix: {parallel: ['{{ vars.streams }}', '{{ 7*7 }}']}}\n"
    )
    text = text.replace("  - {id: lat,", par + "  - {id: lat,")
    plan = load(tmp_path, text)
    ids = [t.id for t in plan.tests]
    assert "smb[link=p2p25,size=10GiB,direction=write]" in ids
    assert [t.settings["parallel"] for t in plan.tests if t.base_id == "par"] == [4, 49]
    assert "par[parallel=49]" in ids
    # a value that names the matrix itself has nothing to be rendered over yet
    bad = PLAN.replace("size: [1GiB, 10GiB]", "size: ['{{ matrix.link }}']")
    assert "'matrix' is undefined" in errors(tmp_path, bad)[0]
