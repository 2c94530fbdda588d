"""The contract for work that may run beside the caller: what a run lends to lower layers.

A kind, a sampler, the lease keeper or the host sessions never start a thread: they hand work to
a ``Tasks`` (``nasplan.run.overlap.Overlap``), which runs it in a thread of its own for a real
run (``Overlap.concurrent()``) or, for a unit test or a debugger, at once in the caller's own
thread (``Overlap.serial()``), where repeating work never runs. Code written against this
contract is correct in both: it waits for a task before it relies on what the task did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Task(Protocol):
    """One piece of work handed to ``Tasks.start``."""

    @property
    def error(self) -> BaseException | None:
        """What the work raised (None while it runs, or when it returned)."""
        ...

    @property
    def result(self) -> object:
        """What the work returned (None while it runs, or when it raised)."""
        ...

    def done(self) -> bool:
        """True once the work has returned or raised."""
        ...

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the work; True once it is over."""
        ...


class Repeating(Protocol):
    """Work repeated at an interval (``Tasks.every``)."""

    def stop(self) -> None:
        """No further call (one under way finishes)."""
        ...


class Tasks(Protocol):
    """Where a run's background work is started."""

    def start(self, work: Callable[[], object], name: str) -> Task:
        """``work`` started beside the caller (concurrent) or run now (serial)."""
        ...

    def every(
        self, interval_s: float, work: Callable[[], bool], name: str, *, first_s: float
    ) -> Repeating:
        """``work`` every ``interval_s``, the first after ``first_s``, until it returns False
        or is stopped (serial: never)."""
        ...

    def each(self, items: Iterable[T], work: Callable[[T], object]) -> None:
        """``work`` on every item, at most a bounded number at once, all finished on return;
        ``work`` records its own errors (one that raises is raised here after the others end)."""
        ...
