"""QNAP QTS: tools from Entware's ``opkg`` under ``/opt/bin``, which SSH sessions leave off PATH."""

from __future__ import annotations

import posixpath
import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import (
    Command,
    PlatformBase,
    installer_path,
    marker_values,
    print_installed_paths,
)

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

ULINUX_CONF = "/etc/config/uLinux.conf"
GETCFG_VERSION = "getcfg System Version"
ENTWARE_HOWTO = "https://qnapclub.eu/en/howto/1"
NO_OPKG = (
    f"Entware's opkg is not installed (no /opt/bin/opkg). In App Center add the qnapclub "
    f"repository ({ENTWARE_HOWTO}), install Entware-std, then run nasplan again"
)


class Qnap(PlatformBase):
    """QNAP QTS / QuTS hero, recognised by ``/etc/config/uLinux.conf`` or ``getcfg``."""

    name = "qnap"

    def matches(self, facts: HostFacts) -> bool:
        return ULINUX_CONF in facts.markers or GETCFG_VERSION in facts.markers

    def os_name(self, facts: HostFacts) -> str | None:
        system = marker_values(facts.markers.get(ULINUX_CONF, ""))
        version = system.get("Version") or facts.markers.get(GETCFG_VERSION, "").strip()
        if not version:
            return None
        build = system.get("Build Number")
        return f"QTS {version}" + (f" build {build}" if build else "")

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        opkg = installer_path(facts, missing, "opkg", NO_OPKG)
        bin_dir = posixpath.dirname(opkg)
        install = shlex.join([opkg, "install", *missing])
        update = shlex.join([opkg, "update"])
        # A fresh Entware has no package lists yet: update only when the install cannot proceed.
        lines = ["set -e", f"{install} >/dev/null 2>&1 || {{ {update} >/dev/null && {install}; }}"]
        lines += print_installed_paths(bin_dir, missing)
        return [Command("\n".join(lines), f"opkg install {' '.join(missing)}", sudo=True)]
