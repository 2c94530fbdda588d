"""Which test's part comes right after the running one, when that is known before it ends
(``upcoming``): what a test may start ahead for (``nasplan.measure.ahead``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest
    from nasplan.run.cell import Cell
    from nasplan.run.schedule import Schedule


def upcoming(schedule: Schedule, cell: Cell | None) -> PlanTest | None:
    """The next part's test (its first repetition the part's), within the running cell's group
    (the same network settings). In the plan's order (``sequential``): once the running test
    runs its last repetitions (a fixed count), the next test that wants any, when it has not
    begun (a resumed run's: None). Interleaved: the round's next test that wants a repetition
    (None at the round's end: the running test may want another). Shuffled: None."""
    if cell is None or not cell.running or schedule.order.name == "shuffled":
        return None
    later = _later(schedule, cell)
    if schedule.order.interleaved:
        for other in later:
            step = other.next_part(1)
            if step is not None:
                return dataclasses.replace(other.test, first_repetition=step[0], repetitions=1)
        return None
    if cell.test.adaptive is not None or len(cell.taken) < cell.test.repetitions:
        return None
    wanting = [other for other in later if not other.stopped()]
    if not wanting or wanting[0].started:
        return None
    return wanting[0].test


def _later(schedule: Schedule, cell: Cell) -> list[Cell]:
    """The cells after ``cell`` in its group, in the plan's order."""
    for _, cells in schedule.groups:
        at = next((i for i, other in enumerate(cells) if other is cell), None)
        if at is not None:
            return list(cells[at + 1 :])
    return []
