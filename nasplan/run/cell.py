"""One test of a run (``Cell``): what a resumed run kept of it, and the log of what its parts
returned, from which its run.json record is built whenever it is asked for.

A run runs a test in parts (``nasplan.run.schedule``); each part is one call of its kind. What a
part hands over goes into the cell's log, which only grows: the part as far as it got after each
repetition and as it ended (``Returned``), what its deferred teardown returned
(``TornDown``), a host lost under it. The record is the pure merge of the log
(``nasplan.measure.merge``), built anew each time.

Values, not shared objects: the log is a tuple of frozen entries, and what an entry holds of a
record is a deep frozen copy taken as the kind hands it over (``record.frozen``: the kind may go
on with its own record, and no one can change the entry afterwards: writing into it raises). The
record a cell gives out (``Cell.record``) is a new one in plain types each time, sharing nothing
with the log, so a caller may change it as it likes. Freezing at the boundary, rather than
copying on the way out only, makes a write into the log fail loudly where it is made.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nasplan.input.plan import PlanTest
from nasplan.measure.kind import BoundTest
from nasplan.measure.merge import Done, Part, done_indices, done_pairs, kept_part, merge
from nasplan.measure.record import frozen, lost_host_record, skipped, stopped_record, thawed

Record = dict[str, Any]


@dataclass(frozen=True)
class Returned:
    """Part ``number`` of the test as its kind returned it (``record``: frozen): after a
    repetition (``ended`` False: the part goes on) or at its end; ``offset_s``: where it began
    on the test's clock."""

    number: int
    record: Mapping[str, Any]
    offset_s: float
    ended: bool


@dataclass(frozen=True)
class TornDown:
    """What part ``number``'s deferred teardown returned (its record's ``resources``, frozen),
    and the host it found lost (None: none)."""

    number: int
    completes: Mapping[str, Any]
    lost: str | None = None


@dataclass(frozen=True)
class Lapsed:
    """A lease of the test's hosts ran out while part ``number`` ran: its repetitions from the
    ``since``-th on (what reached the run after the lapse) are no measurement."""

    number: int
    since: int
    reason: str


@dataclass(frozen=True)
class Stopped:
    """The run stopped (Ctrl-C, a full disk) before the test wanted no more; part ``number``
    was its last."""

    number: int


Entry = Returned | TornDown | Lapsed | Stopped


@dataclass
class Cell:
    """One test of the run: its bound test, what a resumed run kept of it (``previous``: its
    record then, frozen), the log of its parts (a tuple: ``_logged`` adds to it), and whether
    it wants no more (``closed``)."""

    bound: BoundTest
    previous: Mapping[str, Any] | None = None
    log: tuple[Entry, ...] = ()
    closed: bool = False
    # repetition numbers run (or kept whole) in this run, ok or not: none is run twice
    taken: frozenset[int] = frozenset()
    # (repetition, direction) a resumed run kept: a part measures the others of a repetition
    kept: frozenset[Done] = frozenset()
    # wall time of each part and its repetitions (for the time left)
    seconds: tuple[tuple[float, int], ...] = ()
    _began: float | None = None
    _count: int = 0
    _first: float | None = None
    _number: int = -1
    # what a resumed run keeps of ``previous``, as a part (``merge.kept_part``), frozen
    _kept_part: Mapping[str, Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.previous is not None:
            self.previous = previous = frozen(self.previous)
            self._kept_part = frozen(kept_part(previous))
            self.kept = frozenset(done_pairs(previous))
            asked = self.bound.kind.directions_asked(previous)
            self.taken = frozenset(done_indices(previous, asked))

    @property
    def test(self) -> PlanTest:
        return self.bound.test

    @property
    def started(self) -> bool:
        """Whether run.json has a record of this test (a part ran or was kept)."""
        return bool(self.log) or self.previous is not None

    @property
    def running(self) -> bool:
        """A part of it runs now."""
        return self._began is not None

    @property
    def parts(self) -> list[Returned]:
        """Each part's last word (as it ended, or as far as it got), in the order they ran."""
        last: dict[int, Returned] = {}
        for entry in self.log:
            if isinstance(entry, Returned):
                last[entry.number] = entry
        return list(last.values())

    def stopped(self) -> bool:
        """No more repetitions: closed, every one run, or the answer clear (never while a part
        of it runs)."""
        if self.running:
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
        self.taken = self.taken | frozenset(range(first, first + count))
        self._began, self._count = time.monotonic(), count
        self._number += 1
        if self._first is None:
            self._first = self._began
        kept = frozenset(pair for pair in self.kept if first <= pair[0] < first + count)
        whole = first == 1 and count == self.test.repetitions and self.test.adaptive is None
        if whole and not kept:
            return self.test
        return dataclasses.replace(self.test, first_repetition=first, repetitions=count, kept=kept)

    def returned(self, record: Mapping[str, Any], *, ended: bool = False) -> None:
        """The running part's record as its kind handed it over (a frozen copy is kept: the
        kind may go on with its own); ``ended``: the part is over (a part that ran no repetition
        at all, because it could not start, closes the cell)."""
        if not self.running:
            return
        kept = frozen(record)
        self._logged(Returned(self._number, kept, self._offset_s(), ended))
        if not ended:
            return
        assert self._began is not None
        took = (time.monotonic() - self._began, max(len(kept["repetitions"]), 1))
        self.seconds = (*self.seconds, took)
        self._began = None
        if not kept["repetitions"] or kept.get("status") == "skipped":
            self.closed = True

    def torn_down(self, number: int, completes: Mapping[str, Any], lost: str | None) -> None:
        """What part ``number``'s deferred teardown returned (a frozen copy is kept)."""
        self._logged(TornDown(number, frozen(completes), lost))

    def lapsed(self, since: int, reason: str) -> None:
        """A lease of its hosts ran out: the running (or last) part's repetitions from the
        ``since``-th on are no measurement."""
        self._logged(Lapsed(self._number, since, reason))

    def stop(self) -> None:
        """The run stopped before this test wanted no more (its running part, if any, keeps
        what it handed over last)."""
        self._logged(Stopped(self._number))

    def _logged(self, entry: Entry) -> None:
        """``entry`` at the end of the log: a new tuple, the entries before it as they were
        (only the run's own thread logs: a kind's checkpoints, and its teardown's result as
        the run settles it)."""
        self.log = (*self.log, entry)

    @property
    def number(self) -> int:
        """The running part's number (the last one's once it ended)."""
        return self._number

    def timing(self) -> tuple[list[tuple[float, int]], int]:
        """The seconds of its parts and their repetitions (the running part's so far), and the
        repetitions the running part has still to run."""
        parts = self.parts
        if self._began is None or not parts:
            return list(self.seconds), 0
        done = len({rep["index"] for rep in parts[-1].record["repetitions"]})
        running = [(time.monotonic() - self._began, done)] if done else []
        return [*self.seconds, *running], max(self._count - done, 0)

    def _offset_s(self) -> float:
        """Where the running part began on the test's clock: after what a resumed run kept."""
        kept_end = 0.0
        kept = self._kept_part
        if kept is not None:
            ends = [r.get("ended_s") or 0.0 for r in kept["repetitions"]]
            kept_end = float(max(ends, default=0.0)) + 1.0
        assert self._began is not None and self._first is not None
        return round(kept_end + self._began - self._first, 3)

    def record(self) -> Record:
        """The test's run.json record: what was kept and its parts, merged; a new record each
        time, sharing nothing with the log (or with ``previous``)."""
        parts: list[Part] = [(_completed(e, self.log), e.offset_s) for e in self.parts]
        if not parts and self.previous is not None:
            record: Record = thawed(self.previous)
        elif not parts:  # stopped in its first repetition: nothing handed over yet
            record = skipped(self.test, "")
        else:
            kept = self._kept_part
            first: list[Part] = [(kept, 0.0)] if kept is not None else []
            record = merge([*first, *parts], self.bound.summarize)
        if any(isinstance(entry, Stopped) for entry in self.log):
            record = stopped_record(record, self.test.repetitions)
        if self.test.adaptive is not None:  # (its statistics: only for a plan that asks)
            from nasplan.measure import adaptive

            record = {**record, "adaptive": adaptive.state(record, self.test.adaptive)}
        return record


def _completed(part: Returned, log: tuple[Entry, ...]) -> Record:
    """A part's record with what its teardown returned (a host it found lost fails it), and
    its repetitions after a lapse of a host's lease failed (the log's frozen values under new
    dicts: ``merge`` copies them out)."""
    record = dict(part.record)
    for entry in log:
        if isinstance(entry, TornDown) and entry.number == part.number:
            record.update(entry.completes)
            if entry.lost is not None:
                record = lost_host_record(record, entry.lost)
        elif isinstance(entry, Lapsed) and entry.number == part.number:
            reps = list(record.get("repetitions") or [])
            reps[entry.since :] = [
                {**rep, "status": "failed", "error": entry.reason} if rep.get("status") == "ok"
                else rep
                for rep in reps[entry.since :]
            ]  # fmt: skip
            record = lost_host_record({**record, "repetitions": reps}, entry.reason)
    return record
