"""The first phase of a run: every host connected at once, its facts gathered and its lock
taken in one round trip each (with the routes the inventory already lets it ask).

A host is known to the run as soon as its facts are in (its lock is then released even when the
run stops during the connections); one held by another run is unusable, unless that run started
at the same moment and yields to this one (``leases.Contest``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.hosts.lock import acquire_script
from nasplan.hosts.session import HostSession, open_sessions
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure import route
from nasplan.measure.kind import BoundTest, Routes
from nasplan.measure.record import frozen
from nasplan.progress import Progress
from nasplan.remote.runner import Result
from nasplan.run import leases, paths
from nasplan.run.planned import plan_hosts
from nasplan.run.reach import Reach


def open_hosts(
    reach: Reach,
    plan: Plan,
    bound: Sequence[BoundTest],
    lock_id: str,
    lease_s: float,
) -> Routes:
    """``reach.sessions`` filled with every host of the plan, each locked for the run
    ``lock_id`` (or said in use); returns the routes the facts' round trip asked."""
    sessions, progress = reach.sessions, reach.progress
    routes: dict[str, Mapping[str, Any]] = {}
    contest = leases.Contest(lock_id, lease_s)
    lock_text = acquire_script(lock_id, lease_s)
    early = paths.early_probes(plan, bound)

    def also(host: Host) -> str:
        probes = early.get(host.name)
        return lock_text if probes is None else route.script(probes, route.FACTS) + lock_text

    def lock(session: HostSession, taken: Result | None) -> None:
        sessions[session.host.name] = session
        if taken is not None and session.host.name in early:
            routes[session.host.name] = route.parse(taken.stdout)
        paths.guarded(lambda: contest.take(session, taken), sessions, progress)

    opened = open_sessions(
        plan_hosts(plan), progress, reach.connector, then=lock, also=also, tasks=reach.tasks
    )
    sessions.clear()
    sessions.update(opened)
    paths.guarded(lambda: contest.settle(sessions, progress), sessions, progress)
    _say_refused(sessions, contest, progress)
    return frozen(routes)  # type: ignore[no-any-return]


def _say_refused(
    sessions: Mapping[str, HostSession], contest: leases.Contest, progress: Progress
) -> None:
    """Each host another run holds (or whose lock failed), and each lock taken over, said."""
    for name, session in sorted(sessions.items()):
        if name in contest.refused:
            tag = "in use" if contest.refused[name].busy else "failed"
            progress.host(name, f"[{tag}] {session.error}")
        for action in session.actions:
            if action.startswith("took over "):
                progress.host(name, action)
