"""The order of a run's repetitions: each test a ``Cell`` run in parts (``Slice``), the parts in
the plan's order (``slices``), each cell's record merged from its parts.

``sequential``: each test's repetitions back to back, in one part (a test that repeats until
its answer is clear: its ``min`` first, then one at a time). ``interleaved``: rounds, round r
running the next repetition of every test still wanting one, in the plan's order;
``shuffled``: each round in an order drawn from the run's seed and the round's number. A test
whose answer is clear (``measure.adaptive``), or which could not start, drops out.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasplan.input.plan import Order, PlanTest
from nasplan.measure.kind import BoundTest
from nasplan.measure.merge import Part, done_indices, kept_part, merge
from nasplan.network.model import NetworkSpec


@dataclass
class Cell:
    """One test of the run: its bound test, what a resumed run kept of it (``previous``: its
    record then), the parts run so far with their offsets on the test's clock, and whether
    it wants no more (``closed``)."""

    bound: BoundTest
    previous: dict[str, Any] | None = None
    parts: list[Part] = field(default_factory=list)
    closed: bool = False
    # repetition numbers run (or kept) in this run, ok or not: none is run twice
    taken: set[int] = field(default_factory=set)
    # wall time of each part and its repetitions (for the time left)
    seconds: list[tuple[float, int]] = field(default_factory=list)
    _kept: dict[str, Any] | None = None
    _began: float | None = None
    _count: int = 0
    _first: float | None = None
    _merged: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.previous is not None:
            self._kept = kept_part(self.previous)
            self.taken = done_indices(self.previous)

    @property
    def test(self) -> PlanTest:
        return self.bound.test

    @property
    def started(self) -> bool:
        """Whether run.json has a record of this test (a part ran or was kept)."""
        return bool(self.parts) or self.previous is not None

    def stopped(self) -> bool:
        """No more repetitions: closed, every one run, or the answer clear (never while a part
        of it runs)."""
        if self._began is not None:
            return False
        if self.closed or len(self.taken) >= self.test.repetitions:
            return True
        rule = self.test.adaptive
        if rule is None or len(self.taken) < rule.min_n or not self.started:
            return False
        return bool(self.record()["adaptive"]["reached"])

    def next_part(self, most: int | None = None) -> tuple[int, int] | None:
        """The next repetitions to run: ``(first, count)``, consecutive numbers, ``most`` at
        most; None when the cell wants no more."""
        if self.stopped():
            return None
        wanted = [i for i in range(1, self.test.repetitions + 1) if i not in self.taken]
        rule = self.test.adaptive
        if rule is not None:  # up to min at once, then one at a time
            wanted = wanted[: max(rule.min_n - len(self.taken), 1)]
        first = last = wanted[0]
        for index in wanted[1 : most or len(wanted)]:
            if index != last + 1:
                break
            last = index
        return first, last - first + 1

    def part(self, first: int, count: int) -> PlanTest:
        """The PlanTest of one part, noted as begun now."""
        self.taken.update(range(first, first + count))
        self._began, self._count = time.monotonic(), count
        if self._first is None:
            self._first = self._began
        whole = first == 1 and count == self.test.repetitions and self.test.adaptive is None
        return self.test if whole else dataclasses.replace(self.test, first_repetition=first,
                                                           repetitions=count)  # fmt: skip

    def add(self, record: dict[str, Any]) -> None:
        """The running part's record (again, as it grows); a part that ran no repetition at
        all (it could not start) closes the cell."""
        if self._began is None:
            return
        offset = self._offset_s()
        if self.parts and self.parts[-1][0] is record:
            self.parts[-1] = (record, offset)
        else:
            self.parts.append((record, offset))
        self._merged = None

    def ended(self, record: dict[str, Any]) -> None:
        """The part's final record: kept, timed; the cell closed when nothing ran."""
        self.add(record)
        if self._began is not None:
            self.seconds.append(
                (time.monotonic() - self._began, max(len(record["repetitions"]), 1))
            )
        self._began = None
        if not record["repetitions"] or record.get("status") == "skipped":
            self.closed = True

    def timing(self) -> tuple[list[tuple[float, int]], int]:
        """The seconds of its parts and their repetitions (the running part's so far), and the
        repetitions the running part has still to run."""
        if self._began is None or not self.parts:
            return self.seconds, 0
        done = len({rep["index"] for rep in self.parts[-1][0]["repetitions"]})
        running = [(time.monotonic() - self._began, done)] if done else []
        return self.seconds + running, max(self._count - done, 0)

    def touch(self) -> None:
        """A part's record changed after it ended (its deferred teardown completed it)."""
        self._merged = None

    def _offset_s(self) -> float:
        """Where the running part began on the test's clock: after what a resumed run kept."""
        kept_end = 0.0
        if self._kept is not None:
            ends = [r.get("ended_s") or 0.0 for r in self._kept["repetitions"]]
            kept_end = float(max(ends, default=0.0)) + 1.0
        assert self._began is not None and self._first is not None
        return round(kept_end + self._began - self._first, 3)

    def record(self) -> dict[str, Any]:
        """The test's run.json record: its parts (and what was kept) merged."""
        if self._merged is not None:
            return self._merged
        if not self.parts and self.previous is not None:
            record = self.previous
        else:
            kept: list[Part] = [(self._kept, 0.0)] if self._kept is not None else []
            record = merge([*kept, *self.parts], self.bound.summarize)
        if self.test.adaptive is not None:  # (its statistics: only for a plan that asks)
            from nasplan.measure import adaptive

            record["adaptive"] = adaptive.state(record, self.test.adaptive)
        self._merged = record
        return record


@dataclass(frozen=True)
class Slice:
    """One part of the run: a cell, the repetitions it runs, and where it stands (``number``
    of the parts so far, 1-based)."""

    cell: Cell
    first: int
    count: int
    number: int


def slices(cells: Sequence[Cell], order: Order, seed: int) -> Iterator[Slice]:
    """The run's parts in ``order``, decided one at a time (a cell whose answer became clear
    meanwhile drops out)."""
    number = 0
    if not order.interleaved:
        for cell in cells:
            while (step := cell.next_part()) is not None:
                number += 1
                yield Slice(cell, *step, number)
        return
    round_number = 0
    while True:
        round_number += 1
        ready = [cell for cell in cells if cell.next_part(1) is not None]
        if not ready:
            return
        if order.name == "shuffled":
            import random  # only a shuffled run draws

            random.Random(f"{seed}:{round_number}").shuffle(ready)
        for cell in ready:
            step = cell.next_part(1)
            if step is not None:
                number += 1
                yield Slice(cell, *step, number)


def time_left_s(cells: Sequence[Cell]) -> tuple[float, float] | None:
    """The time the run still needs, at least and at most (a test that repeats until its answer
    is clear: from its min to its max), from the repetitions' times so far; None before any."""
    timings = {id(cell): cell.timing() for cell in cells}
    measured = [(s, n) for seconds, _ in timings.values() for s, n in seconds]
    if not measured:
        return None
    overall = sum(s for s, _ in measured) / sum(n for _, n in measured)
    low = high = 0.0
    for cell in cells:
        if cell.closed:
            continue
        seconds, running = timings[id(cell)]
        own = sum(n for _, n in seconds)
        each = sum(s for s, _ in seconds) / own if own else overall
        rule = cell.test.adaptive
        most = cell.test.repetitions - len(cell.taken)
        least = max((rule.min_n if rule else cell.test.repetitions) - len(cell.taken), 0)
        if rule is not None and cell.started and len(cell.taken) >= rule.min_n and cell.stopped():
            least = most = 0
        low += (least + running) * each
        high += (most + running) * each
    return low, high


def network_groups(
    cells: Sequence[Cell], plan_network: NetworkSpec
) -> list[tuple[NetworkSpec, list[Cell]]]:
    """The cells by their network settings (a matrix cell's own ``network``, else the plan's),
    each group after the one whose settings differ least from it (the first: the fewest
    changes); ties in the plan's order. One group for a plan whose cells share the plan's."""
    by_spec: dict[NetworkSpec, list[Cell]] = {}
    for cell in cells:
        by_spec.setdefault(cell.test.network or plan_network, []).append(cell)
    remaining = list(by_spec) or [plan_network]
    ordered: list[NetworkSpec] = []
    here: frozenset[Any] = frozenset()
    while remaining:
        nearest = min(remaining, key=lambda spec: len(here ^ _settings(spec)))
        remaining.remove(nearest)
        ordered.append(nearest)
        here = _settings(nearest)
    return [(spec, by_spec.get(spec, [])) for spec in ordered]


def _settings(spec: NetworkSpec) -> frozenset[Any]:
    """Each setting a network spec makes: (host, the NIC's change)."""
    return frozenset((host, change) for host in spec.hosts for change in spec.changes(host))
