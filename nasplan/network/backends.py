"""How a host's network change is armed, applied, confirmed and undone: one backend per mechanism.

The generic backend arms a detached ``setsid sh`` timer and changes NICs with ``ip``; a platform
with a commit-confirmed mechanism of its own (TrueNAS ``interface.commit``) names it in
``Platform.network_mechanism(facts)``, and ``BACKENDS`` maps each name to its backend.
Snapshot and read-back stay ``ip -j``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from nasplan.network import scripts
from nasplan.network.model import NicChange
from nasplan.network.state import NicState
from nasplan.network.truenas import TrueNasCommit
from nasplan.platforms.base import SETSID_TIMER, TRUENAS_INTERFACE_COMMIT

if TYPE_CHECKING:
    from nasplan.facts import HostFacts
    from nasplan.platforms import Platform


class NetworkBackend(Protocol):
    """Scripts of one mechanism; exit codes and ``@@nasplan:...@@`` sections as in ``scripts``."""

    @property
    def mechanism(self) -> str:
        """Its name in run.json and the snapshot file, e.g. ``setsid-timer``."""
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


class SetsidTimer:
    """Any Linux: ``ip`` changes; a detached ``setsid sh`` timer restores unless confirmed."""

    mechanism = SETSID_TIMER

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
            scripts.restore_argvs(changes, before),
            scripts.apply_argvs(changes, before),
            [c.nic for c in changes],
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
            directory, scripts.restore_argvs(changes, before), [c.nic for c in changes], force=force
        )


BACKENDS: dict[str, Callable[[], NetworkBackend]] = {
    SETSID_TIMER: SetsidTimer,
    TRUENAS_INTERFACE_COMMIT: TrueNasCommit,
}


def for_platform(platform: Platform | None, facts: HostFacts | None) -> NetworkBackend:
    """The backend the platform declares for this host; the generic ``SetsidTimer`` without one."""
    if platform is None or facts is None:
        return SetsidTimer()
    return by_mechanism(platform.network_mechanism(facts))


def by_mechanism(mechanism: str | None) -> NetworkBackend:
    """The backend a mechanism name stands for (a snapshot file's); the generic one when unnamed."""
    return BACKENDS.get(mechanism or SETSID_TIMER, SetsidTimer)()
