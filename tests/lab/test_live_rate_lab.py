"""The running iperf3 test's rate each second, for real: a launched server's output read over SSH
as it comes (``Launched.read``), each second's rate handed to the progress during a run, and the
run's record the same whether it was read or not."""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.input.inventory import load_inventory
from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.measure.kinds.iperf3 import live_rate
from nasplan.progress import PlainProgress
from nasplan.remote.ssh import connect
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

LAB = {
    "name": "lrate-lab",
    "lan": {"prefix": "198.19.214.0/24", "rate": "1G"},
    "hosts": {"lrnas": {}, "lrws": {}},
}


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


class Rates(PlainProgress):
    """The plain progress of a log, keeping each rate it is given (from the run's threads)."""

    def __init__(self) -> None:
        self.log = io.StringIO()
        super().__init__(self.log)
        self.rates: list[tuple[str, float, float, str]] = []
        self._kept = threading.Lock()

    def rate(self, test_id: str, bits_per_second: float, at_s: float, what: str = "") -> None:
        with self._kept:
            self.rates.append((test_id, bits_per_second, at_s, what))
        super().rate(test_id, bits_per_second, at_s, what)


def test_a_launched_commands_output_is_read_over_ssh_as_it_comes(lab: LabState) -> None:
    runner = connect(load_inventory(lab.inventory_path).hosts["lrnas"])
    try:
        script = "echo ready; for n in 1 2 3; do sleep 0.3; echo line $n; done"
        launched = runner.start_until(script, ["ready"], timeout_s=10)
        assert launched is not None and launched.ended is None and launched.read is not None
        seen: list[tuple[float, str]] = []
        started, deadline = time.monotonic(), time.monotonic() + 10
        while (text := launched.read()) is not None and time.monotonic() < deadline:
            if text:
                seen.append((time.monotonic() - started, text))
            time.sleep(0.05)
        assert "".join(text for _, text in seen) == "line 1\nline 2\nline 3\n"
        assert len(seen) >= 2 and seen[0][0] < seen[-1][0] - 0.3, seen  # not all at its end
        assert launched.read() is None
        launched.close()
        # a command let go of while it runs is not read any more
        running = runner.start_until("echo ready; sleep 5", ["ready"], timeout_s=10)
        assert running is not None and running.read is not None
        running.close()
        assert running.read() is None
    finally:
        runner.close()


def shape(value: Any) -> Any:
    """A JSON value's shape: its keys and value types, not its numbers nor how many samples."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({repr(shape(item)) for item in value})
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def run_plan(lab: LabState, tmp_path: Path, name: str) -> tuple[Rates, dict[str, Any]]:
    plan = {
        "name": name,
        "inventory": str(lab.inventory_path),
        "order": "sequential",
        "tests": [
            {"kind": "iperf3", "id": "up", "server": "lrnas", "client": "lrws",
             "repetitions": 1, "duration_s": 3},
            {"kind": "iperf3", "id": "down", "server": "lrnas", "client": "lrws",
             "repetitions": 1, "duration_s": 3, "reverse": True},
        ],
    }  # fmt: skip
    plan_path = tmp_path / f"{name}.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    progress = Rates()
    outcome = apply(RunRequest(load_plan(plan_path), out=tmp_path / name), progress)
    assert outcome.exit_code == EXIT_OK, progress.log.getvalue()
    return progress, load_run(tmp_path / name)


def test_each_second_of_a_running_test_reaches_the_progress_and_nothing_else_changes(
    lab: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    progress, run = run_plan(lab, tmp_path, "lrate-read")
    tests = {t["id"]: t for t in run["tests"]}
    for test_id, what in (("up", ""), ("down", "sent")):
        median = tests[test_id]["summary"]["median"]
        said = [(rate, at_s, w) for t, rate, at_s, w in progress.rates if t == test_id]
        close = [rate for rate, _, _ in said if 0.8 * median <= rate <= 1.2 * median]
        assert len(close) >= 2, (test_id, median, said)
        assert {w for _, _, w in said} == {what}
        seconds = [at_s for _, at_s, _ in said]
        assert seconds == sorted(set(seconds)) and seconds[0] >= 1.0, seconds
    # a log got one line per repetition, as without the rates
    lines = progress.log.getvalue().splitlines()
    assert sum("repetition 1/1" in line for line in lines) == 2, lines
    assert not any(re.search(r"now \d", line) for line in lines), lines

    # the same plan with nothing read while the clients run: a run.json of the same shape (the
    # hosts' samples aside, whose gaps are the machine's), the servers' end the same
    monkeypatch.setattr(live_rate.LiveRate, "follow", lambda self, read: None)
    unread, before = run_plan(lab, tmp_path, "lrate-unread")
    assert unread.rates == []
    assert sorted(run) == sorted(before)
    for now, then in zip(run["tests"], before["tests"], strict=True):
        mine = {key: value for key, value in now.items() if key != "resources"}
        theirs = {key: value for key, value in then.items() if key != "resources"}
        assert shape(mine) == shape(theirs), now["id"]
        assert sorted(now["resources"]) == sorted(then["resources"])
        assert [r["status"] for r in now["repetitions"]] == ["ok"]
