"""The order of a run's repetitions: each test a ``Cell`` (``nasplan.run.cell``) run in parts
(``Slice``), the parts in the plan's order (``slices``); the time a run still needs; the cells
grouped by their network settings.

``sequential``: each test's repetitions back to back, in one part (a test that repeats until
its answer is clear: its ``min`` first, then one at a time). ``interleaved``: rounds, round r
running the next repetition of every test still wanting one, in the plan's order;
``shuffled``: each round in an order drawn from the run's seed and the round's number. A test
whose answer is clear (``measure.adaptive``), or which could not start, drops out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.input.network import NetworkSpec
from nasplan.input.plan import Order
from nasplan.run.cell import Cell


@dataclass(frozen=True)
class Schedule:
    """The run's tests (``cells``, in the plan's order), grouped by their network settings
    (``groups``: ``network_groups``), their parts run in ``order`` (drawn from ``seed``)."""

    cells: tuple[Cell, ...]
    groups: tuple[tuple[NetworkSpec, tuple[Cell, ...]], ...]
    order: Order
    seed: int

    @classmethod
    def of(cls, cells: Sequence[Cell], network: NetworkSpec, order: Order, seed: int) -> Schedule:
        """The schedule of ``cells`` under the plan's ``network`` settings."""
        groups = tuple((spec, tuple(group)) for spec, group in network_groups(cells, network))
        return cls(tuple(cells), groups, order, seed)

    @property
    def changes_network(self) -> bool:
        """Whether any group's settings change a host's network."""
        return any(spec.active for spec, _ in self.groups)


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
