"""What every platform module shares: install ``Command``s, ``PlatformError``, vendor markers.

The network mechanisms are named here too, so that a platform can declare which one changes
its NICs without importing ``nasplan.network`` (which has one backend per name).
"""

from __future__ import annotations

from dataclasses import dataclass

from nasplan.errors import NasplanError

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
