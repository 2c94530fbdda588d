"""TrueNAS SCALE: iperf3 and fio ship with it; its package tools are disabled, never call apt."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasplan.platforms.base import (
    SETSID_TIMER,
    TRUENAS_INTERFACE_COMMIT,
    Command,
    PlatformBase,
    not_shipped,
)

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

MARKERS = ("/data/manifest.json", "/etc/truenas_version")
NO_INSTALL = (
    "TrueNAS SCALE ships iperf3 and fio; nasplan never installs packages on TrueNAS (apt is "
    "disabled there and would break the appliance): check the host, or measure from another host"
)


class TrueNas(PlatformBase):
    """TrueNAS SCALE (Debian-based), recognised by its manifest/version file or ``midclt``."""

    name = "truenas"

    def matches(self, facts: HostFacts) -> bool:
        return any(path in facts.markers for path in MARKERS) or facts.tool("midclt") is not None

    def os_name(self, facts: HostFacts) -> str | None:
        version = facts.markers.get("/etc/version", "").strip()
        return f"TrueNAS SCALE {version}" if version else "TrueNAS SCALE"

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        raise not_shipped(missing, NO_INSTALL)

    def network_mechanism(self, facts: HostFacts) -> str:
        """The middleware's own commit-confirmed change when ``midclt`` is there, else ``ip``."""
        return TRUENAS_INTERFACE_COMMIT if facts.tool("midclt") else SETSID_TIMER

    def drop_cache(self, facts: HostFacts, path: str | None) -> Command | str:
        """ZFS's ARC is not the page cache: nothing evicts one file from it."""
        return (
            "TrueNAS keeps files in ZFS's ARC, which no command empties for one file (only "
            "exporting the pool would, taking it offline): the cold read was not measured"
        )
