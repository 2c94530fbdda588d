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

MIDCLT = r"""#!/bin/sh
[ "$(id -u)" -eq 0 ] || { echo "Not authenticated" >&2; exit 1; }
case "$1 $2" in
  "call system.version") echo '"TrueNAS-SCALE-@VERSION@"' ;;
  "call system.info")
    printf '{"version": "TrueNAS-SCALE-@VERSION@", "hostname": "%s", ' "$(hostname)"
    printf '"physmem": %s, "cores": %s}\n' \
      "$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)" "$(nproc)" ;;
  *) echo "[ENOMETHOD] Method does not exist" >&2; exit 1 ;;
esac
""".replace("@VERSION@", VERSION)


@dataclass(frozen=True)
class TrueNas:
    """TrueNAS SCALE 24.04 (Debian underneath): /etc/version, /data/manifest.json, midclt."""

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
