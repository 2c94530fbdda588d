"""The Synology DSM 7 personality: VERSION/synoinfo markers, synogear, a non-root sudo admin."""

from __future__ import annotations

import secrets
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nasplan.errors import LabError
from nasplan.lab import hostfs
from nasplan.lab.personalities import vendor

ADMIN_USER = "admin"
ADMIN_UID = 1026  # DSM's first administrator account
ADMIN_HOME = "/var/services/homes/admin"
PASSWORD_FILE = "become_password"
PASSWORD_ENV = "NASPLAN_LAB_BECOME_PASSWORD"

VERSION = """majorversion="7"
minorversion="2"
productversion="7.2.1"
buildphase="GM"
buildnumber="69057"
smallfixnumber="5"
"""
SYNOINFO = """company_title="Synology"
unique="synology_geminilake_920+"
upnpmodelname="DS920+"
"""

# synogear as far as nasplan relies on it: root only; install puts the Diagnosis Tool's tools
# under its package directory, which it adds to PATH only in an interactive shell (not here).
SYNOGEAR = r"""#!/bin/sh
pkg=/var/packages/DiagnosisTool
tools=$pkg/target/tool
root_only() {
  [ "$(id -u)" -eq 0 ] && return 0
  echo "synogear: Permission denied, please run it with sudo" >&2; exit 1
}
case "$1" in
  install)
    root_only
    if [ ! -x "$tools/iperf3" ]; then
      mkdir -p "$tools" && cp /usr/lib/nasplan-lab/iperf3 "$tools/iperf3" || exit 1
      echo "DiagnosisTool 4.0.4-4158 installed"
    fi
    echo "Tools are installed and ready to use." ;;
  list)
    [ -d "$tools" ] || { echo "Tools are not installed. Run 'synogear install'." >&2; exit 1; }
    echo "All tools:"; ls "$tools" ;;
  remove) root_only; rm -rf "$pkg"; echo "Tools are removed." ;;
  *) echo "usage: synogear {install|list|remove}" >&2; exit 1 ;;
esac
"""


def _password_hash(password: str) -> str:
    proc = subprocess.run(
        ["openssl", "passwd", "-6", "-stdin"],
        input=password + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise LabError(f"openssl passwd failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


@dataclass(frozen=True)
class Synology:
    """DSM 7.2.1 on a DS920+; the lab inventory logs in as ``ssh_user`` (root or admin);
    ``net_tools``: ``busybox`` / ``busybox-ifconfig`` leave only BusyBox's ip/ifconfig/route."""

    ssh_user: str = "root"
    net_tools: str = "iproute2"
    name: str = "synology"

    def setup_commands(self, host_dir: Path) -> list[list[str]]:
        """Markers, synogear, admin (uid 1026, sudo with a password in ``become_password``)."""
        host_dir.mkdir(parents=True, exist_ok=True)
        password = secrets.token_urlsafe(12)
        password_file = host_dir / PASSWORD_FILE
        password_file.touch(mode=0o600)
        password_file.write_text(password + "\n")
        if self.ssh_user == ADMIN_USER:
            vendor.write_inventory_vars(
                host_dir, {"user": ADMIN_USER, "become_password_env": PASSWORD_ENV}
            )
        q = shlex.quote
        lines = vendor.common_inside()
        lines += ["rm -f /etc/os-release /usr/lib/os-release /usr/bin/apt-get"]
        lines += vendor.net_tools_inside(self.net_tools)
        for path in ("/etc.defaults/VERSION", "/etc/VERSION"):
            lines += vendor.write_file(path, VERSION)
        for path in ("/etc.defaults/synoinfo.conf", "/etc/synoinfo.conf"):
            lines += vendor.write_file(path, SYNOINFO)
        lines += vendor.write_file("/usr/syno/bin/synogear", SYNOGEAR, "0755")
        lines += ["mkdir -p /var/packages"]
        shadow = f"{ADMIN_USER}:{_password_hash(password)}:19700:0:99999:7:::"
        lines += [
            f"echo {q(f'{ADMIN_USER}:x:{ADMIN_UID}:100:System default user:{ADMIN_HOME}:/bin/sh')}"
            " >> /etc/passwd",
            f"echo {q(shadow)} >> /etc/shadow",
            # DSM's administrators group is gid 101; take the next free one if the machine uses it.
            "gid=101; while getent group $gid >/dev/null; do gid=$((gid + 1)); done",
            f'echo "administrators:x:$gid:{ADMIN_USER}" >> /etc/group',
            f"mkdir -p {ADMIN_HOME}",
            f"chown {ADMIN_UID}:100 {ADMIN_HOME}",
        ]
        lines += vendor.write_file(
            "/etc/sudoers.d/synology-administrators", "%administrators ALL=(ALL) ALL\n", "0440"
        )
        # sshd reads authorized_keys as the user logging in: admin gets a copy of the lab's in
        # its own home (sshd_config names ~/.ssh/authorized_keys too). The lab's file stays 0600:
        # the state directory may be bound in as it is on the machine (see lab/hostfs.py).
        keys = hostfs.state_dir_of(host_dir) / "authorized_keys"
        ssh_dir = f"{ADMIN_HOME}/.ssh"
        lines += [
            f"mkdir -p {ssh_dir}",
            f"cp {q(str(keys))} {ssh_dir}/authorized_keys",
            f"chmod 0700 {ssh_dir}",
            f"chmod 0600 {ssh_dir}/authorized_keys",
            f"chown -R {ADMIN_UID}:100 {ssh_dir}",
        ]
        return vendor.setup(host_dir, lines)

    def exec_prefix(self, host_dir: Path) -> list[str]:
        """sshd runs chrooted in the host's overlay root."""
        return ["chroot", str(vendor.root_dir(host_dir))]
