"""In the lab: a matrix test (2 links x 2 stream counts, iperf3 for 1 s) runs once per cell, each
record carrying its cell and base id, each cell's raw outputs under its own id; a --tests subset
runs only the cells it names and says so in run.json and the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[2]
LAB = {
    "name": "mx-cells",
    "lan": {"prefix": "198.19.144.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian"}, "ws": {"personality": "debian"}},
    "links": [
        {
            "name": "p2p",
            "rate": "10G",
            "mtu": 1500,
            "a": {"host": "nas", "interface": "eth1", "address": "198.19.145.1/30"},
            "b": {"host": "ws", "interface": "eth1", "address": "198.19.145.2/30"},
        }
    ],
}
IDS = [
    "tcp[link=lan,parallel=1]",
    "tcp[link=lan,parallel=2]",
    "tcp[link=p2p,parallel=1]",
    "tcp[link=p2p,parallel=2]",
]


def nasplan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nasplan", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(running_lab: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("mx-cells")
    with running_lab(LAB) as state:
        plan = {
            "name": "mx-cells",
            "inventory": str(state.inventory_path),
            "tests": [
                {
                    "id": "tcp",
                    "kind": "iperf3",
                    "server": "nas",
                    "client": "ws",
                    "target": "nas.{{ matrix.link }}",
                    "duration_s": 1,
                    "repetitions": 1,
                    "matrix": {"link": ["lan", "p2p"], "parallel": [1, 2]},
                }
            ],
        }
        plan_file = work / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(plan, sort_keys=False))
        listed = nasplan("apply", str(plan_file), "--list-tests")
        checked = nasplan("apply", str(plan_file), "--check", "--tests", "tcp[link=lan*")
        whole = nasplan("apply", str(plan_file), "--out", str(work / "whole"))
        part = nasplan(
            "apply", str(plan_file), "--tests", "tcp[link=p2p*", "--out", str(work / "part")
        )
    return {"listed": listed, "checked": checked, "whole": whole, "part": part, "work": work}


def test_list_tests_names_the_cells_without_connecting(runs: dict[str, Any]) -> None:
    listed = runs["listed"]
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:-1]] == IDS
    # 4 cells x (1 s + its server 0.05 s + its part 0.05 s), the run itself 1.5 s
    assert listed.stdout.splitlines()[-1].startswith("4 tests (4 matrix cells); about 6 s")


def test_check_says_the_subsets_count_and_estimate(runs: dict[str, Any]) -> None:
    checked = runs["checked"]
    assert checked.returncode == 0, checked.stderr
    said = checked.stdout + checked.stderr
    assert "test tcp[link=lan,parallel=1]: would run" in said
    assert "tcp[link=p2p" not in said
    assert "2 tests (2 matrix cells), of 4 in the plan; about 4 s (an estimate" in said


def test_each_cell_ran_and_its_record_carries_its_cell_and_base_id(runs: dict[str, Any]) -> None:
    whole = runs["whole"]
    assert whole.returncode == 0, whole.stderr
    run_dir = runs["work"] / "whole"
    run = load_run(run_dir)  # validated against the run schema
    tests = run["tests"]
    assert [t["id"] for t in tests] == IDS
    assert [t["base_id"] for t in tests] == ["tcp"] * 4
    assert [t["cell"] for t in tests] == [
        {"link": "lan", "parallel": 1},
        {"link": "lan", "parallel": 2},
        {"link": "p2p", "parallel": 1},
        {"link": "p2p", "parallel": 2},
    ]
    for test in tests:
        assert test["status"] == "ok", test["error"]
        raw = test["repetitions"][0]["raw_file"]
        assert raw.startswith(f"raw/{test['id']}/") and (run_dir / raw).is_file()
    # the cell's values reached the test: its target and its stream count
    assert tests[2]["params"]["parallel"] == 1 and tests[3]["params"]["parallel"] == 2
    assert "198.19.145.1" in str(tests[3]["params"]) and "198.19.144.10" in str(tests[0]["params"])
    assert "subset" not in run
    assert "subset of the plan" not in (run_dir / "report.md").read_text()


def test_a_tests_subset_runs_only_its_cells_and_says_so(runs: dict[str, Any]) -> None:
    part = runs["part"]
    assert part.returncode == 0, part.stderr
    run = load_run(runs["work"] / "part")
    assert [t["id"] for t in run["tests"]] == IDS[2:]
    assert run["subset"] == {"limit": [], "tests": ["tcp[link=p2p*"], "selected": 2, "of": 4}
    report = (runs["work"] / "part" / "report.md").read_text()
    assert "subset of the plan: 2 of 4 tests (`--tests tcp[link=p2p*`)" in report
