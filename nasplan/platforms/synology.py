"""Synology DSM 7: iperf3 from the Diagnosis Tool package, installed by ``synogear`` as root."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import (
    Command,
    PlatformBase,
    PlatformError,
    marker_values,
    print_installed_paths,
)

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

VERSION_FILE = "/etc.defaults/VERSION"
SYNOINFO_FILES = ("/etc.defaults/synoinfo.conf", "/etc/synoinfo.conf")
TOOL_DIR = "/var/packages/DiagnosisTool/target/tool"
# What the Diagnosis Tool package brings that nasplan uses.
SYNOGEAR_TOOLS = frozenset({"iperf3"})


class Synology(PlatformBase):
    """Synology DSM, recognised by ``/etc.defaults/VERSION`` or ``synoinfo.conf``."""

    name = "synology"

    def matches(self, facts: HostFacts) -> bool:
        return any(path in facts.markers for path in (VERSION_FILE, *SYNOINFO_FILES))

    def os_name(self, facts: HostFacts) -> str | None:
        version = marker_values(facts.markers.get(VERSION_FILE, ""))
        product = version.get("productversion")
        if not product:
            return None
        build, fix = version.get("buildnumber"), version.get("smallfixnumber")
        text = f"DSM {product}" + (f"-{build}" if build else "")
        return text + (f" Update {fix}" if fix and fix != "0" else "")

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        # Checked on every run: the Diagnosis Tool can be removed (synogear remove, DSM update).
        unknown = [p for p in missing if p not in SYNOGEAR_TOOLS]
        if unknown:
            raise PlatformError(
                f"{' '.join(unknown)} not found and not part of Synology's Diagnosis Tool; "
                f"install it by hand (e.g. from SynoCommunity) and run nasplan again"
            )
        synogear = facts.tool("synogear")
        if synogear is None:
            raise PlatformError(
                f"{' '.join(missing)} not found and synogear is missing (DSM 7 ships it); "
                f"install the Diagnosis Tool package and run nasplan again"
            )
        # synogear is written for interactive shells: no terminal, no input, only its effect.
        lines = ["set -e", f"{shlex.join([synogear, 'install'])} </dev/null >/dev/null 2>&1"]
        lines += print_installed_paths(TOOL_DIR, missing)
        return [Command("\n".join(lines), f"synogear install ({' '.join(missing)})", sudo=True)]
