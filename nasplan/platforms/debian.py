"""Debian and Ubuntu: tools from apt, installed non-interactively and only when missing."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import Command, PlatformBase

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

# iperf3's package asks whether to start a system-wide daemon; answer "no" before installing.
_DEBCONF = {"iperf3": "iperf3 iperf3/start_daemon boolean false"}
# Tools whose Debian package has another name; the others come in a package of their own name.
PACKAGES = {"nfs-cp": "libnfs-utils", "ping": "iputils-ping"}


class Debian(PlatformBase):
    """Debian, Ubuntu and their derivatives (ID or ID_LIKE in /etc/os-release)."""

    name = "debian"
    aliases = frozenset({"ubuntu"})

    def matches(self, facts: HostFacts) -> bool:
        ids = {facts.os_id or "", *(facts.os_like or "").split()}
        return bool(ids & {"debian", "ubuntu"})

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        preseed = "\n".join(_DEBCONF[p] for p in missing if p in _DEBCONF)
        names = sorted({PACKAGES.get(p, p) for p in missing})
        install = shlex.join(["apt-get", "install", "-y", "-q", "--no-install-recommends", *names])
        lines = ["set -e", "export DEBIAN_FRONTEND=noninteractive"]
        if preseed:
            lines.append(f"printf '%s\\n' {shlex.quote(preseed)} | debconf-set-selections")
        # A fresh host may have no package lists yet: update only when the install cannot proceed.
        retry = f"{{ apt-get update -q >/dev/null && {install} >/dev/null; }}"
        lines.append(f"{install} >/dev/null 2>&1 || {retry}")
        lines.extend(f"command -v {shlex.quote(p)}" for p in missing)
        return [Command("\n".join(lines), f"apt-get install {' '.join(names)}", sudo=True)]
