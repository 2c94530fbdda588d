"""The report's *Commands* section and run.json's ``repetitions[].commands``: every command a
repetition ran, whole and shell-quoted, the repetitions that ran the same ones together."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from nasplan.measure.commands import command
from nasplan.report import render_report
from nasplan.results import load_run, run_errors

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
FIO = ["fio", "--name=nasplan", "--filename=/srv/data/nasplan-fio-x/file", "--rw=write",
       "--bs=1M", "--size=1073741824", "--direct=1", "--output-format=json"]  # fmt: skip


def _with_commands(run: dict[str, Any]) -> dict[str, Any]:
    run = copy.deepcopy(run)
    for rep in run["tests"][0]["repetitions"]:
        argv = ["iperf3", "-J", "-c", "198.18.0.10", "-p", "5201", "-t", "10"]
        rep["commands"] = [command("ws", argv)]
    rep["commands"] = [command("ws", [*argv, "-R"])]  # the last one ran another command
    return run


def test_each_test_s_commands_are_in_the_report_whole() -> None:
    run = _with_commands(load_run(RUNS / "sample"))
    assert run_errors(run) == []
    broken = copy.deepcopy(run)
    broken["tests"][0]["repetitions"][0]["commands"] = [{"host": "ws", "argv": []}]
    assert run_errors(broken) != []  # the schema holds the shape
    test = run["tests"][0]
    count = len(test["repetitions"])
    report = render_report(run)
    section = report.split("## Commands")[1].split("\n## ")[0]
    assert f"### {test['id']}" in section
    assert f"# repetitions 1–{count - 1}\nws: iperf3 -J -c 198.18.0.10 -p 5201 -t 10\n" in section
    assert f"# repetition {count}\nws: iperf3 -J -c 198.18.0.10 -p 5201 -t 10 -R\n" in section


def test_a_long_command_is_shown_whole_and_quoted_and_untimed_ones_say_so() -> None:
    run = copy.deepcopy(load_run(RUNS / "sample"))
    rep = run["tests"][0]["repetitions"][0]
    odd = [*FIO, "--filename=/srv/my data/it's"]
    rep["commands"] = [command("nas", ["rm", "-f", "/tmp/x"], timed=False), command("nas", odd)]
    assert run_errors(run) == []
    report = render_report(run)
    assert "nas: rm -f /tmp/x (untimed, before)\n" in report
    assert "nas: " + " ".join(FIO) + " '--filename=/srv/my data/it'\"'\"'s'\n" in report


def test_a_run_from_before_commands_were_kept_has_no_commands_section() -> None:
    assert "## Commands" not in render_report(load_run(RUNS / "sample"))
