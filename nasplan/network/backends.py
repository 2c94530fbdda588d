"""How a host's network change is armed, applied, confirmed and undone: one backend per mechanism.

The generic backend arms a detached ``setsid sh`` timer and changes NICs with ``ip``; macOS and
FreeBSD, which have no setsid(1), detach the same timer with ``daemon -f`` or ``nohup``; a
platform with a commit-confirmed mechanism of its own (TrueNAS ``interface.commit``) names it in
``Platform.network_mechanism(facts)``, and ``BACKENDS`` maps each name to its backend. Commands
and read-back come from the host's ``NetTools`` (``ip -j``, ``ip`` text, ``ifconfig`` or BSD
``ifconfig``, chosen from its facts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nasplan.input.network import NicChange
from nasplan.network import scripts, tools
from nasplan.network.state import NicState
from nasplan.network.tools import NetTools
from nasplan.network.truenas import TrueNasCommit
from nasplan.platforms.base import DETACHED_TIMER, SETSID_TIMER, TRUENAS_INTERFACE_COMMIT

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.platforms import Platform


class NetworkBackend(Protocol):
    """Scripts of one mechanism; exit codes and ``@@nasplan:...@@`` sections as in ``scripts``."""

    @property
    def mechanism(self) -> str:
        """Its name in run.json and the snapshot file, e.g. ``setsid-timer``."""
        ...

    @property
    def net_tools(self) -> NetTools:
        """The commands its scripts read NIC state with (``ip -j``, ``ip`` text, ``ifconfig``)."""
        ...

    @property
    def snapshot_as_root(self) -> bool:
        """True when its snapshot script must run as root (TrueNAS: midclt)."""
        ...

    def snapshot_script(self, nics: Sequence[str]) -> str:
        """Print what the snapshot keeps of these NICs (``parse_snapshot`` reads it)."""
        ...

    def parse_snapshot(self, text: str) -> dict[str, NicState]:
        """The snapshot script's output -> ``{nic: NicState}`` (NICs it could not read left out)."""
        ...

    def arm_and_apply_script(
        self,
        directory: str,
        timeout_s: int,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
    ) -> str:
        """Arm the revert, apply, print ``armed`` and the new state (exit 90/91/92 on failure)."""
        ...

    def confirm_script(self, directory: str) -> str:
        """Disarm; prints ``confirmed``, ``fired`` (the host reverted) or ``missing``."""
        ...

    def restore_script(
        self,
        directory: str,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
        *,
        force: bool,
    ) -> str:
        """Disarm and restore; prints an ``outcome`` section and the state read back."""
        ...


@dataclass(frozen=True)
class SetsidTimer:
    """Any Linux: ``ip`` (or ``ifconfig``) changes; a detached ``setsid sh`` timer restores
    unless confirmed. ``net_tools`` says which commands (BusyBox sh runs the scripts too)."""

    net_tools: NetTools = field(default_factory=NetTools)
    mechanism: str = field(default=SETSID_TIMER, init=False)
    snapshot_as_root: bool = field(default=False, init=False)
    # Detach the timer with setsid, FreeBSD's daemon -f or nohup (False: setsid only, Linux).
    any_detacher: bool = field(default=False, init=False)

    def snapshot_script(self, nics: Sequence[str]) -> str:
        return tools.state_script(nics, self.net_tools)

    def parse_snapshot(self, text: str) -> dict[str, NicState]:
        return tools.parse_state_output(text)

    def arm_and_apply_script(
        self,
        directory: str,
        timeout_s: int,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
    ) -> str:
        return scripts.arm_and_apply_script(
            directory,
            timeout_s,
            tools.restore_argvs(changes, before, self.net_tools),
            tools.apply_argvs(changes, before, self.net_tools),
            [c.nic for c in changes],
            self.net_tools,
            any_detacher=self.any_detacher,
        )

    def confirm_script(self, directory: str) -> str:
        return scripts.confirm_script(directory)

    def restore_script(
        self,
        directory: str,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
        *,
        force: bool,
    ) -> str:
        return scripts.restore_script(
            directory,
            tools.restore_argvs(changes, before, self.net_tools),
            [c.nic for c in changes],
            force=force,
            tools=self.net_tools,
        )


@dataclass(frozen=True)
class DetachedTimer(SetsidTimer):
    """macOS, FreeBSD: the same timer and scripts, detached with setsid, FreeBSD's ``daemon -f``
    or ``nohup`` (the host's first); BSD ``ifconfig`` changes (``net_tools``)."""

    mechanism: str = field(default=DETACHED_TIMER, init=False)
    any_detacher: bool = field(default=True, init=False)


def _truenas_commit(net_tools: NetTools) -> NetworkBackend:
    # SCALE reads back with `ip -j`; CORE and FreeNAS (FreeBSD) with BSD ifconfig.
    return TrueNasCommit(net_tools)


BACKENDS: dict[str, Callable[[NetTools], NetworkBackend]] = {
    SETSID_TIMER: SetsidTimer,
    DETACHED_TIMER: DetachedTimer,
    TRUENAS_INTERFACE_COMMIT: _truenas_commit,
}


def for_platform(platform: Platform | None, facts: HostFacts | None) -> NetworkBackend:
    """The backend the platform declares for this host, with the tools its facts show;
    the generic ``SetsidTimer`` (``ip -j``) without either."""
    if platform is None or facts is None:
        return SetsidTimer()
    return by_mechanism(platform.network_mechanism(facts), tools.from_facts(facts))


def by_mechanism(mechanism: str | None, net_tools: NetTools | None = None) -> NetworkBackend:
    """The backend a mechanism name stands for (a snapshot file's); the generic one when unnamed.

    ``net_tools``: the host's tools (a snapshot's), ``ip -j`` when not given.
    """
    return BACKENDS.get(mechanism or SETSID_TIMER, SetsidTimer)(net_tools or NetTools())
