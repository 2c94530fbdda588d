"""Which test comes right after the running one (``run.next_part.upcoming``): known only when
nothing the running test measures can change it."""

from __future__ import annotations

from types import SimpleNamespace

from nasplan.input.network import NetworkSpec
from nasplan.input.plan import Adaptive, Order, PlanTest, Target
from nasplan.measure import kinds
from nasplan.run.next_part import upcoming
from nasplan.run.schedule import Cell, Schedule


def _cells(*tests: tuple[str, int, Adaptive | None]) -> list[Cell]:
    target = Target("nas", None, None)
    return [
        Cell(kinds.bind(PlanTest(i, i, "iperf3", "nas", "ws", target, n, adaptive=rule)))
        for i, n, rule in tests
    ]


def _phase(cells: list[Cell], order: str = "sequential") -> SimpleNamespace:
    return SimpleNamespace(schedule=Schedule.of(cells, NetworkSpec(), Order(order), 0), cell=None)


def _running(phase: SimpleNamespace, at: int, first: int, count: int) -> None:
    phase.cell = phase.schedule.cells[at]
    phase.cell.part(first, count)


def test_the_next_test_is_known_once_the_running_one_runs_its_last_repetitions() -> None:
    phase = _phase(_cells(("a", 3, None), ("b", 3, None), ("c", 1, None)))
    assert upcoming(phase.schedule, phase.cell) is None  # nothing runs
    _running(phase, 0, 1, 3)
    assert upcoming(phase.schedule, phase.cell).id == "b"  # type: ignore[union-attr]
    phase.schedule.cells[1].closed = True  # b wants nothing (it could not start): c is next
    assert upcoming(phase.schedule, phase.cell).id == "c"  # type: ignore[union-attr]


def test_the_next_test_is_not_known_where_the_running_one_may_go_on() -> None:
    rule = Adaptive(min_n=3, max_n=10, ci_halfwidth=0.02)
    phase = _phase(_cells(("a", 10, rule), ("b", 3, None)))
    _running(phase, 0, 1, 3)
    assert upcoming(phase.schedule, phase.cell) is None  # repeats until clear: may want more
    last = _phase(_cells(("a", 3, None), ("b", 3, None)))
    _running(last, 1, 1, 3)
    assert upcoming(last.schedule, last.cell) is None  # the group's last
    shuffled = _phase(_cells(("a", 3, None), ("b", 3, None)), "shuffled")
    _running(shuffled, 0, 1, 1)
    assert upcoming(shuffled.schedule, shuffled.cell) is None  # drawn round by round


def test_an_interleaved_round_goes_on_with_the_next_test_that_wants_a_repetition() -> None:
    phase = _phase(_cells(("a", 3, None), ("b", 3, None), ("c", 3, None)), "interleaved")
    a, b, c = phase.schedule.cells
    for cell in (a, b, c):  # round 1 ran
        cell.part(1, 1)
        cell.returned({"status": "ok", "repetitions": [{"index": 1}]}, ended=True)
    _running(phase, 0, 2, 1)
    nxt = upcoming(phase.schedule, phase.cell)
    assert nxt is not None and (nxt.id, nxt.indices[0]) == ("b", 2)
    b.closed = True
    nxt = upcoming(phase.schedule, phase.cell)
    assert nxt is not None and (nxt.id, nxt.indices[0]) == ("c", 2)
    phase.cell.returned({"status": "ok", "repetitions": [{"index": 2}]}, ended=True)
    _running(phase, 2, 2, 1)
    assert upcoming(phase.schedule, phase.cell) is None  # the round's end
