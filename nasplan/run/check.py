"""``nasplan apply --check``: connect and gather facts, say what would happen, change nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from nasplan.hosts.session import HostSession, close_sessions, open_sessions, planned_installs
from nasplan.input.inventory import Host
from nasplan.input.plan import Plan
from nasplan.measure.kind import BoundTest
from nasplan.progress import Progress
from nasplan.run.overlap import Overlap
from nasplan.run.planned import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_UNREACHABLE,
    Outcome,
    bound_tests,
    plan_hosts,
    tool_needs,
    unset_variables,
)
from nasplan.runner import Runner
from nasplan.ssh import connect
from nasplan.tasks import Tasks


def check(
    plan: Plan,
    progress: Progress,
    connector: Callable[[Host], Runner] = connect,
    environ: Mapping[str, str] | None = None,
    tasks: Tasks | None = None,
) -> Outcome:
    """Print what the run would install, change and run on each host.

    Exit code 2 when a password variable the run needs is not set (``environ``, default the
    process environment), else 0, or 3 when a host is unreachable.
    """
    missing = unset_variables(plan, os.environ if environ is None else environ)
    bound = bound_tests(plan)
    sessions = open_sessions(
        plan_hosts(plan), progress, connector, tasks=tasks or Overlap.concurrent()
    )
    try:
        _say_hosts(plan, sessions, bound, progress)
        _say_network(plan, sessions, progress)
        for one in bound:
            progress.message(f"test {one.test.id}: would run {one.description}")
        for problem in missing:
            progress.message(f"problem: {problem}")
        if any(s.error for s in sessions.values()):
            return Outcome(None, EXIT_UNREACHABLE)
        return Outcome(None, EXIT_INPUT if missing else EXIT_OK)
    finally:
        close_sessions(sessions)


def _say_hosts(
    plan: Plan, sessions: Mapping[str, HostSession], bound: list[BoundTest], progress: Progress
) -> None:
    """Each host's platform and what would be installed there, or why it is unreachable."""
    needs = tool_needs(plan, bound)
    for name, session in sessions.items():
        if session.error:
            progress.message(f"{name}: UNREACHABLE: {session.error}")
            continue
        platform = session.platform.name if session.platform else "?"
        installs = planned_installs(session, needs.get(name, []))
        todo = "; ".join(installs) if installs else "nothing to install"
        progress.message(f"{name} ({platform}): {todo}")
        for warning in session.warnings:
            progress.message(f"warning: {warning}")


def _say_network(plan: Plan, sessions: Mapping[str, HostSession], progress: Progress) -> None:
    """Each declared network change, against the host's current state."""
    if not plan.network.hosts:
        return
    from nasplan.run.network_phase import describe_changes  # a plan that changes the network

    for name in plan.network.hosts:
        facts = sessions[name].facts if name in sessions else None
        current = {nic.name: nic for nic in facts.interfaces} if facts else {}
        for line in describe_changes(plan.network.changes(name), current):
            progress.message(f"{name}: would set {line} (and put it back after the run)")
