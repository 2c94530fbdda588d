"""Host personalities: what runs in a lab host's private mount namespace before its sshd starts.

A vendor personality (qnap, synology, truenas) gives its host a root of its own: an overlay of
the machine's ``/`` whose changes live in a tmpfs of that mount namespace only, entered with
``chroot`` by sshd. There it writes the vendor's marker files, fake vendor commands, hides the
system iperf3 and adds users, so that nasplan sees a QNAP or a Synology over SSH while nothing
changes on the machine itself. ``debian`` shows the machine's own OS as it is.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nasplan.errors import LabError
from nasplan.lab.personalities.vendor import inventory_vars

__all__ = ["NAMES", "Personality", "Plain", "get", "inventory_vars"]


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

    def exec_prefix(self, host_dir: Path) -> list[str]:
        """What sshd's exec is prefixed with (``["chroot", root]``), or ``[]`` for none."""
        ...


@dataclass(frozen=True)
class Plain:
    """The control node's own OS as it is: nothing mounted."""

    name: str

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """No commands: the host shows the real /etc."""
        return []

    def exec_prefix(self, host_dir: Path) -> list[str]:
        """sshd runs in the machine's own root."""
        return []


NAMES = ("debian", "qnap", "synology", "truenas")


def get(name: str, options: Mapping[str, Any] | None = None) -> Personality:
    """The personality called ``name`` with its lab-file options (``personality_options``)."""
    from nasplan.lab.personalities.qnap import Qnap
    from nasplan.lab.personalities.synology import Synology
    from nasplan.lab.personalities.truenas import TrueNas

    opts = dict(options or {})
    net_tools = str(opts.get("net_tools", "iproute2"))
    if net_tools != "iproute2" and shutil.which("busybox") is None:
        raise LabError(f"net_tools: {net_tools} needs busybox here (apt-get install busybox)")
    if name == "qnap":
        return Qnap(entware=bool(opts.get("entware", True)), net_tools=net_tools)
    if name == "synology":
        return Synology(ssh_user=str(opts.get("ssh_user", "root")), net_tools=net_tools)
    if name == "truenas":
        return TrueNas()
    return Plain(name)
