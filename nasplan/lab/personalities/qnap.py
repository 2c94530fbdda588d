"""The QNAP QTS personality: uLinux.conf, getcfg, Entware's opkg under /opt/bin (off PATH)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nasplan.lab.personalities import vendor

ULINUX_CONF = """[System]
Model = TS-253D
Version = 5.1.0
Build Number = 20230822
"""

# getcfg SECTION KEY [-f FILE] [-d DEFAULT]: a key of an INI file, uLinux.conf by default.
GETCFG = r"""#!/bin/sh
section=$1; key=$2; shift 2 || exit 1
file=/etc/config/uLinux.conf; default=
while [ $# -gt 0 ]; do
  case "$1" in -f) file=$2; shift 2 ;; -d) default=$2; shift 2 ;; *) shift ;; esac
done
value=$(awk -v s="$section" -v k="$key" '
  /^\[/ { here = (tolower($0) == tolower("[" s "]")); next }
  here && index($0, "=") {
    name = substr($0, 1, index($0, "=") - 1); gsub(/^[ \t]+|[ \t]+$/, "", name)
    if (tolower(name) == tolower(k)) {
      v = substr($0, index($0, "=") + 1); gsub(/^[ \t]+|[ \t]+$/, "", v); print v; exit
    }
  }' "$file" 2>/dev/null)
if [ -n "$value" ]; then printf '%s\n' "$value"
elif [ -n "$default" ]; then printf '%s\n' "$default"; fi
"""

# Entware's opkg as far as nasplan relies on it: install needs package lists (opkg update) first.
OPKG = r"""#!/bin/sh
lists=/opt/var/opkg-lists
status=/opt/lib/opkg/installed
real=/usr/lib/nasplan-lab
version() { "$real/iperf3" --version 2>/dev/null | awk 'NR == 1 { print $2 "-1" }'; }
case "$1" in
  update)
    mkdir -p "$lists" || exit 255
    echo "Downloading http://bin.entware.net/x64-k3.2/Packages.gz"
    touch "$lists/entware" && echo "Updated list of available packages in $lists/entware" ;;
  install)
    shift
    for p in "$@"; do
      if grep -qx "$p" "$status" 2>/dev/null; then
        echo "Package $p ($(version)) installed in root is up to date."; continue
      fi
      if [ ! -e "$lists/entware" ] || [ ! -x "$real/$p" ]; then
        echo "Unknown package '$p'." >&2
        echo "Collected errors:" >&2
        echo " * opkg_install_cmd: Cannot install package $p." >&2
        exit 255
      fi
      echo "Installing $p ($(version)) to root..."
      cp "$real/$p" "/opt/bin/$p" && chmod 0755 "/opt/bin/$p" && echo "$p" >> "$status" || exit 255
      echo "Configuring $p."
    done ;;
  list-installed)
    [ -f "$status" ] || exit 0
    while read -r p; do echo "$p - $(version)"; done < "$status" ;;
  *) echo "usage: opkg [update | install PKG... | list-installed]" >&2; exit 1 ;;
esac
"""


@dataclass(frozen=True)
class Qnap:
    """QTS 5.1 on a TS-253D; ``entware=False``: no /opt/bin/opkg (Entware not installed);
    ``net_tools``: ``busybox`` / ``busybox-ifconfig`` leave only BusyBox's ip/ifconfig/route."""

    entware: bool = True
    net_tools: str = "iproute2"
    name: str = "qnap"

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """Markers, getcfg, Entware (when enabled) under a tmpfs /opt; no os-release, no apt."""
        lines = vendor.common_inside()
        lines += ["rm -f /etc/os-release /usr/lib/os-release /usr/bin/apt-get"]
        lines += vendor.net_tools_inside(self.net_tools)
        lines += vendor.write_file("/etc/config/uLinux.conf", ULINUX_CONF)
        lines += vendor.write_file("/sbin/getcfg", GETCFG, "0755")
        # QTS's /opt is Entware's own tree; the machine's /opt is not part of the NAS.
        lines += ["mount -t tmpfs -o mode=0755 entware /opt"]
        if self.entware:
            lines += ["mkdir -p /opt/bin /opt/lib/opkg /opt/etc"]
            lines += vendor.write_file("/opt/bin/opkg", OPKG, "0755")
        return vendor.setup(host_dir, lines)

    def exec_prefix(self, host_dir: Path) -> list[str]:
        """sshd runs chrooted in the host's overlay root."""
        return ["chroot", str(vendor.root_dir(host_dir))]
