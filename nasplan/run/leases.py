"""A run's hold on its hosts: take each host's lock (nasplan.hosts.lock), renew the leases while
the run lasts, release them (and whatever the run left) at the end."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nasplan import platforms
from nasplan.hosts.lock import (
    EXIT_BUSY,
    EXIT_UNWRITABLE,
    LockHolder,
    acquire_script,
    parse_holder,
    release_script,
    renew_script,
)
from nasplan.sections import split_sections
from nasplan.units import format_free

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.progress import Progress
    from nasplan.remote.runner import Result
    from nasplan.remote.timeouts import Timeouts
    from nasplan.tasks import Repeating, Task, Tasks


@dataclass(frozen=True)
class Refusal:
    """Why a host's lock could not be had: another run (``holder``: its lock id, when its
    owner file names it) holds it, or (``busy`` False) the host's /tmp cannot hold it."""

    message: str
    holder: str | None
    busy: bool = True


def acquire(
    session: HostSession, run_id: str, lease_s: float, taken: Result | None = None
) -> Refusal | None:
    """Lock ``session``'s host for this run; None when locked (or a lock cannot be had there:
    a warning), else why not (another run holds it: the host is unusable for this run).

    A lock whose lease ran out, or whose owner was a process of this control node that is
    gone, is taken over: what it left is removed and the session's actions say so.
    ``taken``: acquire_script's result when it already ran (with the facts), else it runs here.
    """
    runner, name = session.runner, session.host.name
    assert runner is not None
    if not platforms.of(runner).posix_shell:
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
    if result.exited == EXIT_UNWRITABLE and "unwritable" in sections:
        return Refusal(unwritable(name, sections["unwritable"]), None, busy=False)
    if result.exited == EXIT_BUSY:
        left = f"; its lease runs out in {holder.lease_left_s} s" if holder.lease_left_s else ""
        return Refusal(
            f"{name}: in use by another nasplan {holder.describe()}{left}; refusing to measure "
            "alongside it (wait for it to finish, or run again once its lease has run out)",
            holder.fields.get("run_id"),
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
    if "removed" in sections:
        _took_over(session, sections, holder)
    session.locked = True
    return None


def _took_over(session: HostSession, sections: Mapping[str, str], holder: LockHolder) -> None:
    """Say which stale lock the run took over and what it removed of it."""
    removed = [line for line in sections["removed"].splitlines() if line.strip()]
    whose = (
        "a lock with no readable owner (a run that could not write it there, or one half removed)"
        if "ownerless" in sections
        else f"the stale lock of {holder.describe()}"
    )
    session.actions.append(
        f"took over {whose}" + (f"; removed its leftovers: {', '.join(removed)}" if removed else "")
    )
    session.warnings.append(f"{session.host.name}: {session.actions[-1]}")


def unwritable(name: str, section: str) -> str:
    """One line for a lock /tmp could not hold: ``nas: /tmp is full (0 B free): no space
    left on device ...`` (dash says only ``printf: I/O error``: df's free space tells)."""
    said = dict(line.split("=", 1) for line in section.splitlines() if "=" in line)
    error = said.get("error", "").strip()
    free = said.get("free_kib", "")
    free_bytes = int(free) * 1024 if free.isdigit() else None
    full = "no space" in error.lower() or free_bytes == 0
    if full:
        what = f"/tmp is full ({format_free(free_bytes)} free): no space left on device"
    else:
        what = "/tmp is not writable" + (f" ({error})" if error else "")
    return (
        f"{name}: {what} for the host's nasplan lock; nothing of this run was left there "
        "(free some space in /tmp and run again)"
    )


class Contest:
    """This run's claim on its hosts' locks, settled against runs that started at the same
    moment: two runs that each took some of the hosts they share would both be refused.

    Every run orders the runs by lock id (the same order for all of them): one refused by an
    earlier run yields (releases what it took; its hosts are in use), one refused only by later
    runs waits a little for them to yield and takes the hosts then. An earlier run that is not
    starting but measuring does not yield: the wait ends and the host is in use, as before.
    """

    def __init__(self, run_id: str, lease_s: float, wait_s: float = 5.0, pause_s: float = 0.2):
        self.run_id = run_id
        self.lease_s = lease_s
        self.wait_s = wait_s
        self.pause_s = pause_s
        # host -> why it was refused, as it stands
        self.refused: dict[str, Refusal] = {}

    def take(self, session: HostSession, taken: Result | None) -> None:
        """Take one ready host's lock (``taken``: the lock script's result from the facts'
        round trip); a refusal is noted, the host unusable until ``settle`` says otherwise."""
        if not session.ready:
            return
        refused = acquire(session, self.run_id, self.lease_s, taken)
        if refused is not None:
            self.refused[session.host.name] = refused
            session.error = refused.message

    def settle(self, sessions: Mapping[str, HostSession], progress: Progress) -> None:
        """Yield to an earlier run, or wait for later ones to yield (saying so)."""
        holders = {r.holder for r in self.refused.values() if r.holder}
        waiting = {name: r for name, r in self.refused.items() if r.holder and r.busy}
        if any(holder < self.run_id for holder in holders):
            earlier = min(holder for holder in holders if holder < self.run_id)
            for name, session in sessions.items():
                if session.locked:
                    release(session, self.run_id)
                    session.error = (
                        f"{name}: in use: nasplan run {earlier} started at the same moment and "
                        "wants it too; this run yielded (run again once it is done)"
                    )
                    self.refused[name] = Refusal(session.error, earlier)
            return
        for name, refusal in sorted(waiting.items()):
            progress.host(
                name,
                f"in use by {refusal.holder}, started at the same moment: "
                f"waiting up to {self.wait_s:.0f} s for it",
            )
        deadline = time.monotonic() + self.wait_s
        while waiting and time.monotonic() < deadline:
            time.sleep(self.pause_s)
            for name in sorted(waiting):
                session = sessions[name]
                session.error = None
                del self.refused[name]
                self.take(session, None)
            waiting = {n: r for n, r in self.refused.items() if n in waiting and r.busy}


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


@dataclass(eq=False)
class LeaseKeeper:
    """Renews every locked host's lease, each host on its own (a hung host does not hold the
    others' leases), until ``stop``; the hosts' first renewals are spread over one interval so
    that they do not all land on whatever the run measures at that moment."""

    sessions: Mapping[str, HostSession]
    run_id: str
    lease_s: float
    renew_s: float
    tasks: Tasks
    progress: Progress
    _renewing: list[Repeating] = field(default_factory=list, init=False)
    # hosts released before the end (EarlyRelease): no longer renewed
    _dropped: set[str] = field(default_factory=set, init=False)
    # host -> when its last renewal that got through started (time.monotonic), and why the
    # last one that failed did
    _renewed_at: dict[str, float] = field(default_factory=dict, init=False)
    _why: dict[str, str] = field(default_factory=dict, init=False)
    # host -> why its lease ran out
    _lapses: dict[str, str] = field(default_factory=dict, init=False)

    def start(self) -> None:
        """Start renewing each locked host's lease (every ``renew_s``)."""
        locked = [session for session in self.sessions.values() if session.locked]
        now = time.monotonic()  # each lease was just taken (or renewed with the facts)
        self._renewed_at.update((session.host.name, now) for session in locked)
        for index, session in enumerate(locked):
            self._renewing.append(
                self.tasks.every(
                    self.renew_s,
                    functools.partial(self._renew, session),
                    f"lease {session.host.name}",
                    first_s=self.renew_s * (index + 1) / len(locked),
                )
            )

    def _renew(self, session: HostSession) -> bool:
        """One renewal of ``session``'s lease; False once renewing it is over (released, lost,
        taken by another run, or lapsed). A renewal waits for its answer up to the lease's end
        (the runner puts a new connection in place of a silent one meanwhile); one that fails
        earlier is tried again at the next interval. Once no renewal got through for a whole
        lease, the host's watchdogs have stopped what the run started there: it is marked
        lost, saying so, whether it answers again or not."""
        name, runner = session.host.name, session.runner
        if name in self._dropped or runner is None or session.lost:
            return False
        if runner.lost:  # its connection ended: said now, not at the end of the test
            session.mark_lost(runner.lost)
            self.progress.host(name, f"[lost] {runner.lost}")
            return False
        started = time.monotonic()
        left_s = self._renewed_at.get(name, started) + self.lease_s - started
        if left_s <= 0:
            return self._lapsed(session, started)
        try:
            result = runner.try_script(
                renew_script(self.run_id, self.lease_s), timeout_s=max(left_s, self.renew_s)
            )
        except Exception as exc:  # any failure of one renewal: the next may get through
            result, self._why[name] = None, str(exc) or type(exc).__name__
        answer = result.stdout.strip() if result is not None else ""
        if answer not in ("renewed", "lost"):
            if result is not None:  # the script failed there (a full /tmp, ...): try again
                self._why[name] = (result.stderr or f"exit {result.exited}").strip()
            elif name not in self._why:
                self._why[name] = "no answer"
            if time.monotonic() - self._renewed_at.get(name, started) >= self.lease_s:
                return self._lapsed(session, time.monotonic())
            return True
        if answer == "lost" and name not in self._dropped:
            session.warnings.append(f"{name}: another run took this host's lock during the run")
            return False
        if answer == "renewed" and started - self._renewed_at.get(name, started) < self.lease_s:
            self._renewed_at[name] = started
            self._why.pop(name, None)
            return True
        return self._lapsed(session, started)

    def _lapsed(self, session: HostSession, now: float) -> bool:
        """``session``'s lease ran out (no renewal got through for a whole lease): lost."""
        name = session.host.name
        if name in self._dropped or session.lost:
            return False
        why = self._why.get(name) or _NOT_RUN  # no renewal failed: none was tried in time
        self._lapses[name] = reason = _ran_out(name, now - self._renewed_at.get(name, now), why)
        session.mark_lost(reason)
        self.progress.host(name, f"[lost] {reason}")
        return False

    def lapsed(self, names: Iterable[str]) -> str | None:
        """Why one of these hosts' leases has run out by now (no renewal got through for a
        whole lease, on this machine's clock: the host is stopping what the run started
        there, or has), None while every one holds. Known at once after a gap in nasplan
        itself (stopped, starved for CPU), before a renewal has run to say so."""
        now = time.monotonic()
        for name in sorted(names):
            if name in self._lapses:
                return self._lapses[name]
            session = self.sessions.get(name)
            if session is None or session.lost or name in self._dropped:
                continue
            unrenewed_s = now - self._renewed_at.get(name, now)
            if unrenewed_s >= self.lease_s:
                return _ran_out(name, unrenewed_s, self._why.get(name) or _NOT_RUN)
        return None

    def drop(self, session: HostSession) -> None:
        """Stop renewing ``session``'s lease: it is being released (a renewal already under
        way then finds the lock gone, which is no other run's doing)."""
        self._dropped.add(session.host.name)

    def stop(self) -> None:
        """Stop renewing (a renewal under way finishes)."""
        for renewing in self._renewing:
            renewing.stop()


# why a lease ran out that no failed renewal explains
_NOT_RUN = "nasplan itself did not run to renew it: stopped, or starved of CPU"


def _ran_out(name: str, unrenewed_s: float, why: str) -> str:
    return (
        f"{name}: its lease ran out: not renewed for {unrenewed_s:.0f} s ({why}); the host "
        "stopped what this run had started there"
    )


class EarlyRelease:
    """Releases a host's lock as the plan's last test on the host ends: another run may use the
    host from then on, and what the run left there is removed while the plan goes on elsewhere
    instead of all at the end.

    Each release runs beside the teardown of that test (the server's stop), side by side with
    the other hosts' releases, and waits for the teardown only on a host the teardown works on
    (``after``); the run settles them with the teardown, before its next measurement. Only for
    a plan that changes no network setting: a host whose settings are put back at the end
    keeps its lock until then.
    """

    def __init__(self, keeper: LeaseKeeper, run_id: str, tasks: Tasks) -> None:
        self.keeper = keeper
        self.run_id = run_id
        self.tasks = tasks
        self._releases: list[Task] = []

    def release(
        self, sessions: Iterable[HostSession], after: Callable[[str], Task | None]
    ) -> list[Task]:
        """Start releasing these hosts' locks now, each on its own, without waiting (``join``);
        ``after``: host -> the task to wait for first (the teardown still on it), or None."""
        started = []
        for session in sessions:
            if session.locked:
                self.keeper.drop(session)  # a renewal under way finds the lock gone: no warning
                name = session.host.name
                work = functools.partial(self._after, session, after(name))
                started.append(self.tasks.start(work, f"release {name}"))
        self._releases += started
        return started

    def _after(self, session: HostSession, after: Task | None) -> None:
        if after is not None:
            after.wait()
        release(session, self.run_id)

    def join(self) -> None:
        """Wait for every release started."""
        for task in self._releases:
            task.wait()


def hold(
    sessions: Mapping[str, HostSession],
    lock_id: str,
    timeouts: Timeouts,
    tasks: Tasks,
    progress: Progress,
    *,
    until_the_end: bool,
) -> tuple[LeaseKeeper, EarlyRelease | None]:
    """A run's hold on its hosts: the lease renewals, and the early releases of hosts the plan
    is done with (none ``until_the_end``: with network changes, every host keeps its lock until
    its settings are put back)."""
    keeper = LeaseKeeper(sessions, lock_id, timeouts.lease_s, timeouts.renew_s, tasks, progress)
    return keeper, None if until_the_end else EarlyRelease(keeper, lock_id, tasks)
