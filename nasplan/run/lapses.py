"""No measurement across a lapse of a host's lease: what reached the run after a host's lease ran
out (nasplan stopped or starved for longer than a lease, a host cut off) is not kept as a
measurement (the run's side of ``nasplan.run.leases``)."""

from __future__ import annotations

from nasplan.errors import HostLostError
from nasplan.run.cell import Cell
from nasplan.run.leases import LeaseKeeper


class LapseGuard:
    """No measurement across a lapse: the repetitions whose results reached the run after one
    of their hosts' leases ran out (nasplan stopped or starved longer than a lease, a host cut
    off) are failed, saying so: what they measured ran while the host was stopping the run's
    work, or reverting its network settings. Checked at each repetition's checkpoint and once
    a part is over (``check``)."""

    def __init__(self, keeper: LeaseKeeper) -> None:
        self.keeper = keeper
        # the cell and part last checked, and how many of its repetitions were
        self._seen: tuple[Cell | None, int, int] = (None, -1, 0)

    def check(self, cell: Cell) -> HostLostError | None:
        """When a lease of the cell's hosts ran out: the repetitions of its part that reached
        the run since the last check are failed in its log (``Cell.lapsed``), the host is marked
        lost, and the error to stop the test with is returned; else None."""
        parts = cell.parts
        last = parts[-1] if parts and parts[-1].number == cell.number else None
        count = len(last.record.get("repetitions") or []) if last is not None else 0
        seen, number, checked = self._seen
        since = checked if seen is cell and number == cell.number else 0
        self._seen = (cell, cell.number, count)
        reason = self.keeper.lapsed(cell.test.hosts)
        if reason is None:
            return None
        cell.lapsed(since, reason)
        name = reason.split(":", 1)[0]
        session = self.keeper.sessions.get(name)
        if session is not None and not session.lost:
            session.mark_lost(reason)
            self.keeper.progress.host(name, f"[lost] {reason}")
        return HostLostError(name, reason)
