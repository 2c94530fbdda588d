"""FreeBSD, and TrueNAS CORE / FreeNAS on it: iperf3 ships with the appliance, never ``pkg``."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import (
    DETACHED_TIMER,
    TRUENAS_INTERFACE_COMMIT,
    Command,
    PlatformBase,
    installer_path,
    not_shipped,
)

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

VERSION_FILE = "/etc/version"
NO_INSTALL = (
    "TrueNAS CORE ships iperf3 in /usr/local/bin; nasplan never runs pkg on the appliance (an "
    "update would undo it, and it can break the middleware): check the host, or measure from "
    "another"
)


def _is_freebsd(facts: HostFacts) -> bool:
    return facts.kernel_name == "FreeBSD"


class FreeBsd(PlatformBase):
    """Plain FreeBSD: tools from ``pkg`` when missing."""

    name = "freebsd"

    def matches(self, facts: HostFacts) -> bool:
        return _is_freebsd(facts)

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        installer_path(facts, missing, "pkg", "pkg is not available")
        install = shlex.join(["env", "ASSUME_ALWAYS_YES=yes", "pkg", "install", "-y", *missing])
        lines = ["set -e", f"{install} >/dev/null"]
        lines.extend(f"command -v {shlex.quote(p)}" for p in missing)
        return [Command("\n".join(lines), f"pkg install {' '.join(missing)}", sudo=True)]

    def network_mechanism(self, facts: HostFacts) -> str:
        """``ifconfig`` changes (gone at reboot) under a revert timer detached with daemon -f."""
        return DETACHED_TIMER

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """FreeBSD has no command that drops its buffer cache or ZFS's ARC."""
        return (
            "FreeBSD has no command that drops its buffer cache or ZFS's ARC for a file: the "
            "cold read was not measured"
        )


class TrueNasCore(FreeBsd):
    """TrueNAS CORE and FreeNAS: FreeBSD with the TrueNAS middleware (``midclt``); no cache
    to drop either."""

    name = "truenas-core"

    def matches(self, facts: HostFacts) -> bool:
        version = facts.markers.get(VERSION_FILE, "")
        appliance = version.startswith(("TrueNAS", "FreeNAS")) or facts.tool("midclt") is not None
        return _is_freebsd(facts) and appliance

    def os_name(self, facts: HostFacts) -> str | None:
        # /etc/version reads e.g. "TrueNAS-13.0-U6.1 (hash)": keep the name and version.
        version = facts.markers.get(VERSION_FILE, "").strip().split(" (")[0]
        if version:
            return version.replace("-", " ", 1)
        return f"TrueNAS CORE ({facts.os_pretty})" if facts.os_pretty else "TrueNAS CORE"

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        raise not_shipped(missing, NO_INSTALL)

    def network_mechanism(self, facts: HostFacts) -> str:
        """The middleware's own commit with rollback (``interface.commit``), read back with BSD
        ifconfig: its network belongs to the middleware, which would undo an ifconfig change."""
        return TRUENAS_INTERFACE_COMMIT
