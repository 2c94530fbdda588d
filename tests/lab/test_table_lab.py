"""The write-up's table for real: a 2 links × 2 sizes SMB matrix run in the lab, its report's
table read back cell by cell against run.json, and laid out again with ``report --table``."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.plan import load_plan
from nasplan.lab import LabState, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest
from nasplan.units import format_bytes_per_second

LAB = {
    "name": "table-lab",
    "lan": {"prefix": "198.19.172.0/24", "rate": "1G"},
    "hosts": {"nas": {"services": ["smb"]}, "ws": {}},
    "links": [
        {
            "name": "p2p",
            "rate": "2.5G",
            "mtu": 1500,
            "a": {"host": "nas", "interface": "eth1", "address": "198.19.173.1/30"},
            "b": {"host": "ws", "interface": "eth1", "address": "198.19.173.2/30"},
        }
    ],
}
SMB = "{{ hosts.nas.smb.%s }}"


def table_of(report: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header and the rows (first cell -> the others) of the report's first table under
    ``## Table``."""
    section = report[report.index("\n## Table") :].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("|"))
    end = next(i for i, line in enumerate(section) if i > start and not line.startswith("|"))
    lines = section[start:end]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    header, rows = split[0], split[2:]
    return header, {row[0]: row[1:] for row in rows}


def expected_cell(
    record: Mapping[str, Any], direction: str, base: Mapping[str, Any] | None
) -> tuple[str, str]:
    """A cell's text from the run's record alone, before and after the significance mark:
    median and ratio; min–max, n and what limited it."""
    summary = record["directions"][direction]
    text = format_bytes_per_second(summary["median"])
    if base is None:
        text += " baseline"
    else:
        ratio = summary["median"] / base["directions"][direction]["median"]
        text += f" ×{ratio:.2f}"
    low, high = (format_bytes_per_second(summary[k]).split(" ")[0] for k in ("min", "max"))
    return text, f"({low}–{high}, n={summary['n']}) {record['bottleneck'][direction]['verdict']}"


def check_cell(cell: str, record: Mapping[str, Any], direction: str, base: Any) -> None:
    head, tail = expected_cell(record, direction, base)
    assert cell.startswith(head), (cell, head)
    assert cell.endswith(tail), (cell, tail)
    middle = cell[len(head) : -len(tail)]
    # copies of a few MiB take well under 3 s: the cell says so (and a ratio built on one)
    short = "⚠ under 3 s " if record_is_short(record, direction) else ""
    if base is not None:  # the mark, if any, is one of compare's verdicts' marks
        assert middle in (f"* {short}", f" n.s. {short}", f" ≈ {short}", f" {short}"), cell
    else:
        assert middle == f" {short}", cell


def record_is_short(record: Mapping[str, Any], direction: str) -> bool:
    """Whether a repetition of ``direction`` took under 3 s, from run.json's repetitions."""
    return any(r["duration_s"] < 2.95 for r in record["repetitions"] if r["direction"] == direction)


def test_a_matrix_run_s_report_has_its_table_cell_by_cell(
    make_lab: Callable[[dict[str, Any]], LabState],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = make_lab(LAB)
    password = services.read_password(state.host_dir("nas"))
    assert password
    monkeypatch.setenv(services.SMB_PASSWORD_ENV, password)
    plan = {
        "name": "table",
        "inventory": str(state.inventory_path),
        "matrix": {"link": ["lan", "p2p"], "size": ["2MiB", "4MiB"]},
        "table": {"rows": ["link"], "columns": ["size", "direction"], "baseline": {"link": "lan"}},
        "tests": [
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas", "client": "ws",
             "target": "nas.{{ matrix.link }}", "direction": "both", "repetitions": 2,
             "share": SMB % "share", "user": SMB % "user", "password_env": SMB % "password_env"},
        ],
    }  # fmt: skip
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False))
    out = tmp_path / "run"
    outcome = apply(RunRequest(load_plan(plan_path), out=out), make_progress(io.StringIO()))
    assert outcome.exit_code == EXIT_OK
    run = load_run(out)
    records = {(t["cell"]["link"], t["cell"]["size"]): t for t in run["tests"]}
    assert sorted(records) == [("lan", "2MiB"), ("lan", "4MiB"), ("p2p", "2MiB"), ("p2p", "4MiB")]
    assert all(t["status"] == "ok" and t["base_id"] == "smb" for t in records.values())
    assert {t["path"]["speed_bits_per_second"] for t in records.values()} == {10**9, 25 * 10**8}

    # the plan's table, near the top of the report
    report = (out / "report.md").read_text()
    assert report.index("## Table: link × size, direction") < report.index("## Hosts")
    header, rows = table_of(report)
    columns = [(size, d) for size in ("2MiB", "4MiB") for d in ("write", "read")]
    assert header == ["link", *(f"{size} · {d}" for size, d in columns)]
    assert sorted(rows) == ["lan", "p2p"]
    for link, cells in rows.items():
        for cell, (size, direction) in zip(cells, columns, strict=True):
            base = None if link == "lan" else records[("lan", size)]
            check_cell(cell, records[(link, size)], direction, base)

    # laid out again from run.json: sizes down the side, against the smaller file
    table = "rows=size,columns=link/direction,baseline=size=2MiB"
    result = CliRunner().invoke(main, ["report", str(out), "--table", table])
    assert result.exit_code == 0, result.output
    header, rows = table_of((out / "report.md").read_text())
    columns = [(link, d) for link in ("lan", "p2p") for d in ("write", "read")]
    assert header == ["size", *(f"{link} · {d}" for link, d in columns)]
    for size, cells in rows.items():
        for cell, (link, direction) in zip(cells, columns, strict=True):
            base = None if size == "2MiB" else records[(link, "2MiB")]
            check_cell(cell, records[(link, size)], direction, base)

    # a dimension the run does not have: one line, exit 2, the report left as it was
    before = (out / "report.md").read_bytes()
    result = CliRunner().invoke(main, ["report", str(out), "--table", "rows=disk"])
    assert result.exit_code == 2
    assert result.output == (
        "nasplan: --table: no dimension 'disk' in the results "
        "(there are: test, link, size, direction)\n"
    )
    assert (out / "report.md").read_bytes() == before

    # the same plan once more, and the two runs in one table: a run label beside the cells
    again = tmp_path / "again"
    outcome = apply(RunRequest(load_plan(plan_path), out=again), make_progress(io.StringIO()))
    assert outcome.exit_code == EXIT_OK
    second = {(t["cell"]["link"], t["cell"]["size"]): t for t in load_run(again)["tests"]}
    args = ["compare", str(out), str(again), "--label", "try=1", "--label", "try=2"]
    args += ["--table", "rows=link,columns=try/direction,baseline=try=1", "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)["table"]
    assert [t["title"] for t in table["tables"]] == ["size=2MiB", "size=4MiB"]
    for page in table["tables"]:
        size = page["fixed"]["size"]
        assert page["header"] == ["link", "1 · write", "1 · read", "2 · write", "2 · read"]
        for row in page["rows"]:
            (link,) = row["values"]
            for heading, cell in zip(page["header"][1:], row["cells"], strict=True):
                attempt, direction = heading.split(" · ")
                record = (records if attempt == "1" else second)[(link, size)]
                summary = record["directions"][direction]
                assert (cell["median"], cell["n"]) == (summary["median"], summary["n"])
                if attempt == "2":
                    first = records[(link, size)]["directions"][direction]["median"]
                    assert cell["ratio"] == pytest.approx(summary["median"] / first)
