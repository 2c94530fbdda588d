"""The TrueNAS SCALE personality: version files, ``midclt``, iperf3/fio shipped, apt disabled."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nasplan.lab.personalities import vendor

VERSION = "24.04.2"
MANIFEST = json.dumps({"buildtime": 1719330000, "train": "TrueNAS-SCALE-Dragonfish",
                       "version": VERSION}, indent=4) + "\n"  # fmt: skip

# What SCALE's apt, apt-get and dpkg print: package management is disabled on the appliance.
DISABLED = """#!/bin/sh
echo "Package management tools are disabled on TrueNAS appliances." >&2
exit 1
"""

# A Python stand-in for the middleware's client (the real midclt is Python too).
MIDCLT = (
    (Path(__file__).parent / "truenas_midclt.py")
    .read_text(encoding="utf-8")
    .replace('VERSION = "@VERSION@"', f"VERSION = {VERSION!r}")
)


@dataclass(frozen=True)
class TrueNas:
    """TrueNAS SCALE 24.04 (Debian underneath): /etc/version, /data/manifest.json, midclt.

    midclt answers system.version/info and the interface API (update, commit with rollback,
    checkin, rollback, query); its state lives in the host's private overlay.
    """

    name: str = "truenas"

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """Markers and midclt; iperf3 and fio stay in /usr/bin; apt prints SCALE's refusal."""
        lines = vendor.common_inside(hide=())
        lines += vendor.write_file("/etc/version", VERSION)
        lines += vendor.write_file("/data/manifest.json", MANIFEST)
        lines += vendor.write_file("/usr/bin/midclt", MIDCLT, "0755")
        for tool in ("apt", "apt-get", "dpkg"):
            lines += vendor.write_file(f"/usr/bin/{tool}", DISABLED, "0755")
        return vendor.setup(host_dir, lines)

    def exec_prefix(self, host_dir: Path) -> list[str]:
        """sshd runs chrooted in the host's overlay root."""
        return ["chroot", str(vendor.root_dir(host_dir))]
