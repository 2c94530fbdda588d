"""The report says how the repetitions were ordered and where a test that repeats until its
answer is clear stopped (run.json's ``order``, ``seed`` and each test's ``adaptive``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from nasplan.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


def test_the_order_and_each_adaptive_tests_stop_are_in_the_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    run.update(order="shuffled", seed=42, resumed_at=["2026-12-02T04:00:00Z"])
    first, second = run["tests"][:2]
    first["adaptive"] = {"min": 3, "max": 15, "until": {"ci_halfwidth": 0.02},
                         "method": "order-statistic interval of the median, 95 %",
                         "reached": True, "ci_halfwidth": 0.0132, "n": 6}  # fmt: skip
    second["adaptive"] = {**first["adaptive"], "reached": False, "ci_halfwidth": None, "n": 3}
    (run_dir / "run.json").write_text(json.dumps(run))

    said = CliRunner().invoke(main, ["report", str(run_dir)])

    assert said.exit_code == 0, said.output
    report = (run_dir / "report.md").read_text()
    assert (
        f"- **{first['id']}**: 6 repetitions (3–15): the median's 95 % interval ±1.3 %, "
        "within ±2 %: clear"
    ) in report
    assert (
        f"- **{second['id']}**: 3 repetitions (3–15): too few ok repetitions for the median's "
        "95 % interval (6 at least): unclear"
    ) in report
    assert (
        "- **Order** of the repetitions: shuffled: round r ran repetition r of every test, in an "
        "order drawn from seed 42; resumed 1 time."
    ) in report


def test_the_network_groups_of_matrix_cells_are_listed_before_the_last(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE.parent / "mixed", run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    run["network"]["groups"] = [json.loads(json.dumps(run["network"]))]
    (run_dir / "run.json").write_text(json.dumps(run))

    said = CliRunner().invoke(main, ["report", str(run_dir)])

    assert said.exit_code == 0, said.output
    report = (run_dir / "report.md").read_text()
    assert "ran in 2 groups: each group's settings made, its cells run" in report
    assert "1. nas: eth1: MTU 1500 -> 9000; " in report and "\nThe last group:\n" in report
