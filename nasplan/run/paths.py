"""How each client -> server test's hosts route to each other (``RunContext.routes``, read by
``nasplan.measure.pair.open_pair``): what the facts' round trip asks of the addresses the
inventory gives (``early_probes``), and the rest once the network is as the tests will see it
(``ask_routes``: one script per host, all at once). A host that cannot say (Windows, an error) is
left out: its path is then not known. Each phase returns the routes it knows as a new read-only
value (``record.frozen``) that the next is given: nothing fills in a mapping another holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nasplan import platforms
from nasplan.errors import CannotStart, HostLostError, NasplanError
from nasplan.hosts.session import HostSession, mark_lost_hosts
from nasplan.input.plan import Plan
from nasplan.measure import route
from nasplan.measure.kind import BoundTest, Routes
from nasplan.measure.pair import target_address
from nasplan.measure.record import frozen
from nasplan.progress import Progress
from nasplan.tasks import Tasks


def guarded(
    step: Callable[[], object],
    sessions: Mapping[str, HostSession],
    progress: Progress,
    session: HostSession | None = None,
) -> None:
    """``step`` on one host (or all): a host that stops answering is marked lost, and said."""
    try:
        step()
    except HostLostError as exc:
        lost = session or sessions.get(exc.host)
        if lost is not None:
            lost.mark_lost(str(exc))
        progress.host(exc.host, f"[lost] {exc}")


def lost_said(sessions: Mapping[str, HostSession], progress: Progress) -> list[str]:
    """The hosts whose connection ended since last asked, each said lost on the console."""
    lost = mark_lost_hosts(sessions)
    for name in lost:
        progress.host(name, f"[lost] {sessions[name].error}")
    return lost


def early_probes(plan: Plan, bound: Sequence[BoundTest]) -> dict[str, route.Probes]:
    """The routes the facts' round trip asks: to the addresses the inventory gives, back to
    the clients' addresses there (none when the plan changes the network: ``ask_routes``)."""
    if plan.network.active:
        return {}
    pairs, addresses = route.inventory_pairs([one.test for one in bound], plan.inventory)
    return route.missing_probes(pairs, {}, addresses)


def ask_routes(
    plan: Plan,
    bound: Sequence[BoundTest],
    sessions: Mapping[str, HostSession],
    routes: Routes,
    tasks: Tasks,
    progress: Progress,
) -> Routes:
    """``routes`` with what it lacks of each client -> server test's path, asked of its hosts
    now (a new value)."""
    pairs = _test_pairs(plan, bound, sessions)
    addresses = {
        name: [a for nic in s.facts.interfaces for a in nic.addresses] if s.facts else []
        for name, s in sessions.items()
    }
    wanted = route.missing_probes(pairs, routes, addresses)
    found: dict[str, Mapping[str, Any]] = {}

    def ask(name: str) -> None:
        session = sessions[name]
        if session.runner is None or not platforms.of(session.runner).posix_shell:
            return
        try:
            answered = route.gather(session.runner, wanted[name], route.Asker.of(session.facts))
        except HostLostError:
            raise
        except NasplanError:
            return
        found[name] = answered

    tasks.each(sorted(wanted), lambda name: guarded(lambda: ask(name), sessions, progress))
    merged = {name: dict(known) for name, known in routes.items()}
    for name, answered in found.items():
        merged.setdefault(name, {}).update(answered)
    return frozen(merged)  # type: ignore[no-any-return]


def _test_pairs(
    plan: Plan, bound: Sequence[BoundTest], sessions: Mapping[str, HostSession]
) -> list[tuple[str, str, str]]:
    """``(client, server, address)`` of each client -> server test whose hosts are ready."""
    pairs = []
    for one in bound:
        test = one.test
        ends = [sessions.get(test.client), sessions.get(test.server)]
        if not test.client or any(s is None or not s.ready for s in ends):
            continue
        with contextlib.suppress(CannotStart):
            address = target_address(test, plan, sessions[test.server])
            pairs.append((test.client, test.server, address))
    return pairs
