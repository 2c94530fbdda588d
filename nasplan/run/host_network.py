"""One host's part of a run's network phase (``HostNetwork``) and each step of it on that host:
read its NICs before any change (``snapshot``), arm its revert and change it (``arm_and_apply``),
check it from here and between the hosts (``verify``), disarm the revert (``confirm``), put it
back and read it back (``restore``). ``nasplan.run.network_phase`` runs each step on every
host at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol

from nasplan.hosts.session import HostSession
from nasplan.input.network import LinkSpec, MtuSpec, NicChange
from nasplan.network import checks, restore, scripts, tools
from nasplan.network.backends import NetworkBackend, SetsidTimer, for_platform
from nasplan.network.state import NicState
from nasplan.network.tools import parse_state_output
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.input.inventory import Host
    from nasplan.progress import Progress
    from nasplan.remote.runner import Runner

RECONNECT_GRACE_S = 30.0


@dataclass
class HostNetwork:
    """One host's part of the phase; ``status`` ends as restored, reverted-by-host, kept,
    left-to-host (not reachable: its own armed revert puts it back), or failed."""

    changes: tuple[NicChange, ...]
    directory: str
    status: str = "pending"
    before: dict[str, NicState] = field(default_factory=dict)
    applied: dict[str, NicState] = field(default_factory=dict)
    after: dict[str, NicState] = field(default_factory=dict)
    armed_at: float | None = None
    confirmed: bool = False
    lost: bool = False
    touched: bool = False
    error: str | None = None
    original_facts: HostFacts | None = None
    backend: NetworkBackend = field(default_factory=SetsidTimer)
    detached_with: str | None = None  # setsid, daemon or nohup: what detached the revert timer
    revert_by: str | None = None  # left-to-host: when its own revert puts it back (UTC)

    @property
    def nics(self) -> list[str]:
        return [c.nic for c in self.changes]

    def to_dict(self) -> dict[str, Any]:
        """run.json ``network.hosts.<name>``."""
        nics = set(self.nics)
        return {
            "status": self.status,
            "mechanism": self.backend.mechanism,
            "detached_with": self.detached_with,
            "net_tools": self.backend.net_tools.kind,
            "changes": describe_changes(self.changes, self.before),
            "armed": self.armed_at is not None,
            "confirmed": self.confirmed,
            "restored": self.status == "restored",
            "reverted_by_host": self.status == "reverted-by-host",
            "error": self.error,
            "before": {n: s.to_dict() for n, s in sorted(self.before.items())},
            "applied": {n: s.to_dict() for n, s in sorted(self.applied.items()) if n in nics},
            "after": {n: s.to_dict() for n, s in sorted(self.after.items()) if n in nics},
        } | ({"revert_by": self.revert_by} if self.revert_by else {})


class _HasMtu(Protocol):
    """A NIC's state or facts: all describe_changes reads of it."""

    @property
    def mtu_bytes(self) -> int | None: ...


def describe_changes(changes: tuple[NicChange, ...], before: Mapping[str, _HasMtu]) -> list[str]:
    """``["eth1: MTU 1500 -> 9000", "eth1: + 198.18.4.1/30"]``."""
    lines = []
    for change in changes:
        was = before.get(change.nic)
        # an MTU the NIC already has is no change to announce
        if change.mtu_bytes is not None and (was is None or was.mtu_bytes != change.mtu_bytes):
            lines.append(f"{change.nic}: MTU {was.mtu_bytes if was else '?'} -> {change.mtu_bytes}")
        lines += [f"{change.nic}: + {address}" for address in change.add_addresses]
    return lines


def snapshot(record: HostNetwork, session: HostSession) -> None:
    """Read the NICs the host's changes touch, before any change (``record.before``); the
    backend its platform changes them with; ``record.error`` when they cannot be read."""
    runner = session.runner
    assert runner is not None
    if tools.from_facts(session.facts) is None:
        record.error = "neither ip nor ifconfig found: cannot read or change its NICs"
        return
    record.backend = backend = for_platform(session.platform, session.facts)
    result = runner.run_script(
        backend.snapshot_script(record.nics), timeout_s=30, sudo=backend.snapshot_as_root
    )
    states = backend.parse_snapshot(result.stdout)
    missing = [n for n in record.nics if n not in states]
    if not result.ok or missing:
        why = result.stderr.strip().splitlines()[-1:] if not result.ok else []
        record.error = (
            f"cannot read {', '.join(missing) or 'state'} (exit {result.exited})"
            + "".join(f": {line}" for line in why)
        )
        return
    record.before = {n: states[n] for n in record.nics}


def arm_and_apply(
    record: HostNetwork, session: HostSession, confirm_timeout_s: int, progress: Progress
) -> None:
    """Arm the host's revert timer first, then change it; read its new state back (the tests
    after the change see its MTU and addresses: ``session.facts``)."""
    runner = session.runner
    assert runner is not None
    script = record.backend.arm_and_apply_script(
        record.directory, confirm_timeout_s, record.changes, record.before
    )
    mechanism = record.backend.mechanism
    progress.host(
        session.host.name, f"network: arming a {confirm_timeout_s} s revert ({mechanism})"
    )
    record.touched = True
    result = runner.run_script(script, sudo=True, timeout_s=60)
    sections = split_sections(result.stdout)
    if "armed" in sections:
        record.armed_at = time.monotonic()
        record.status = "changed"
        record.detached_with = sections.get("detached-with") or None
    if result.exited in (scripts.EXIT_NO_SETSID, scripts.EXIT_NOT_ARMED):
        record.error = f"revert not armed, nothing changed: {result.stderr.strip()}"
        record.touched = False
        return
    record.applied = parse_state_output(result.stdout)
    _use_applied_facts(record, session)
    if not result.ok:
        record.error = f"change failed (exit {result.exited}): {result.stderr.strip()}"


def _use_applied_facts(record: HostNetwork, session: HostSession) -> None:
    # Tests after the change must see its MTU and addresses (path MTU, target address).
    if session.facts is None:
        return
    record.original_facts = record.original_facts or session.facts
    nics = tuple(
        dataclasses.replace(nic, mtu_bytes=state.mtu_bytes, addresses=state.addresses)
        if (state := record.applied.get(nic.name)) is not None
        else nic
        for nic in session.facts.interfaces
    )
    session.facts = dataclasses.replace(session.facts, interfaces=nics)


@dataclass(frozen=True)
class Peers:
    """What a host's checks after the change read of the others: the links and interfaces
    declared, every host's NICs as they are now (``states``: changed ones; ``neighbours``:
    every NIC's addresses)."""

    links: Sequence[LinkSpec]
    interfaces: Sequence[MtuSpec]
    states: Mapping[str, Mapping[str, NicState]]
    neighbours: Mapping[str, Mapping[str, tuple[str, ...]]]


def verify(
    record: HostNetwork,
    session: HostSession,
    peers: Peers,
    connector: Callable[[Host], Runner],
) -> list[dict[str, Any]]:
    """The host's checks: a new SSH connection from here answers, then its routes, DF pings
    and link speeds towards its peers (``record.lost`` when it stopped answering)."""
    name = session.host.name
    detail = ssh_answers(session, connector)
    found: list[dict[str, Any]] = [
        {
            "check": "ssh",
            "host": name,
            "interface": None,
            "peer": "control node",
            "ok": detail is None,
            "detail": detail or "a new SSH connection answers",
        }
    ]
    if detail is not None:
        record.lost = True
        return found
    mtus = {n: s.mtu_bytes for n, s in record.applied.items()}
    probes = checks.probes(peers.links, name, mtus)
    probes += checks.mtu_probes(peers.interfaces, name, record.applied, peers.neighbours)
    runner = session.runner
    assert runner is not None
    try:
        net_tools = record.backend.net_tools
        script = checks.verify_script(probes, record.nics, net_tools)
        result = runner.run_script(script, timeout_s=30, sudo=net_tools.ping_needs_root)
    except Exception as exc:  # a lost connection surfaces as paramiko or OS errors
        record.lost = True
        record.error = f"verify: {exc}"
        return found
    return found + checks.evaluate(name, probes, result.stdout, peers.states)


def addresses_now(
    sessions: Mapping[str, HostSession], states: Mapping[str, Mapping[str, NicState]]
) -> dict[str, dict[str, tuple[str, ...]]]:
    """host -> NIC -> addresses as they are now: the applied state where nasplan changed a
    NIC, else the facts (the peers of an MTU check need not be changed hosts)."""
    found: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, session in sessions.items():
        nics = {
            n.name: tuple(n.addresses) for n in (session.facts.interfaces if session.facts else ())
        }
        nics.update({nic: state.addresses for nic, state in states.get(name, {}).items()})
        found[name] = nics
    return found


def ssh_answers(session: HostSession, connector: Callable[[Host], Runner]) -> str | None:
    """None when a fresh SSH connection runs ``true``, else why not."""
    try:
        fresh = connector(session.host)
    except Exception as exc:  # HostError, or whatever a custom connector raises
        return f"no new SSH connection: {exc}"
    try:
        result = fresh.run(["true"], timeout_s=15)
        return None if result.ok else f"`true` exited {result.exited}"
    except Exception as exc:  # a lost connection has many exception types
        return f"SSH stopped answering: {exc}"
    finally:
        with contextlib.suppress(Exception):
            fresh.close()


def confirm(record: HostNetwork, session: HostSession, confirm_timeout_s: int) -> None:
    """Disarm the host's revert: the change stays until it is put back."""
    runner = session.runner if session.ready else None
    if record.status != "changed" or record.lost or runner is None:
        return
    try:
        result = runner.run_script(
            record.backend.confirm_script(record.directory), sudo=True, timeout_s=30
        )
    except Exception as exc:  # a lost connection: paramiko, OS or nasplan errors
        record.lost = True
        record.error = f"confirm: {exc}"
        return
    if result.stdout.strip() == "confirmed":
        record.confirmed = True
    else:
        record.error = (
            f"confirm came too late ({result.stdout.strip() or result.exited}): "
            f"the host's {confirm_timeout_s} s revert fired"
        )


@dataclass(frozen=True)
class Restoring:
    """How a host is put back: ``keep`` (its confirmed changes stay), how long a host cut off
    may take to come back, its armed revert's length, the lease it outlives, the run directory
    named in what the user reads, the connector and the console."""

    keep: bool
    reconnect_grace_s: float
    confirm_timeout_s: int
    lease_s: float
    run_dir: str
    connector: Callable[[Host], Runner]
    progress: Progress


def restore_host(record: HostNetwork, session: HostSession, how: Restoring) -> None:
    """Put the host back and read it back (``record.status``: restored, reverted-by-host,
    kept, left-to-host, failed)."""
    name = session.host.name
    if not record.touched:
        record.status = "unchanged" if record.status == "pending" else record.status
        return
    if how.keep and record.confirmed:
        record.status = "kept"
        return
    now = time.monotonic()
    record.lost = record.lost or session.lost
    # A host cut off must first have had the time to revert by itself.
    deadline = now + how.reconnect_grace_s
    if record.lost and record.armed_at is not None and not record.confirmed:
        deadline = max(deadline, record.armed_at + how.confirm_timeout_s + how.reconnect_grace_s)
    how.progress.host(name, "network: restoring")
    outcome = restore.restore_host(
        None if record.lost else session.runner,
        lambda: how.connector(session.host),
        record.directory,
        record.changes,
        record.before,
        deadline=deadline,
        backend=record.backend,
    )
    if outcome.runner is not None and outcome.runner is not session.runner:
        if session.runner is not None:
            with contextlib.suppress(Exception):
                session.runner.close()
        session.runner = outcome.runner
    record.status, record.after = outcome.status, outcome.after
    if outcome.error:
        record.error = outcome.error
    if not outcome.reached and record.armed_at is not None:
        record.status, record.revert_by = "left-to-host", _revert_by(record, how)
        record.error = (
            f"{outcome.error}; its own armed revert puts it back by {record.revert_by} "
            f"(check with: nasplan restore {how.run_dir})"
        )
    session.actions.append(f"network: {record.status}")
    how.progress.host(name, f"network: {record.status}")


def _revert_by(record: HostNetwork, how: Restoring) -> str:
    """When a host nasplan cannot reach puts itself back at the latest (UTC): unconfirmed,
    its timer's end; confirmed, one lease after the last renewal that reached it."""
    assert record.armed_at is not None
    if record.confirmed:
        left_s = how.lease_s
    else:
        left_s = record.armed_at + how.confirm_timeout_s - time.monotonic()
    moment = datetime.now(timezone.utc) + timedelta(seconds=max(0.0, left_s))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
