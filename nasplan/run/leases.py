"""A run's hold on its hosts: take each host's lock (nasplan.hosts.lock), renew the leases while
the run lasts, release them (and whatever the run left) at the end."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from nasplan.hosts import shell
from nasplan.hosts.lock import (
    EXIT_BUSY,
    acquire_script,
    parse_holder,
    release_script,
    renew_script,
)
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.progress import Progress
    from nasplan.runner import Result


def acquire(
    session: HostSession, run_id: str, lease_s: float, taken: Result | None = None
) -> str | None:
    """Lock ``session``'s host for this run; None when locked (or a lock cannot be had there:
    a warning), else why not (another run holds it: the host is unusable for this run).

    A lock whose lease ran out, or whose owner was a process of this control node that is
    gone, is taken over: what it left is removed and the session's actions say so.
    ``taken``: acquire_script's result when it already ran (with the facts), else it runs here.
    """
    runner, name = session.runner, session.host.name
    assert runner is not None
    if shell.of(runner).is_windows:
        # The lock, its lease and the leftovers registry are POSIX sh under /tmp.
        session.warnings.append(
            f"{name}: Windows hosts are not locked: a second nasplan run against it at the same "
            "time is not refused, and what a killed run left there is not cleaned up by the next"
        )
        return None
    result = taken or runner.run_script(acquire_script(run_id, lease_s), timeout_s=30)
    holder = parse_holder(result.stdout)
    if result.exited == EXIT_BUSY and holder.fields.get("run_id") == run_id:
        # This run took it already: in the facts' round trip, whose output was cut before the
        # lock script's status came back.
        session.locked = True
        return None
    if result.exited == EXIT_BUSY and holder.dead_here():
        result = runner.run_script(acquire_script(run_id, lease_s, force=True), timeout_s=30)
    sections = split_sections(result.stdout)
    if result.exited == EXIT_BUSY:
        left = f"; its lease runs out in {holder.lease_left_s} s" if holder.lease_left_s else ""
        return (
            f"{name}: in use by another nasplan {holder.describe()}{left}; refusing to measure "
            "alongside it (wait for it to finish, or run again once its lease has run out)"
        )
    if "locked" not in sections:
        # A host without a POSIX shell or a writable /tmp: measured, but without the lock and
        # leases (what nasplan starts there then stops only by its own limits).
        detail = (result.stderr or result.stdout).strip().splitlines()
        session.warnings.append(
            f"{name}: running without the host's nasplan lock (exit {result.exited}"
            + (f": {detail[-1]}" if detail else "")
            + "): a second run would not be refused"
        )
        return None
    if holder.fields:
        removed = [line for line in sections.get("removed", "").splitlines() if line.strip()]
        session.actions.append(
            f"took over the stale lock of {holder.describe()}"
            + (f"; removed its leftovers: {', '.join(removed)}" if removed else "")
        )
        session.warnings.append(f"{name}: {session.actions[-1]}")
    session.locked = True
    return None


def release(session: HostSession, run_id: str) -> None:
    """Remove this run's lock and anything it registered on the host (best effort)."""
    if not session.locked or session.runner is None:
        return
    with contextlib.suppress(Exception):  # a lost host: its lease runs out by itself
        result = session.runner.run_script(release_script(run_id), timeout_s=30)
        removed = [
            line
            for line in split_sections(result.stdout).get("removed", "").splitlines()
            if line.strip()
        ]
        if removed:
            session.actions.append(f"removed what this run left: {', '.join(removed)}")
        session.locked = False


class LeaseKeeper:
    """Renews every locked host's lease from a thread of its own until ``stop``."""

    def __init__(
        self,
        sessions: Mapping[str, HostSession],
        run_id: str,
        lease_s: float,
        renew_s: float,
        progress: Progress,
    ) -> None:
        self.sessions = sessions
        self.run_id = run_id
        self.lease_s = lease_s
        self.renew_s = renew_s
        self.progress = progress
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # hosts released before the end (EarlyRelease): no longer renewed
        self._dropped: set[str] = set()

    def start(self) -> None:
        """One daemon thread per locked host: a hung host does not hold the others' leases.

        The hosts' first renewals are spread over one interval (then each renews every
        ``renew_s``): thirty renewals at the same instant would each cost a process on its host
        and a round trip here, and all land on whatever the run measures at that moment.
        """
        locked = [session for session in self.sessions.values() if session.locked]
        for index, session in enumerate(locked):
            first_s = self.renew_s * (index + 1) / len(locked)
            thread = threading.Thread(target=self._keep, args=(session, first_s), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _keep(self, session: HostSession, first_s: float) -> None:
        script = renew_script(self.run_id, self.lease_s)
        wait_s = first_s
        while not self._stop.wait(wait_s):
            wait_s = self.renew_s
            if session.host.name in self._dropped:
                return
            runner = session.runner
            if runner is None or getattr(runner, "lost", None):
                return
            try_script = getattr(runner, "try_script", None)
            try:
                if try_script is not None:  # SSH: a missed renewal is no lost host
                    result = try_script(script, timeout_s=self.renew_s + 10)
                else:
                    result = runner.run_script(script, timeout_s=self.renew_s + 10)
            except Exception:  # a lost host: the lease runs out there, as it should
                return
            if result is None:
                continue
            if result.stdout.strip() == "lost" and session.host.name not in self._dropped:
                session.warnings.append(
                    f"{session.host.name}: another run took this host's lock during the run"
                )
                return

    def drop(self, session: HostSession) -> None:
        """Stop renewing ``session``'s lease: it is being released (a renewal already under
        way then finds the lock gone, which is no other run's doing)."""
        self._dropped.add(session.host.name)

    def stop(self) -> None:
        """Stop renewing (the threads end within one renewal)."""
        self._stop.set()


class EarlyRelease:
    """Releases a host's lock, in the background, once the plan is done with the host.

    Another run may use the host from then on, its lease is no longer renewed, and what the run
    left there is removed while the plan goes on elsewhere instead of all at the end (with 30
    hosts the release at the end was ~0.16 s of every run). The release starts ``delay_s``
    later: while the next test measures rather than while it starts its server and samplers
    (a host's work is not on the next test's critical path then, where hosts share a machine's
    CPU as in the lab). Only for a plan that changes no network setting: a host whose settings
    are put back at the end keeps its lock until then.
    """

    def __init__(self, keeper: LeaseKeeper, run_id: str, delay_s: float = 0.1) -> None:
        self.keeper = keeper
        self.run_id = run_id
        self.delay_s = delay_s
        self._now = threading.Event()  # set by join: the delays are over
        self._threads: list[threading.Thread] = []

    def release(self, sessions: list[HostSession], after: threading.Event | None = None) -> None:
        """Release these hosts' locks without waiting (``join`` waits); ``after``: not before
        this is set (the last test's teardown on them, still running: RunContext.defer)."""
        for session in sessions:
            if session.locked:
                self.keeper.drop(session)
                thread = threading.Thread(target=self._later, args=(session, after), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _later(self, session: HostSession, after: threading.Event | None) -> None:
        self._now.wait(self.delay_s)
        if after is not None:
            after.wait()
        release(session, self.run_id)

    def join(self) -> None:
        """Wait for every release (each ends within its command's timeout); one still waiting
        for its delay starts at once."""
        self._now.set()
        for thread in self._threads:
            thread.join()
