"""The run's tests phase (``MeasurePhase``): every part of every test in the plan's order, group
by group of network settings, each part's record handed to its test's cell, run.json saved,
hosts released once no test needs them.

A kind's part returns its record; a host lost during it fails the part with the repetitions it
finished; a part's teardown completes it later (``nasplan.run.kind_hooks``). Nothing here writes
into a record a kind handed over: each cell builds its test's record from its log.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nasplan.errors import HostLostError
from nasplan.hosts.session import HostSession, mark_lost_hosts
from nasplan.input.plan import PlanTest
from nasplan.measure.kind import Routes, RunContext
from nasplan.measure.record import lost_host_record, skipped, thawed
from nasplan.progress import Place
from nasplan.run import leases
from nasplan.run.cell import Cell
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.lapses import LapseGuard
from nasplan.run.networks import Networks
from nasplan.run.next_part import upcoming
from nasplan.run.schedule import Schedule, Slice, slices, time_left_s


class MeasurePhase:
    """The tests of one run as ``schedule`` says; ``networks``: each group's settings in turn;
    ``sequence``: run.json's ``[test id, repetition]`` pairs a resumed run ran before (a value:
    ``self.sequence`` is a new tuple as each part begins, read by the run's record);
    ``save``: run.json now; ``early``: releases hosts the plan is done with (None: at the end,
    as with network changes); ``lapses``: no measurement across a lapse of a host's lease."""

    def __init__(
        self,
        ctx: RunContext,
        hooks: KindHooks,
        schedule: Schedule,
        networks: Networks,
        save: Callable[[], None],
        sequence: Sequence[Sequence[Any]],
        early: leases.EarlyRelease | None,
        lapses: LapseGuard,
    ) -> None:
        self.ctx, self.hooks, self.schedule, self.networks = ctx, hooks, schedule, networks
        self.cells = schedule.cells
        self.save, self.early = save, early
        self.sequence: tuple[tuple[Any, ...], ...] = tuple(tuple(pair) for pair in sequence)
        self.lapses = lapses
        self.cell: Cell | None = None  # the cell whose part runs now, or ran last
        self.released: set[str] = set()
        hooks.on_checkpoint = self._checkpoint
        hooks.ahead.upcoming = lambda: upcoming(self.schedule, self.cell)

    @property
    def sessions(self) -> Mapping[str, HostSession]:
        return self.ctx.sessions

    def run(self, routes: Routes) -> None:
        """Every part of every test, group by group (each group's settings made in turn), the
        kinds given the ``routes`` the paths phase found (``RunContext.routes``)."""
        self.ctx = dataclasses.replace(self.ctx, routes=routes)
        schedule = self.schedule
        try:
            for number, (spec, cells) in enumerate(schedule.groups):
                if number:
                    self.hooks.settle()  # a test's teardown may still run over the settings
                    self.networks.switch(spec)
                    self.save()
                for step in slices(cells, schedule.order, schedule.seed):
                    self._part(step)
        finally:
            self.hooks.ahead.drop()  # a start made ahead that no test took

    def records(self) -> list[dict[str, Any]]:
        """run.json's tests now: every test a part ran (or a resumed run kept), in plan order."""
        return [cell.record() for cell in self.cells if cell.started]

    def stop(self) -> None:
        """The run stops here (Ctrl-C, a full disk): every test under way is said interrupted,
        the one in flight too (before its first repetition ended: with none)."""
        for cell in self.cells:
            if (cell.started or cell.running) and not cell.stopped():
                cell.stop()

    def _part(self, step: Slice) -> None:
        """One part of a test, its record handed to its cell; its test said done when it wants
        no more."""
        cell = step.cell
        test = cell.part(step.first, step.count)
        self.cell = cell
        before = self.sequence
        self.sequence = (*before, *((test.id, index) for index in test.indices))
        self._say_where(test)
        record = self._run(cell, test)
        cell.returned(record, ended=True)
        if record["status"] == "skipped":  # it never ran: not in the order of what ran
            self.sequence = before
        else:
            self.lapses.check(cell)
        for name in mark_lost_hosts(self.sessions):
            self.ctx.progress.host(name, f"[lost] {self.sessions[name].error}")
        self.save()
        if not cell.stopped():  # an interleaved run's next round comes back to it
            self.ctx.progress.waiting(cell.test.id, _how_far(cell))
            return
        done = cell.record()
        kind = cell.bound.kind
        shown = " ".join([kind.result_text(done), *(c.mark for c in kind.caveats(done))])
        self.ctx.progress.test_done(cell.test.id, done["status"], done["error"] or shown)
        if self.early is not None:
            self._release_done()

    def _run(self, cell: Cell, test: PlanTest) -> dict[str, Any]:
        """One part's record; a host lost on the way fails it, keeping its finished
        repetitions; skipped when the network setup failed."""
        one = cell.bound
        if not one.settles_itself:
            self.hooks.settle()
        if not self.networks.ok:
            return skipped(test, f"network setup failed: {self.networks.error}")
        self.hooks.cell = cell
        try:
            return one.run_part(test, self.ctx)
        except HostLostError as exc:
            self._mark_lost(exc)
            parts = cell.parts
            ran = parts[-1].record if parts and parts[-1].number == cell.number else None
            # as far as it got, summed up as its kind does (several clients: each one's share)
            got = one.summarize(thawed(ran)) if ran else skipped(test, str(exc))
            return lost_host_record(got, str(exc))

    def _checkpoint(self) -> None:
        """After a repetition: run.json saved, the console told where the run stands; a lease
        of the test's hosts that ran out meanwhile stops it (``LapseGuard``)."""
        assert self.cell is not None
        lapse = self.lapses.check(self.cell)
        self.save()
        if lapse is not None:
            raise lapse
        self._say_where(None)

    def _mark_lost(self, exc: HostLostError) -> None:
        session = self.sessions.get(exc.host)
        if session is not None:
            session.mark_lost(str(exc))

    def _release_done(self) -> None:
        """Release the hosts no test wants any more, the last test's too, side by side and
        beside the test's teardown (a host it works on: once it is over there); settled with
        the teardown before a next test measures (after the last: while run.json is written,
        ``Run.finish``)."""
        open_cells = [c for c in self.cells if not c.stopped()]
        wanted = {host for cell in open_cells for host in cell.test.hosts}
        everyone = {host for cell in self.cells for host in cell.test.hosts}
        done = sorted(everyone - wanted - self.released)
        self.released.update(done)
        assert self.early is not None
        started = self.early.release(
            [self.sessions[name] for name in done if name in self.sessions],
            self.hooks.teardown_on,
        )
        if open_cells:
            self.hooks.beside(started)

    def _say_where(self, test: PlanTest | None) -> None:
        """Where the run stands, for a long run's console: the running cell (``test``: its part
        now begins; None: the part goes on), its repetitions, the last one's rate, the time
        left."""
        cell = self.cell
        assert cell is not None
        test = test or cell.test
        position = next(i for i, c in enumerate(self.cells, 1) if c is cell)
        self.ctx.progress.place(
            Place(
                test=test.id,
                noun="cell" if test.cell else "test",
                cell=position,
                cells=len(self.cells),
                repetitions=cell.test.repetitions_text,
                last=_last_rate(cell),
                left_s=time_left_s(self.cells),
            )
        )


def _how_far(cell: Cell) -> str:
    """``1 of 3 repetitions done, last 281.2 MiB/s``: a waiting test's line, in its kind's
    unit."""
    done = len(cell.taken)
    last = _last_rate(cell)
    return f"{done} of {cell.test.repetitions_text} repetitions done" + (
        f", last {last}" if last else ""
    )


def _last_rate(cell: Cell) -> str | None:
    """The rate (or latency, MTU) of the cell's last repetition that ended ok, in its kind's
    unit."""
    if not cell.started:
        return None
    record, kind = cell.record(), cell.bound.kind
    for rep in sorted(record["repetitions"], key=lambda r: r.get("ended_s") or 0.0, reverse=True):
        text = kind.repetition_text(rep)
        if text is not None:
            return text
    return None
