"""The network phase of an apply: snapshot -> arm revert + apply -> verify -> confirm -> restore.

``setup`` makes and checks the declared changes; ``teardown`` (always, in ``finally``) puts every
host back and proves it by reading the state back. Each step is a method of its own so a test
can cut a host off between them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasplan.hosts.session import HostSession
from nasplan.input.network import NetworkSpec
from nasplan.network import checks, restore, scripts
from nasplan.network.checks import fact_errors
from nasplan.run import host_network
from nasplan.run.host_network import (
    RECONNECT_GRACE_S,
    HostNetwork,
    addresses_now,
    describe_changes,
)
from nasplan.run.overlap import Overlap
from nasplan.run.signals import held_back

if TYPE_CHECKING:
    from nasplan.input.inventory import Host
    from nasplan.progress import Progress
    from nasplan.remote.runner import Runner
    from nasplan.tasks import Tasks


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


@dataclass(eq=False)
class NetworkPhase:
    """Declared network changes over the sessions of one run (``keep``: left in place)."""

    spec: NetworkSpec
    sessions: Mapping[str, HostSession]
    run_dir: Path
    progress: Progress
    connector: Callable[[Host], Runner]
    _: KW_ONLY
    keep: bool = False
    inventory_file: str = ""
    known_hosts: str | None = None
    reconnect_grace_s: float = RECONNECT_GRACE_S
    # the host lease: how long a confirmed change outlives nasplan's last renewal there
    lease_s: float = 30.0
    # the hosts are changed, checked and restored at once
    tasks: Tasks = field(default_factory=Overlap.concurrent)
    hosts: dict[str, HostNetwork] = field(init=False)
    checks: list[dict[str, Any]] = field(init=False, default_factory=list)
    warnings: list[str] = field(init=False, default_factory=list)
    error: str | None = field(init=False, default=None)
    torn_down: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        token = secrets.token_hex(4)
        self.hosts = {
            h: HostNetwork(self.spec.changes(h), scripts.revert_dir(token, h))
            for h in self.spec.hosts
        }

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
        self._each(lambda record, session: host_network.snapshot(record, session))
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
        timeout_s, progress = self.spec.confirm_timeout_s, self.progress
        self._each(lambda r, s: host_network.arm_and_apply(r, s, timeout_s, progress))
        for name, record in self.hosts.items():
            if record.error:
                self.fail(f"{name}: {record.error}")
            elif record.status == "changed":
                self.sessions[name].actions.append(
                    "network: " + "; ".join(describe_changes(record.changes, record.before))
                )

    def verify(self) -> None:
        """SSH still answers from here; routes, DF pings and link speeds between the hosts."""
        states = {name: record.applied for name, record in self.hosts.items()}
        peers = host_network.Peers(
            self.spec.links, self.spec.interfaces, states, addresses_now(self.sessions, states)
        )

        def one(record: HostNetwork, session: HostSession) -> None:
            self.checks.extend(host_network.verify(record, session, peers, self.connector))

        self._each(one)
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

    def confirm(self) -> None:
        """Disarm every host's revert: the change stays until ``teardown``."""
        timeout_s = self.spec.confirm_timeout_s
        self._each(lambda record, session: host_network.confirm(record, session, timeout_s))
        for name, record in self.hosts.items():
            if record.error:
                self.fail(f"{name}: {record.error}")

    def teardown(self) -> None:
        """Restore every touched host (unless ``keep`` after a good setup) and verify it; once."""
        if not self.active or self.torn_down:
            return
        self.torn_down = True
        how = host_network.Restoring(
            keep=self.keep and self.ok,
            reconnect_grace_s=self.reconnect_grace_s,
            confirm_timeout_s=self.spec.confirm_timeout_s,
            lease_s=self.lease_s,
            run_dir=str(self.run_dir),
            connector=self.connector,
            progress=self.progress,
        )
        with held_back():
            self._each(lambda record, session: host_network.restore_host(record, session, how))
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

    def _each(self, step: Callable[[HostNetwork, HostSession], None]) -> None:
        """``step`` on every host of the phase at once (a host without a session: skipped)."""

        def one(name: str) -> None:
            session = self.sessions.get(name)
            if session is not None:
                step(self.hosts[name], session)

        self.tasks.each(list(self.hosts), one)

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
