"""Host personalities: what runs in a lab host's private mount namespace before its sshd starts.

A personality makes a namespace look like a vendor's NAS to nasplan's platform detection, e.g.
by bind-mounting a marker file over ``/etc.defaults/VERSION``. Those mounts happen in the sshd's
own mount namespace (``unshare --mount --propagation private``), so only that sshd and its
sessions see them. Every personality behaves like Debian for now.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Personality(Protocol):
    """What a lab host looks like from inside."""

    @property
    def name(self) -> str:
        """The personality's name, as in the lab file."""
        ...

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """Commands (argv lists) to run inside the host's private mount namespace before sshd.

        ``host_dir`` is the host's state directory (``<state>/hosts/<host>``) for files to mount.
        """
        ...


@dataclass(frozen=True)
class Plain:
    """The control node's own OS as it is: nothing mounted."""

    name: str

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """No commands: the host shows the real /etc."""
        return []


REGISTRY: dict[str, Personality] = {
    "debian": Plain("debian"),
    "qnap": Plain("qnap"),
    "synology": Plain("synology"),
    "truenas": Plain("truenas"),
}


def get(name: str) -> Personality:
    """The personality called ``name``; the lab schema only admits registered names."""
    return REGISTRY[name]
