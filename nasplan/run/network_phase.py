"""The network phase of an apply: snapshot -> arm revert + apply -> verify -> confirm -> restore.

``setup`` makes and checks the declared changes; ``teardown`` (always, in ``finally``) puts every
host back and proves it by reading the state back. Each step is a method of its own so a test
can cut a host off between them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nasplan.hosts.session import HostSession
from nasplan.input.network import NetworkSpec, NicChange
from nasplan.network import checks, restore, scripts, tools
from nasplan.network.backends import NetworkBackend, SetsidTimer, for_platform
from nasplan.network.checks import fact_errors
from nasplan.network.state import NicState
from nasplan.network.tools import parse_state_output
from nasplan.run.overlap import Overlap
from nasplan.run.signals import held_back
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.input.inventory import Host
    from nasplan.progress import Progress
    from nasplan.remote.runner import Runner
    from nasplan.tasks import Tasks

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


def network_refusals(sessions: Mapping[str, HostSession], hosts: Iterable[str]) -> list[str]:
    """``host: reason`` for each host whose platform refuses network changes (Windows: no
    revert nasplan can arm and read back there yet)."""
    refusals: list[str] = []
    for name in hosts:
        session = sessions.get(name)
        if session is None or session.platform is None or session.facts is None:
            continue
        reason = session.platform.network_refusal(session.facts)
        if reason:
            refusals.append(f"{name}: {reason}")
    return refusals


class NetworkPhase:
    """Declared network changes over the sessions of one run."""

    def __init__(
        self,
        spec: NetworkSpec,
        sessions: Mapping[str, HostSession],
        run_dir: Path,
        progress: Progress,
        connector: Callable[[Host], Runner],
        *,
        keep: bool = False,
        inventory_file: str = "",
        known_hosts: str | None = None,
        reconnect_grace_s: float = RECONNECT_GRACE_S,
        lease_s: float = 30.0,
        tasks: Tasks | None = None,
    ) -> None:
        self.spec = spec
        # the hosts are changed, checked and restored at once
        self.tasks: Tasks = tasks if tasks is not None else Overlap.concurrent()
        self.sessions = sessions
        self.run_dir = run_dir
        self.progress = progress
        self.connector = connector
        self.keep = keep
        self.inventory_file = inventory_file
        self.known_hosts = known_hosts
        self.reconnect_grace_s = reconnect_grace_s
        # the host lease: how long a confirmed change outlives nasplan's last renewal there
        self.lease_s = lease_s
        token = secrets.token_hex(4)
        self.hosts = {
            h: HostNetwork(spec.changes(h), scripts.revert_dir(token, h)) for h in spec.hosts
        }
        self.checks: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.error: str | None = None
        self.torn_down = False

    @property
    def active(self) -> bool:
        return self.spec.active

    @property
    def ok(self) -> bool:
        return self.error is None

    def fail(self, message: str) -> None:
        """Record that the phase failed (the tests are skipped, teardown still restores)."""
        self.error = f"{self.error}; {message}" if self.error else message
        self.progress.message(f"network: {message}")

    def setup(self) -> bool:
        """Snapshot, arm, apply, verify, confirm; False (``error`` set) when a step failed."""
        if not self.active:
            return True
        for step in (self.snapshot, self.arm_and_apply, self.verify, self.confirm):
            step()
            if not self.ok:
                return False
        return True

    def _runner(self, name: str) -> Runner | None:
        session = self.sessions.get(name)
        return session.runner if session is not None and session.ready else None

    def _refusals(self) -> list[str]:
        """Hosts whose platform cannot change its network safely, each with the platform's why."""
        return network_refusals(self.sessions, self.hosts)

    def snapshot(self) -> None:
        """Check the changes against facts, save every touched NIC's state before any change."""
        not_ready = [h for h in self.hosts if self._runner(h) is None]
        if not_ready:
            self.fail(f"not changing the network: {', '.join(not_ready)} not ready")
            return
        facts = {h: s.facts for h, s in self.sessions.items() if s.facts is not None}
        problems = fact_errors(self.spec, facts) + self._refusals()
        if problems:
            self.fail("; ".join(problems))
            return

        def one(name: str) -> None:
            record, runner = self.hosts[name], self._runner(name)
            assert runner is not None
            session = self.sessions[name]
            if tools.from_facts(session.facts) is None:
                record.error = "neither ip nor ifconfig found: cannot read or change its NICs"
                return
            record.backend = for_platform(session.platform, session.facts)
            backend = record.backend
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

        self.tasks.each(list(self.hosts), one)
        for name, record in self.hosts.items():
            if record.error:
                self.fail(f"{name}: snapshot: {record.error}")
        if self.ok:
            self.save_snapshots()

    def save_snapshots(self) -> Path:
        """``network/snapshots.json``: everything ``nasplan restore RUN_DIR`` needs later."""
        return restore.save_snapshots(
            self.run_dir,
            self.inventory_file,
            self.known_hosts,
            {n: (r.directory, r.changes, r.before) for n, r in self.hosts.items()},
            {n: r.backend.mechanism for n, r in self.hosts.items()},
            {n: r.backend.net_tools for n, r in self.hosts.items()},
        )

    def arm_and_apply(self) -> None:
        """Arm each host's revert timer first, then change it; read the new state back."""

        def one(name: str) -> None:
            record, runner = self.hosts[name], self._runner(name)
            assert runner is not None
            script = record.backend.arm_and_apply_script(
                record.directory, self.spec.confirm_timeout_s, record.changes, record.before
            )
            self.progress.host(
                name,
                f"network: arming a {self.spec.confirm_timeout_s} s revert "
                f"({record.backend.mechanism})",
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
            self._use_applied_facts(name, record)
            if not result.ok:
                record.error = f"change failed (exit {result.exited}): {result.stderr.strip()}"

        self.tasks.each(list(self.hosts), one)
        for name, record in self.hosts.items():
            if record.error:
                self.fail(f"{name}: {record.error}")
            elif record.status == "changed":
                self.sessions[name].actions.append(
                    "network: " + "; ".join(describe_changes(record.changes, record.before))
                )

    def _use_applied_facts(self, name: str, record: HostNetwork) -> None:
        # Tests after the change must see its MTU and addresses (path MTU, target address).
        session = self.sessions[name]
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

    def verify(self) -> None:
        """SSH still answers from here; routes, DF pings and link speeds between the hosts."""
        states = {name: record.applied for name, record in self.hosts.items()}
        neighbours = self._addresses_now(states)

        def one(name: str) -> None:
            record = self.hosts[name]
            session = self.sessions[name]
            detail = self._ssh_answers(session)
            self.checks.append(
                {
                    "check": "ssh",
                    "host": name,
                    "interface": None,
                    "peer": "control node",
                    "ok": detail is None,
                    "detail": detail or "a new SSH connection answers",
                }
            )
            if detail is not None:
                record.lost = True
                return
            mtus = {n: s.mtu_bytes for n, s in record.applied.items()}
            probes = checks.probes(self.spec.links, name, mtus)
            probes += checks.mtu_probes(self.spec.interfaces, name, record.applied, neighbours)
            runner = self._runner(name)
            assert runner is not None
            try:
                net_tools = record.backend.net_tools
                script = checks.verify_script(probes, record.nics, net_tools)
                result = runner.run_script(script, timeout_s=30, sudo=net_tools.ping_needs_root)
            except Exception as exc:  # a lost connection surfaces as paramiko or OS errors
                record.lost = True
                record.error = f"verify: {exc}"
                return
            self.checks.extend(checks.evaluate(name, probes, result.stdout, states))

        self.tasks.each(list(self.hosts), one)
        self.checks.sort(key=lambda c: (c["host"], c["check"], c["interface"] or ""))
        nominal = {
            (name, iface.name): iface.speed_bits_per_second
            for name, session in self.sessions.items()
            for iface in session.host.interfaces.values()
        }
        for link in self.spec.links:
            self.warnings += checks.link_warnings(link, states, nominal)
        failed = [c for c in self.checks if not c["ok"]]
        for check in failed:
            self.fail(f"{check['host']}: {check['check']} check failed: {check['detail']}")

    def _addresses_now(
        self, states: dict[str, dict[str, NicState]]
    ) -> dict[str, dict[str, tuple[str, ...]]]:
        """host -> NIC -> addresses as they are now: the applied state where nasplan changed a
        NIC, else the facts (the peers of an MTU check need not be changed hosts)."""
        found: dict[str, dict[str, tuple[str, ...]]] = {}
        for name, session in self.sessions.items():
            nics = {
                n.name: tuple(n.addresses)
                for n in (session.facts.interfaces if session.facts else ())
            }
            nics.update({nic: state.addresses for nic, state in states.get(name, {}).items()})
            found[name] = nics
        return found

    def _ssh_answers(self, session: HostSession) -> str | None:
        """None when a fresh SSH connection runs ``true``, else why not."""
        try:
            fresh = self.connector(session.host)
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

    def confirm(self) -> None:
        """Disarm every host's revert: the change stays until ``teardown``."""

        def one(name: str) -> None:
            record, runner = self.hosts[name], self._runner(name)
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
                    f"the host's {self.spec.confirm_timeout_s} s revert fired"
                )

        self.tasks.each(list(self.hosts), one)
        for name, record in self.hosts.items():
            if record.error:
                self.fail(f"{name}: {record.error}")

    def teardown(self) -> None:
        """Restore every touched host (unless ``keep`` after a good setup) and verify it; once."""
        if not self.active or self.torn_down:
            return
        self.torn_down = True
        with held_back():
            self.tasks.each(list(self.hosts), self._teardown_host)
            for name, record in self.hosts.items():
                session = self.sessions.get(name)
                if session is not None and record.original_facts is not None:
                    session.facts = record.original_facts
                if record.status in ("failed", "left-to-host"):
                    self.fail(f"{name}: restore: {record.error}")
                elif record.status == "kept":
                    self.progress.message(
                        f"network: {name}: changes kept (--keep); undo with nasplan restore "
                        f"{self.run_dir}"
                    )

    def _teardown_host(self, name: str) -> None:
        record = self.hosts[name]
        session = self.sessions.get(name)
        if not record.touched or session is None:
            record.status = "unchanged" if record.status == "pending" else record.status
            return
        if self.keep and self.ok and record.confirmed:
            record.status = "kept"
            return
        now = time.monotonic()
        record.lost = record.lost or session.lost
        # A host cut off must first have had the time to revert by itself.
        deadline = now + self.reconnect_grace_s
        if record.lost and record.armed_at is not None and not record.confirmed:
            deadline = max(
                deadline, record.armed_at + self.spec.confirm_timeout_s + self.reconnect_grace_s
            )
        self.progress.host(name, "network: restoring")
        outcome = restore.restore_host(
            None if record.lost else session.runner,
            lambda: self.connector(session.host),
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
            record.status, record.revert_by = "left-to-host", self._revert_by(record)
            record.error = (
                f"{outcome.error}; its own armed revert puts it back by {record.revert_by} "
                f"(check with: nasplan restore {self.run_dir})"
            )
        session.actions.append(f"network: {record.status}")
        self.progress.host(name, f"network: {record.status}")

    def _revert_by(self, record: HostNetwork) -> str:
        """When a host nasplan cannot reach puts itself back at the latest (UTC): unconfirmed,
        its timer's end; confirmed, one lease after the last renewal that reached it."""
        assert record.armed_at is not None
        if record.confirmed:
            left_s = self.lease_s
        else:
            left_s = record.armed_at + self.spec.confirm_timeout_s - time.monotonic()
        moment = datetime.now(timezone.utc) + timedelta(seconds=max(0.0, left_s))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def to_dict(self) -> dict[str, Any]:
        """run.json ``network``."""
        return {
            "declared": self.spec.to_dict(),
            "snapshot_file": restore.SNAPSHOT_FILE,
            "kept": any(r.status == "kept" for r in self.hosts.values()),
            "status": "ok" if self.ok else "failed",
            "error": self.error,
            "hosts": {name: record.to_dict() for name, record in sorted(self.hosts.items())},
            "checks": list(self.checks),
            "warnings": list(self.warnings),
        }
