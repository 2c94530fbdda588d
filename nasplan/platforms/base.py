"""What every platform module shares: install ``Command``s, ``PlatformError``, vendor markers.

The network mechanisms are named here too, so that a platform can declare which one changes
its NICs without importing ``nasplan.network`` (which has one backend per name).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasplan.errors import NasplanError

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

# Any Linux: ``ip`` changes, undone by a detached ``setsid sh`` timer unless confirmed.
SETSID_TIMER = "setsid-timer"
# macOS, FreeBSD: ``ifconfig`` changes, undone by an ``sh`` timer detached with setsid, FreeBSD's
# ``daemon -f`` or ``nohup`` (whichever the host has, in that order) unless confirmed.
DETACHED_TIMER = "detached-timer"
# TrueNAS SCALE's middleware: ``interface.update`` + ``interface.commit`` with rollback.
TRUENAS_INTERFACE_COMMIT = "truenas-interface-commit"
# No change by nasplan (Windows): ``Platform.network_refusal`` says what to do.
MANUAL = "manual"


@dataclass(frozen=True)
class Command:
    """A shell script to run on a host; ``sudo`` when it needs root; a line for --check output."""

    script: str
    description: str
    sudo: bool = False


class PlatformError(NasplanError):
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
        f"back (Linux, macOS, FreeBSD, the TrueNAS middleware); on {os_name} set it yourself, e.g. "
        f"`{example}`, and run the plan without its network: section"
    )


def missing_tools(facts: HostFacts, packages: Sequence[str]) -> list[str]:
    """The tools of ``packages`` the host's facts did not find, in the order asked."""
    return [p for p in packages if not facts.tool(p)]


def installer_path(facts: HostFacts, missing: Sequence[str], installer: str, advice: str) -> str:
    """The full path of the package manager ``installer``; without it ``PlatformError``:
    ``<missing> not found and <advice>; nothing was changed on this host``."""
    path = facts.tool(installer)
    if path is None:
        raise PlatformError(
            f"{' '.join(missing)} not found and {advice}; nothing was changed on this host"
        )
    return path


def print_installed_paths(bin_dir: str, tools: Sequence[str]) -> list[str]:
    """Shell lines that print each tool's full path in ``bin_dir`` once it is there: the paths
    nasplan uses from then on (a package manager's directory is often off the SSH PATH)."""
    lines = []
    for tool in tools:
        path = shlex.quote(posixpath.join(bin_dir, tool))
        lines.append(f"[ -x {path} ] && printf '%s\\n' {path}")
    return lines


def ships_with_it(
    facts: HostFacts, packages: Sequence[str], why_not_installed: str
) -> list[Command]:
    """An appliance whose tools come with it: nothing to install, or ``PlatformError`` naming the
    missing tools and ``why_not_installed`` (nasplan never installs packages there)."""
    missing = missing_tools(facts, packages)
    if missing:
        raise PlatformError(f"{' '.join(missing)} not found, though {why_not_installed}")
    return []
