"""1 against N streams of one iperf3 test: compared across the streams, not another workload."""

from __future__ import annotations

import copy
from pathlib import Path

from nasplan.compare import compare_runs, render
from nasplan.compare.match import match_tests
from nasplan.results import load_run

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def test_one_against_two_streams_is_compared_with_the_ratio() -> None:
    one = load_run(RUNS / "sample")
    two = copy.deepcopy(one)
    lan = next(t for t in two["tests"] if t["id"] == "lan-single")
    lan["params"]["parallel"] = 2
    for rep in lan["repetitions"]:
        rep["bits_per_second"] *= 1.95
    for key in ("min", "median", "mean", "max"):
        lan["summary"][key] *= 1.95
    (matched,) = [m for m in match_tests([one, two]) if m.key == "lan-single"]
    assert matched.comparable and matched.mismatches == []
    assert matched.across == ["parallel: 1 → 2"]
    comparison = compare_runs([one, two], ["streams=1", "streams=2"])
    (row,) = [t for t in comparison["tests"] if t["id"] == "lan-single"]
    assert row["comparable"] and row["versus_first"][1]["ratio"] == 1.95
    markdown = render(comparison)
    assert "(×1.95)" in next(line for line in markdown.splitlines() if "| lan-single |" in line)
    assert (
        "- **lan-single**: compared across its streams (parallel: 1 → 2): the ratio is what the "
        "streams add; each run's Diagnosis says what holds one stream." in markdown
    )


def test_streams_with_another_workload_change_are_still_not_compared() -> None:
    one = load_run(RUNS / "sample")
    two = copy.deepcopy(one)
    lan = next(t for t in two["tests"] if t["id"] == "lan-single")
    lan["params"].update(parallel=2, window_bytes=65536)
    (matched,) = [m for m in match_tests([one, two]) if m.key == "lan-single"]
    assert not matched.comparable
    assert matched.mismatches == ["parallel: 1 → 2", "window_bytes: – → 65536"]
