"""The invariants of tests/unit/run_states.py over generated runs: apply's report, ``nasplan
report``, ``report --table`` and ``compare`` never raise, and what they show holds in every
state a run can end in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from run_states import check, check_table, runs

from nasplan.cli import main
from nasplan.compare import compare_runs, render
from nasplan.report import pivot, render_report
from nasplan.results import load_run, save_run

PROFILE_LAB = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "disk-profile-lab"

# Each example renders a report, a table and a comparison (about 50 ms): 150 examples keep the
# file near ten seconds. Derandomized so a run in CI meets the same states as one here.
STATES = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@STATES
@given(runs())
def test_every_state_a_run_ends_in_reads_right(run: dict[str, Any]) -> None:
    report = render_report(run)
    table, _ = pivot.run_table(run)
    check(run, report, table)
    for laid, _ in pivot.run_tables(run):  # the plan's ``tables:``, one of another metric
        check_table(laid)
    for asked in ("rows=link,columns=test/direction", "rows=test,columns=link/direction"):
        check(run, render_report(run, table=pivot.parse_table_option(asked)),
              pivot.run_table(run, pivot.parse_table_option(asked))[0])  # fmt: skip


@settings(max_examples=25, deadline=None, derandomize=True)
@given(runs(), runs())
def test_compare_of_any_two_states_never_raises(before: dict[str, Any], after: Any) -> None:
    comparison = compare_runs([before, after], ["state=before", "state=after"])
    check_table(comparison["table"])
    for output in ("markdown", "json", "csv"):
        assert render(comparison, output)
    # the runs' table against the first run and each link, as a write-up of an upgrade has it
    asked = "rows=link,columns=state/direction,baseline=state=before,against=state=after"
    laid = compare_runs([before, after], ["state=before", "state=after"],
                        pivot.parse_table_option(asked))  # fmt: skip
    check_table(laid["table"])
    assert render(laid, "markdown")


@settings(max_examples=10, deadline=None, derandomize=True)
@given(runs())
def test_nasplan_report_rewrites_any_state(tmp_path_factory: Any, run: dict[str, Any]) -> None:
    run_dir = Path(tmp_path_factory.mktemp("run"))
    save_run(run_dir, run)
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    table = CliRunner().invoke(main, ["report", str(run_dir), "--table", "rows=link"])
    assert table.exit_code == 0, table.output
    check(json.loads((run_dir / "run.json").read_text()), (run_dir / "report.md").read_text(),
          pivot.run_table(run, pivot.parse_table_option("rows=link"))[0])  # fmt: skip


@pytest.mark.parametrize("kept", ["", "interrupted", "resumed", "interrupted-early"])
def test_the_kept_disk_profile_runs_read_right(kept: str) -> None:
    """The real runs the generated disk profiles are made from hold the same invariants: on the
    volume and through SMB, two mounts refused; Ctrl-C mid-grid; that run resumed; Ctrl-C
    before a test's fio started."""
    run = load_run(PROFILE_LAB / kept)
    table, _ = pivot.run_table(run)
    check(run, render_report(run), table)
