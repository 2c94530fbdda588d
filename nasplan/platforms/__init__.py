"""Platforms: how a kind of host gets its tools. One class per platform, an ordered registry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nasplan.facts import HostFacts


@dataclass(frozen=True)
class Command:
    """A shell script to run on a host; ``sudo`` when it needs root; a line for --check output."""

    script: str
    description: str
    sudo: bool = False


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


class PlatformError(Exception):
    """A platform cannot do what was asked; the message tells the user what to do instead."""


def marker_values(text: str, separator: str = "=") -> dict[str, str]:
    """``key="value"`` / ``Key = value`` lines of a vendor file -> dict (quotes stripped)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(separator)
        if sep and key.strip() and not key.lstrip().startswith(("#", "[")):
            values[key.strip()] = value.strip().strip('"')
    return values


def manual_network_refusal(os_name: str, example: str) -> str:
    """The refusal of a platform nasplan cannot change the network of, with what to do instead."""
    return (
        f"nasplan changes MTU and addresses only where it can arm a revert and read the state "
        f"back (Linux ip, the TrueNAS SCALE middleware); on {os_name} set it yourself, e.g. "
        f"`{example}`, and run the plan without its network: section"
    )


def registry() -> tuple[Platform, ...]:
    """Every platform, most specific first; the first whose ``matches`` is true wins."""
    from nasplan.platforms.debian import Debian
    from nasplan.platforms.freebsd import FreeBsd, TrueNasCore
    from nasplan.platforms.generic import GenericLinux
    from nasplan.platforms.macos import MacOs
    from nasplan.platforms.qnap import Qnap
    from nasplan.platforms.synology import Synology
    from nasplan.platforms.truenas import TrueNas
    from nasplan.platforms.windows import Windows

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
