"""One test of a run (``run.cell.Cell``): its append-only log of what its parts returned, the
record built from it (a copy of its own every time), a resumed run's kept repetitions, a part
the run stopped or a lease lapsed under, and the merge of its parts on the test's clock."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import pytest

from nasplan.analysis import summarize
from nasplan.input.plan import PlanTest, Target
from nasplan.measure import kinds
from nasplan.run import cell as cell_module
from nasplan.run.cell import Cell, Lapsed, Returned, Stopped, TornDown


class Clock:
    """The cell's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(cell_module, "time", types.SimpleNamespace(monotonic=found.monotonic))
    return found


def _test(repetitions: int = 3) -> PlanTest:
    target = Target("nas", None, None)
    return PlanTest("p2p", "p2p", "iperf3", "nas", "ws", target, repetitions)


def _record(indices: Sequence[int], rates: Sequence[float], **extra: Any) -> dict[str, Any]:
    """A part's record as the iperf3 kind leaves it: one repetition a rate, 3 s apart."""
    reps = [
        {"index": index, "status": "ok", "error": None, "raw_file": None, "bits_per_second": rate}
        | {"started_s": 3.0 * n, "ended_s": 3.0 * n + 2.0}
        for n, (index, rate) in enumerate(zip(indices, rates, strict=True))
    ]
    return {
        "id": "p2p",
        "kind": "iperf3",
        "name": "p2p",
        "status": "ok",
        "error": None,
        "params": {"repetitions": len(reps)},
        "path": {"theoretical_bits_per_second": None},
        "repetitions": reps,
        "summary": summarize([r["bits_per_second"] for r in reps], "bits_per_second"),
        "efficiency": None,
        **extra,
    }


def _cell(repetitions: int = 3, previous: dict[str, Any] | None = None) -> Cell:
    return Cell(kinds.bind(_test(repetitions)), previous)


def test_the_log_only_grows_each_entry_as_it_was_logged(clock: Clock) -> None:
    cell = _cell()
    cell.part(1, 3)
    cell.returned(_record([1], [9e8]))
    first = cell.log
    cell.returned(_record([1, 2], [9e8, 8e8]))
    cell.returned(_record([1, 2, 3], [9e8, 8e8, 7e8]), ended=True)
    cell.torn_down(0, {"resources": {"ws": None}}, None)

    assert isinstance(cell.log, tuple) and cell.log[:1] == first
    assert cell.log[0] is first[0]  # the entry before is the very same, unchanged
    assert [type(e) for e in cell.log] == [Returned, Returned, Returned, TornDown]
    assert [e.ended for e in cell.log if isinstance(e, Returned)] == [False, False, True]
    # a part's last word: as it ended
    assert [len(p.record["repetitions"]) for p in cell.parts] == [3]


def test_a_record_the_kind_changes_after_handing_it_over_is_logged_as_it_was(
    clock: Clock,
) -> None:
    cell = _cell(1)
    cell.part(1, 1)
    handed = _record([1], [9e8])
    cell.returned(handed, ended=True)
    handed["repetitions"][0]["bits_per_second"] = 1.0
    handed["status"] = "failed"

    assert cell.record()["repetitions"][0]["bits_per_second"] == 9e8
    assert cell.record()["status"] == "ok"


def test_writing_into_a_logged_entry_raises(clock: Clock) -> None:
    cell = _cell(1)
    cell.part(1, 1)
    cell.returned(_record([1], [9e8]), ended=True)
    cell.torn_down(0, {"resources": {"ws": {"samples": 3}}}, None)
    returned, torn = cell.log

    assert isinstance(returned, Returned) and isinstance(torn, TornDown)
    with pytest.raises(TypeError):
        returned.record["status"] = "failed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        returned.record["repetitions"].append({})
    with pytest.raises(TypeError):
        returned.record["repetitions"][0]["status"] = "failed"
    with pytest.raises(TypeError):
        torn.completes["resources"]["ws"]["samples"] = 0
    with pytest.raises(AttributeError):
        returned.ended = False  # type: ignore[misc]


def test_each_record_is_a_new_one_that_shares_nothing_with_the_log(clock: Clock) -> None:
    """One part at the test's start is its own record: changing the record got does not
    change the next one (nor the log)."""
    cell = _cell(2)
    cell.part(1, 2)
    cell.returned(_record([1, 2], [9e8, 8e8]), ended=True)
    got = cell.record()
    got["repetitions"][0]["status"] = "failed"
    got["repetitions"].append({"index": 9})
    got["params"]["repetitions"] = 9
    got["status"] = "failed"

    again = cell.record()
    assert again is not got
    assert [r["status"] for r in again["repetitions"]] == ["ok", "ok"]
    assert (again["status"], again["params"]["repetitions"]) == ("ok", 2)
    assert type(again["repetitions"]) is list and type(again["repetitions"][0]) is dict


def test_parts_merge_into_one_record_on_the_test_s_clock(clock: Clock) -> None:
    cell = _cell(3)
    assert cell.next_part(most=2) == (1, 2)
    part = cell.part(1, 2)
    assert (part.first_repetition, part.repetitions) == (1, 2)
    clock.now += 8.0
    cell.returned(_record([1, 2], [9e8, 8e8]), ended=True)
    assert not cell.stopped() and cell.next_part() == (3, 1)
    clock.now += 30.0  # another test's part ran in between
    cell.part(3, 1)
    cell.returned(_record([3], [7e8]), ended=True)

    record = cell.record()
    assert [(r["index"], r["started_s"]) for r in record["repetitions"]] == [
        (1, 0.0),
        (2, 3.0),
        (3, 38.0),  # began 38 s after the first part
    ]
    assert record["params"]["repetitions"] == 3
    assert record["summary"] == summarize([9e8, 8e8, 7e8], "bits_per_second")
    assert cell.stopped() and cell.next_part() is None
    assert cell.taken == {1, 2, 3}


def test_a_whole_test_in_one_part_is_the_plan_s_own_test(clock: Clock) -> None:
    cell = _cell(3)
    assert cell.part(1, 3) is cell.test


def test_a_teardown_completes_its_part_and_a_host_it_found_lost_fails_it(clock: Clock) -> None:
    cell = _cell(2)
    cell.part(1, 2)
    cell.returned(_record([1, 2], [9e8, 8e8]), ended=True)
    resources = {"ws": {"samples": 4, "cpu_busy_percent_max": 12.0}}
    cell.torn_down(cell.number, {"resources": resources}, "nas: connection lost")

    record = cell.record()
    assert record["resources"] == resources
    assert (record["status"], record["error"]) == ("failed", "nas: connection lost")
    assert record["summary"]["n"] == 2  # its repetitions still count


def test_a_lapse_fails_the_repetitions_that_reached_the_run_after_it(clock: Clock) -> None:
    cell = _cell(3)
    cell.part(1, 3)
    cell.returned(_record([1, 2, 3], [9e8, 8e8, 7e8]), ended=True)
    cell.lapsed(1, "nas: its lease ran out")

    assert isinstance(cell.log[-1], Lapsed)
    record = cell.record()
    assert [r["status"] for r in record["repetitions"]] == ["ok", "failed", "failed"]
    assert record["repetitions"][1]["error"] == "nas: its lease ran out"
    assert record["status"] == "failed" and record["summary"]["n"] == 1


def test_a_part_the_run_stopped_keeps_what_it_handed_over_last(clock: Clock) -> None:
    cell = _cell(3)
    cell.part(1, 3)
    cell.returned(_record([1], [9e8]))  # its first repetition's checkpoint
    assert cell.running and not cell.stopped()
    cell.stop()

    assert isinstance(cell.log[-1], Stopped)
    record = cell.record()
    assert record["status"] == "interrupted"
    assert record["error"] == "interrupted: the run was stopped after 1 of 3 repetitions"
    assert [r["index"] for r in record["repetitions"]] == [1]


def test_a_part_stopped_in_its_first_repetition_is_a_record_without_any(clock: Clock) -> None:
    cell = _cell(3)
    cell.part(1, 3)
    assert not cell.started and cell.running
    cell.stop()

    record = cell.record()
    assert record["status"] == "interrupted" and record["repetitions"] == []
    assert record["error"] == "interrupted: the run was stopped after 0 of 3 repetitions"


def test_a_part_that_ran_no_repetition_closes_its_test(clock: Clock) -> None:
    cell = _cell(3)
    cell.part(1, 1)
    cell.returned(_record([], [], status="failed", error="iperf3: not installed"), ended=True)

    assert cell.closed and cell.stopped() and cell.next_part() is None
    assert cell.record()["error"] == "iperf3: not installed"


def test_a_resumed_cell_keeps_its_ok_repetitions_and_runs_the_others_after_them(
    clock: Clock,
) -> None:
    before = _record([1, 2], [9e8, 8e8])
    before["repetitions"][1].update(status="failed", error="stalled")
    cell = _cell(3, before)

    assert cell.started and cell.taken == {1} and cell.kept == {(1, None)}
    kept = cell.record()  # nothing ran yet: the record as it was, a copy of its own
    assert kept == before and kept is not before
    kept["repetitions"].clear()
    assert cell.record() == before
    with pytest.raises(TypeError):
        cell.previous["status"] = "ok"  # type: ignore[index]

    assert cell.next_part() == (2, 2)
    cell.part(2, 2)
    cell.returned(_record([2, 3], [8.5e8, 7e8]), ended=True)
    record = cell.record()
    # the new part begins after the kept repetition's end (2 s) and a second
    assert [(r["index"], r["started_s"]) for r in record["repetitions"]] == [
        (1, 0.0),
        (2, 3.0),
        (3, 6.0),
    ]
    assert record["status"] == "ok" and record["summary"]["n"] == 3
    assert before["repetitions"][1]["status"] == "failed"  # the caller's record untouched


def test_the_time_of_the_running_part_counts_its_repetitions_so_far(clock: Clock) -> None:
    cell = _cell(4)
    cell.part(1, 2)
    clock.now += 10.0
    cell.returned(_record([1, 2], [9e8, 8e8]), ended=True)
    cell.part(3, 2)
    clock.now += 4.0
    cell.returned(_record([3], [9e8]))

    seconds, left = cell.timing()
    assert seconds == [(10.0, 2), (4.0, 1)] and left == 1
    seconds.clear()  # a copy: the cell's own are as they were
    assert cell.timing()[0] == [(10.0, 2), (4.0, 1)]
