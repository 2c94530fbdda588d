"""No measurement across a lapse of a host's lease: what reached the run after a host's lease ran
out (nasplan stopped or starved for longer than a lease, a host cut off) is not kept as a
measurement (the run's side of ``nasplan.run.leases``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nasplan.errors import HostLostError
from nasplan.measure.kind import fail_for_lost_host
from nasplan.run.leases import LeaseKeeper


class LapseGuard:
    """No measurement across a lapse: the repetitions whose results reached the run after one
    of their hosts' leases ran out (nasplan stopped or starved longer than a lease, a host cut
    off) are failed, saying so: what they measured ran while the host was stopping the run's
    work, or reverting its network settings. Checked at each repetition's checkpoint
    (``check``) and once a part is over (``after``)."""

    def __init__(self, keeper: LeaseKeeper) -> None:
        self.keeper = keeper
        # the running part's record, and how many of its repetitions were checked
        self._record: dict[str, Any] | None = None
        self._checked = 0

    def check(self, record: dict[str, Any], hosts: Iterable[str]) -> HostLostError | None:
        """The repetitions new in ``record`` since the last check failed when a lease of
        ``hosts`` ran out (the error to stop the test with, its host marked lost), else None."""
        if record is not self._record:
            self._record, self._checked = record, 0
        reps = record.get("repetitions") or []
        fresh, self._checked = reps[self._checked :], len(reps)
        reason = self.keeper.lapsed(hosts)
        if reason is None:
            return None
        for rep in fresh:
            if rep.get("status") == "ok":
                rep.update(status="failed", error=reason)
        name = reason.split(":", 1)[0]
        session = self.keeper.sessions.get(name)
        if session is not None and not session.lost:
            session.mark_lost(reason)
            self.keeper.progress.host(name, f"[lost] {reason}")
        return HostLostError(name, reason)

    def after(self, record: dict[str, Any], hosts: Iterable[str]) -> dict[str, Any]:
        """A part's final record, its repetitions checked (``check``): failed by the lapse."""
        lapse = self.check(record, hosts)
        if lapse is None or record.get("status") == "skipped":
            return record
        return fail_for_lost_host(record, lapse, self.keeper.sessions)
