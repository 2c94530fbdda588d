"""Platforms: how a kind of host gets its tools. One class per platform, an ordered registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasplan.platforms.base import Command, Platform, PlatformError
from nasplan.platforms.debian import Debian
from nasplan.platforms.freebsd import FreeBsd, TrueNasCore
from nasplan.platforms.generic import GenericLinux
from nasplan.platforms.macos import MacOs
from nasplan.platforms.qnap import Qnap
from nasplan.platforms.synology import Synology
from nasplan.platforms.truenas import TrueNas
from nasplan.platforms.windows import Windows
from nasplan.remote import shell

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.remote.runner import Runner

__all__ = [
    "Command",
    "Platform",
    "PlatformError",
    "detect",
    "of",
    "posix_by_hint",
    "registry",
]


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


def posix_by_hint(hint: str) -> bool:
    """Whether a host whose inventory says ``platform: hint`` runs POSIX sh (its facts are
    gathered with sh first); True for ``auto``."""
    return all(platform.posix_shell for platform in registry() if hint in platform.hints)


def of(runner: Runner | None) -> Platform:
    """The platform whose shell layer ``runner`` speaks, as a test's scripts see it: the least
    specific one of that script language (every POSIX platform runs the same scripts: generic
    Linux), Windows for PowerShell. A caller asks it for what differs (``scripts``,
    ``posix_shell``, ``equivalent``) and never branches on the host's name."""
    spoken = shell.of(runner)
    return next(p for p in reversed(registry()) if p.speaks(spoken))
