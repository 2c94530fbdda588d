"""The run's network settings, group by group of cells (``Networks``): the first group's made in
the network phase, each next group's in turn (the last one's put back first), and run.json's
``network`` part of them all.

Most plans change no network setting: their runs use ``NoNetworkChanges`` and never import the
network phase's code (a noticeable part of every start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from nasplan.errors import HostLostError
from nasplan.input.network import NetworkSpec
from nasplan.input.plan import Plan
from nasplan.remote.timeouts import Timeouts
from nasplan.run.reach import Reach


class NetworkPart(Protocol):
    """The network phase as the run sees it (``nasplan.run.network_phase.NetworkPhase``)."""

    error: str | None
    warnings: list[str]

    @property
    def active(self) -> bool: ...
    @property
    def ok(self) -> bool: ...
    def setup(self) -> bool: ...
    def fail(self, message: str) -> None: ...
    def teardown(self) -> None: ...
    def to_dict(self) -> dict[str, Any]: ...


class NoNetworkChanges:
    """The network phase of a plan that changes no network setting: nothing to do."""

    active = False

    def __init__(self) -> None:
        self.error: str | None = None
        self.warnings: list[str] = []

    @property
    def ok(self) -> bool:
        return self.error is None

    def setup(self) -> bool:
        return True

    def fail(self, message: str) -> None:
        self.error = message

    def teardown(self) -> None:
        pass

    def to_dict(self) -> dict[str, Any]:
        return {}


def network_phase(
    where: Reach, plan: Plan, keep: bool, timeouts: Timeouts
) -> Callable[[NetworkSpec], NetworkPart]:
    """How the run makes the phase of one group's settings (``keep``: left in place)."""

    def make(spec: NetworkSpec) -> NetworkPart:
        if not spec.active:
            return NoNetworkChanges()
        from nasplan.run.network_phase import NetworkPhase

        return NetworkPhase(
            spec,
            where.sessions,
            where.run_dir,
            where.progress,
            where.connector,
            keep=keep,
            inventory_file=str(plan.inventory.path.resolve()),
            known_hosts=str(plan.known_hosts.resolve()) if plan.known_hosts else None,
            reconnect_grace_s=timeouts.reconnect_grace_s,
            lease_s=timeouts.lease_s,
            tasks=where.tasks,
        )

    return make


class Networks:
    """The network settings of each group of cells in turn; ``make`` builds the phase of one
    group's settings (``NoNetworkChanges`` for none)."""

    def __init__(self, make: Callable[[NetworkSpec], NetworkPart], first: NetworkSpec) -> None:
        self._make = make
        self.phase: NetworkPart = make(first)
        self._before: list[dict[str, Any]] = []  # earlier groups' network parts

    @property
    def ok(self) -> bool:
        return self.phase.ok

    @property
    def error(self) -> str | None:
        return self.phase.error

    @property
    def warnings(self) -> list[str]:
        return self.phase.warnings if self.phase.active else []

    def setup(self) -> None:
        """Make this group's changes (armed to revert) and check them; a host lost on the way
        fails them (every test of the group is then skipped, and the hosts still put back)."""
        try:
            self.phase.setup()
        except HostLostError as exc:
            self.phase.fail(str(exc))

    def switch(self, spec: NetworkSpec) -> None:
        """The next group's settings: this group's put back, those made."""
        self.phase.teardown()
        if self.phase.active:
            self._before.append(self.phase.to_dict())
        self.phase = self._make(spec)
        self.setup()

    def teardown(self) -> None:
        """Put the current group's settings back (a no-op once done)."""
        self.phase.teardown()

    def part(self) -> dict[str, Any] | None:
        """run.json's ``network``: the last group's, with the earlier ones (None: no change)."""
        parts = [*self._before]
        if self.phase.active:
            parts.append(self.phase.to_dict())
        if len(parts) > 1:
            return {**parts[-1], "groups": parts[:-1]}
        return parts[0] if parts else None
