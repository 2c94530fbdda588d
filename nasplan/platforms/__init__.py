"""Platforms: how a kind of host gets its tools. One class per platform, an ordered registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from nasplan.platforms.base import Command, PlatformError
from nasplan.platforms.debian import Debian
from nasplan.platforms.freebsd import FreeBsd, TrueNasCore
from nasplan.platforms.generic import GenericLinux
from nasplan.platforms.macos import MacOs
from nasplan.platforms.qnap import Qnap
from nasplan.platforms.synology import Synology
from nasplan.platforms.truenas import TrueNas
from nasplan.platforms.windows import Windows

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

__all__ = ["Command", "Platform", "PlatformError", "detect", "registry"]


class Platform(Protocol):
    """One kind of host (Debian, QNAP, ...), recognised from its facts."""

    name: str

    def matches(self, facts: HostFacts) -> bool:
        """True when ``facts`` come from a host of this platform."""
        ...

    def os_name(self, facts: HostFacts) -> str | None:
        """The system as its vendor names it, e.g. ``DSM 7.2.1-69057 Update 5``, ``QTS 5.1.0``."""
        ...

    def tool_path(self, facts: HostFacts, tool: str) -> str | None:
        """Full path of ``tool`` (e.g. ``iperf3``) on this host, or None when it is missing."""
        ...

    def install_commands(self, facts: HostFacts, packages: Sequence[str]) -> list[Command]:
        """Commands that make ``packages`` available; their last output line is each tool's path.

        Raises PlatformError when this platform cannot install them (with what the user should do).
        """
        ...

    def network_mechanism(self, facts: HostFacts) -> str:
        """The network backend that changes this host's NICs, by name (``base.SETSID_TIMER``)."""
        ...

    def network_refusal(self, facts: HostFacts) -> str | None:
        """Why nasplan will not change this host's network (what to do by hand); None: it will."""
        ...


def registry() -> tuple[Platform, ...]:
    """Every platform, most specific first; the first whose ``matches`` is true wins."""
    # Kernels other than Linux first (TrueNAS CORE also has midclt, like SCALE); then vendor
    # markers: TrueNAS SCALE is Debian underneath and must never be taken for it.
    return (
        Windows(),
        MacOs(),
        TrueNasCore(),
        FreeBsd(),
        Qnap(),
        Synology(),
        TrueNas(),
        Debian(),
        GenericLinux(),
    )


def detect(facts: HostFacts) -> Platform:
    """The platform of a host, from its facts (the generic one when nothing else matches)."""
    for platform in registry():
        if platform.matches(facts):
            return platform
    raise AssertionError("GenericLinux matches every host")  # pragma: no cover
