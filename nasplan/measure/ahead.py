"""The next test's opening made while the current test measures (``Ahead``): what the run
would otherwise wait for between two tests (the next iperf3 server's start) done shortly before
the current measurement ends, on hosts it does not measure on.

The run says which test comes next when that is known (``upcoming``); a kind whose test is
measuring schedules the next test's opening (``schedule``) to begin ``delay_s`` later, in a task
of its own (never with ``Overlap.serial()``: there nothing is made ahead); the next test takes
it (``take``), or makes its own when none was made (one scheduled and not begun is called off).
What nobody takes (the run stopped, the next test skipped) is abandoned (``drop``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest
    from nasplan.tasks import Tasks


class Opening(Protocol):
    """What a kind made ahead for a test: undone by ``abandon`` when no test takes it."""

    def abandon(self) -> None: ...


@dataclass
class _Slot:
    test_id: str
    state: str = "waiting"  # waiting -> opening -> made; or off (called off before it began)
    made: Opening | None = None


class Ahead:
    """At most one opening, of the test that comes next. ``upcoming``: the run's word on which
    test that is (None: not known yet, or none)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._slot: _Slot | None = None
        self.upcoming: Callable[[], PlanTest | None] = lambda: None

    def next_test(self) -> PlanTest | None:
        """The test whose part comes right after the running one, when known now."""
        return self.upcoming()

    def schedule(
        self, test_id: str, tasks: Tasks, delay_s: float, make: Callable[[], Opening | None]
    ) -> None:
        """``make`` the opening of ``test_id`` in ``delay_s`` (a task of its own); a failure to
        make it is None (the test makes its own and says why)."""
        self.drop()
        slot = _Slot(test_id)
        with self._changed:
            self._slot = slot

        def begin() -> bool:
            with self._changed:
                if slot.state != "waiting":
                    return False
                slot.state = "opening"
            made: Opening | None = None
            try:
                made = make()
            except Exception:
                made = None
            finally:
                with self._changed:
                    slot.made, slot.state = made, "made"
                    self._changed.notify_all()
            return False

        tasks.every(delay_s, begin, f"ahead {test_id}", first_s=delay_s)

    def take(self, test_id: str) -> Opening | None:
        """The opening made for ``test_id`` (waited for while it is being made); None when
        there is none (one for another test is abandoned)."""
        slot = self._claim()
        if slot is None:
            return None
        if slot.test_id != test_id:
            if slot.made is not None:
                slot.made.abandon()
            return None
        return slot.made

    def drop(self) -> None:
        """Abandon an opening nobody took (one being made: once made)."""
        slot = self._claim()
        if slot is not None and slot.made is not None:
            slot.made.abandon()

    def _claim(self) -> _Slot | None:
        """The slot emptied: one not begun is called off, one being made waited for."""
        with self._changed:
            slot, self._slot = self._slot, None
            if slot is None:
                return None
            if slot.state == "waiting":
                slot.state = "off"
                return None
            while slot.state == "opening":
                self._changed.wait()
        return slot
