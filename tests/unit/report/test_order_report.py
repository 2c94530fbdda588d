"""The report says how the repetitions were ordered and where a test that repeats until its
answer is clear stopped (run.json's ``order``, ``seed`` and each test's ``adaptive``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from nasplan.cli import main
from nasplan.measure import adaptive

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


def test_the_order_and_each_adaptive_tests_stop_are_in_the_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    run.update(order="shuffled", seed=42, resumed_at=["2026-12-02T04:00:00Z"])
    first, second, third = run["tests"][:3]
    rule = {"min": 3, "max": 10, "until": {"ci_halfwidth": 0.02}, "method": adaptive.METHOD}
    first["adaptive"] = {**rule, "reached": True, "statistic": "t", "ci_halfwidth": 0.0062,
                         "interval": {"low": 947.3e6, "high": 959.1e6,
                                      "metric": "bits_per_second", "direction": "forward"},
                         "needed": None, "n": 3}  # fmt: skip
    second["adaptive"] = {**rule, "reached": False, "statistic": "order statistics",
                          "ci_halfwidth": 0.031, "needed": 23, "n": 10,
                          "interval": {"low": 9.02e9, "high": 9.61e9,
                                       "metric": "bits_per_second", "direction": None}}  # fmt: skip
    third["adaptive"] = {**rule, "reached": False, "statistic": None, "ci_halfwidth": None,
                         "interval": None, "needed": None, "n": 2}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps(run))

    said = CliRunner().invoke(main, ["report", str(run_dir)])

    assert said.exit_code == 0, said.output
    report = (run_dir / "report.md").read_text()
    assert (
        f"- **{first['id']}**: 3 repetitions (3–10): Student's t (two-stage), "
        "947.3–959.1 Mbit/s (forward), ±0.62 % of the median, within ±2 %: clear"
    ) in report
    assert (
        f"- **{second['id']}**: 10 repetitions (3–10): order statistics, 9.02–9.61 Gbit/s, "
        "±3.1 % of the median, not within ±2 % (its first repetitions asked for 23): unclear"
    ) in report
    assert (
        f"- **{third['id']}**: 2 repetitions (3–10): too few ok repetitions for the interval "
        "(3 at least): unclear"
    ) in report
    assert (
        "- **Order** of the repetitions: shuffled: round r ran repetition r of every test, in an "
        "order drawn from seed 42; resumed 1 time."
    ) in report


def test_a_run_from_before_the_two_stage_rule_reads_as_it_did(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    run = json.loads((run_dir / "run.json").read_text())
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
