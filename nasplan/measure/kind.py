"""The one contract of a test kind: Kind, RunContext, the record's life, open_pair(), raw files.

A kind turns one plan test into one run.json test record: ``new_record`` when it begins
(status failed until it succeeds), ``skipped`` when it never ran, ``finish`` when it ends.
Its hosts are checked (and a client -> server pair opened) by ``check_ready`` / ``open_pair``,
which raise CannotStart; raw tool outputs are written only through ``RunContext.save_raw``,
which always masks the run's secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from nasplan.analysis import efficiency, summarize
from nasplan.errors import CannotStart, HostLostError
from nasplan.facts.gather import NicFacts
from nasplan.measure.netpath import (
    describe_path,
    first_ipv4,
    links_on_the_way,
    nic_holding,
    nic_towards,
    path_end,
)
from nasplan.units import format_metric

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import Plan, PlanTest
    from nasplan.progress import Progress
    from nasplan.tasks import Tasks

S = TypeVar("S")
Needs = dict[str, tuple[str, ...]]


class RunHooks(Protocol):
    """What the run lends a kind while its test runs (``nasplan.run.kind_hooks.KindHooks``)."""

    def save_raw(self, relative_path: str, text: str) -> str:
        """Write a raw tool output under ``raw/``, the run's secrets masked; its run-relative
        path."""
        ...

    def mask(self, secret: str) -> None:
        """Mask ``secret`` in everything the run writes from now on."""
        ...

    def checkpoint(self, record: dict[str, Any], *, last: bool = False) -> None:
        """Keep ``record`` (the running test, its finished repetitions) safe; ``last``: its last
        repetition, which the run saves with the finished record anyway."""
        ...

    def defer(
        self, work: Callable[[], object], done: Callable[[BaseException | None], None]
    ) -> None:
        """A finished test's clean-up on its hosts (``work``), then ``done(error)`` in the run's
        own thread; ``work`` may overlap the next test's start, never its measurement."""
        ...

    def settle(self) -> None:
        """Wait for a deferred clean-up and complete its record (before a measurement)."""
        ...


@dataclass
class RunContext:
    """Passed explicitly to every test kind: the plan, its hosts, the console, the run's
    ``tasks`` (background work: ``nasplan.tasks``) and ``hooks`` (files, checkpoints, deferred
    clean-up). ``warnings`` are the run's, prefixed with the test's id by the kind."""

    plan: Plan
    sessions: Mapping[str, HostSession]
    progress: Progress
    tasks: Tasks
    hooks: RunHooks
    warnings: list[str] = field(default_factory=list)
    # host -> address -> how that host routes to it (nasplan.measure.route.parse), asked in
    # the facts' round trip and after the network phase (apply); empty when nothing was asked
    routes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def save_raw(self, relative_path: str, text: str) -> str:
        """A raw tool output saved with the secrets masked (``RunHooks.save_raw``)."""
        return self.hooks.save_raw(relative_path, text)

    def mask(self, secret: str) -> None:
        """Mask ``secret`` (a password read from the environment) from now on."""
        self.hooks.mask(secret)

    def checkpoint(self, record: dict[str, Any], *, last: bool = False) -> None:
        """Keep ``record`` safe now (``RunHooks.checkpoint``)."""
        self.hooks.checkpoint(record, last=last)

    def defer(
        self, work: Callable[[], object], done: Callable[[BaseException | None], None]
    ) -> None:
        """Clean-up after the measurement (``RunHooks.defer``)."""
        self.hooks.defer(work, done)

    def settle(self) -> None:
        """Wait for the previous clean-up (``RunHooks.settle``)."""
        self.hooks.settle()


@dataclass(frozen=True)
class Kind(Generic[S]):
    """A plan kind (``kind: iperf3``): its typed settings, parsed once, and what it does.

    ``settings(test)``: the plan test's own keys -> a frozen value with every default stated once;
    ``needs``: host name -> tools that host must have (installed by its platform);
    ``describe``: one line for ``apply --check``; ``run``: the run.json test record (never raises).
    ``settles_itself``: ``run`` calls ``RunContext.settle`` just before it measures (the previous
    test's teardown overlaps its start); apply settles before the other kinds' tests begin.
    ``summarize(record, s)``: the record's summary, efficiency, status and error (and what else
    the kind derives from its repetitions) computed again, when a run merges the parts of a test
    it ran a few repetitions at a time (``nasplan.measure.merge``); None: the summary over the
    repetitions' metric, status from their errors.
    """

    name: str
    settings: Callable[[PlanTest], S]
    needs: Callable[[PlanTest, S], Needs]
    describe: Callable[[PlanTest, S], str]
    run: Callable[[PlanTest, S, RunContext], dict[str, Any]]
    settles_itself: bool = False
    summarize: Callable[[dict[str, Any], S], dict[str, Any]] | None = None

    def bind(self, test: PlanTest) -> BoundTest:
        """This kind with ``test``'s settings parsed: what apply and ``--check`` call."""
        settings = self.settings(test)
        summarize = self.summarize
        return BoundTest(
            test=test,
            needs=self.needs(test, settings),
            description=self.describe(test, settings),
            run=lambda ctx: self.run(test, settings, ctx),
            settles_itself=self.settles_itself,
            run_part=lambda part, ctx: self.run(part, settings, ctx),
            summarize=(lambda record: summarize(record, settings)) if summarize else None,
        )


@dataclass(frozen=True)
class BoundTest:
    """One plan test with its kind's settings parsed: its needs, its line, how to run it."""

    test: PlanTest
    needs: Needs
    description: str
    run: Callable[[RunContext], dict[str, Any]]
    settles_itself: bool = False
    # ``run`` of a part of the test: the same settings, ``part`` a copy of ``test`` with other
    # ``first_repetition`` and ``repetitions`` (None: the test runs whole only)
    run_part: Callable[[PlanTest, RunContext], dict[str, Any]] | None = None
    summarize: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def no_tools(test: PlanTest, settings: object) -> Needs:
    """``needs`` of a kind whose tools every system has (ping): nothing to install."""
    return {}


def target_address(test: PlanTest, plan: Plan, server: HostSession) -> str:
    """The address the client sends to: the target interface's, else the server's address."""
    target = test.target
    if target.address:
        return target.address
    if target.interface:
        iface = plan.inventory.hosts[test.server].interfaces[target.interface]
        if iface.address:
            return iface.address
        nic = server.facts.interface(iface.name) if server.facts else None
        for cidr in nic.addresses if nic else ():
            if ":" not in cidr:
                return cidr.split("/")[0]
        raise CannotStart(
            f"interface {target.label()} ({iface.name}) has no IPv4 address in the inventory "
            "or on the host"
        )
    return server.host.address


def target_label(test: PlanTest) -> str:
    """``nas.p2p``, ``link:p2p@nas``, an address, or the server's name when the plan gives none."""
    target = test.target
    return target.label() if target.interface or target.address else test.server


def path_params(test: PlanTest, target: str | None = None) -> dict[str, Any]:
    """The params every client -> server kind records; ``address`` is filled in once known."""
    return {
        "server": test.server,
        "client": test.client,
        "target": target or test.target.label(),
        "address": None,
        "repetitions": test.repetitions,
    }


def new_record(test: PlanTest, params: dict[str, Any], metric: str) -> dict[str, Any]:
    """A test record that has not run yet (status failed until it succeeds)."""
    record: dict[str, Any] = {
        "id": test.id,
        "kind": test.kind,
        "name": test.name,
        "status": "failed",
        "error": None,
        "params": params,
        "path": None,
        "repetitions": [],
        "summary": summarize([], metric),
        "efficiency": None,
    }
    if test.cell:  # a matrix cell: the plan's test id and the cell's values
        record.update(base_id=test.base_id or test.id, cell=dict(test.cell))
    return record


def skipped(test: PlanTest, reason: str) -> dict[str, Any]:
    """The record of a test that did not run at all (e.g. the network setup failed)."""
    record = new_record(
        test,
        {"server": test.server, "client": test.client, "target": test.target.label()},
        "bits_per_second",
    )
    record.update(status="skipped", error=reason)
    return record


def finish(record: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """``record`` with its status and error set from what went wrong (``[]``: ok)."""
    record["status"] = "failed" if errors else "ok"
    record["error"] = "; ".join(errors) or None
    return record


def fail_for_lost_host(
    record: dict[str, Any], exc: HostLostError, sessions: Mapping[str, HostSession]
) -> dict[str, Any]:
    """``record`` failed by a host that stopped answering (the host marked lost: its later tests
    fail with why), its summary over the repetitions it finished."""
    session = sessions.get(exc.host)
    if session is not None:
        session.mark_lost(str(exc))
    record["status"] = "failed"
    said = record.get("error")
    record["error"] = (
        said if said and str(exc) in said else "; ".join(e for e in (said, str(exc)) if e)
    )
    metric = (record.get("summary") or {}).get("metric") or "bits_per_second"
    values = [
        r[metric]
        for r in record.get("repetitions", [])
        if r.get("status") == "ok" and isinstance(r.get(metric), (int, float))
    ]
    record["summary"] = summarize(values, metric)
    return record


def summarize_directions(record: dict[str, Any], directions: tuple[str, ...] | list[str]) -> None:
    """Per-direction byte rates into ``record["directions"]``; the first direction's bit rate is
    the record's ``summary`` and, against the path's TCP maximum, its ``efficiency``."""
    reps = record["repetitions"]
    ok = [r for r in reps if r["status"] == "ok"]
    for direction in directions:
        rates = [r["bytes_per_second"] for r in ok if r["direction"] == direction]
        record["directions"][direction] = summarize(rates, "bytes_per_second")
    bits = [r["bits_per_second"] for r in ok if r["direction"] == directions[0]]
    record["summary"] = summarize(bits, "bits_per_second")
    theoretical = (record["path"] or {}).get("theoretical_bits_per_second")
    record["efficiency"] = efficiency(record["summary"]["median"], theoretical)


def finish_directions(
    record: dict[str, Any], directions: tuple[str, ...] | list[str]
) -> dict[str, Any]:
    """A per-direction kind's finished record (transfer, iSCSI): its summaries per direction
    (``summarize_directions``), its status and its error, from its repetitions."""
    summarize_directions(record, directions)
    reps = record["repetitions"]
    errors = [f"{r['direction']} {r['index']}: {r['error']}" for r in reps if r["error"]]
    return finish(record, errors)


def check_ready(test: PlanTest, ctx: RunContext, needed: Needs) -> None:
    """Raise CannotStart when a host of ``test`` is not ready or lacks a tool in ``needed``."""
    for name in dict.fromkeys(test.hosts):
        session = ctx.sessions[name]
        if not session.ready:
            raise CannotStart(session.error or f"{name} is not ready")
        for tool in needed.get(name, ()):
            if tool not in session.tools:
                raise CannotStart(
                    session.tool_errors.get(tool) or f"{name}: {tool} is not available"
                )


def host_tool(session: HostSession, tool: str) -> str:
    """Full path of ``tool`` on the session's host (prepared, else found by facts); CannotStart."""
    path = session.tools.get(tool) or (session.facts.tool(tool) if session.facts else None)
    if not path:
        raise CannotStart(f"{tool} is not installed on {session.host.name}")
    return path


@dataclass(frozen=True)
class Pair:
    """A client -> server test's two ready hosts, the address sent to, and run.json ``path``."""

    server: HostSession
    client: HostSession
    address: str
    path: dict[str, Any]


def open_pair(test: PlanTest, ctx: RunContext, needed: Needs) -> Pair:
    """Check both hosts, find the target address and the path between them; CannotStart if not."""
    check_ready(test, ctx, needed)
    server, client = ctx.sessions[test.server], ctx.sessions[test.client]
    assert server.facts is not None and client.facts is not None
    assert server.runner is not None and client.runner is not None
    address = target_address(test, ctx.plan, server)
    return Pair(server, client, address, pair_path(test, ctx, address))


def pair_path(test: PlanTest, ctx: RunContext, address: str) -> dict[str, Any]:
    """run.json ``path`` of a client -> server test: each end's NIC (the client's as its
    kernel routes to ``address``, when the run asked it: ``RunContext.routes``), the links
    on the way, and ``route``: the route there and the server's route back."""
    server, client = ctx.sessions[test.server], ctx.sessions[test.client]
    assert server.facts is not None and client.facts is not None
    sent = ctx.routes.get(client.host.name, {}).get(address)
    client_nic = nic_towards(client.facts, address)
    if sent and sent.get("interface"):
        dev = str(sent["interface"])
        client_nic = client.facts.interface(dev) or NicFacts(name=dev)
    source = (sent or {}).get("source") or first_ipv4(client_nic.addresses if client_nic else ())
    reply = ctx.routes.get(server.host.name, {}).get(source) if source else None
    links = links_on_the_way(ctx.plan.inventory, (sent or {}).get("gateway"), address)
    path = describe_path(
        path_end(server.host, nic_holding(server.facts, address)),
        path_end(client.host, client_nic),
        links,
    )
    if sent is not None:
        path["route"] = {
            "to": {"address": address, **sent},
            "back": None if reply is None else {"address": source, **reply},
            "links": links,
        }
    return path


def summary_text(summary: dict[str, Any]) -> str:
    """A test summary's median for the progress line, in the unit its metric names."""
    median, metric = summary.get("median"), summary.get("metric", "bits_per_second")
    return "" if median is None else f"median {format_metric(median, metric)}"
