"""A NAS's share mounted on a Linux client for a test, and always unmounted: SMB (the kernel's
``mount -t cifs`` with a 0600 credentials file, else the FUSE client ``smbnetfs`` where the
kernel has no cifs), NFS (``mount -t nfs``, else ONE file of the export through the user-space
bridge) and an iSCSI LUN (``iscsiadm`` login: a block device, no mount; else the LUN through
the bridge). The bridge (``nasplan.nbd_bridge``: libnfs or libiscsi, served as a file by
``nbdfuse``) needs no kernel module and no root: its file is ``MOUNT_POINT/nbd``.

Every mount (and login) is written into the client's host lock before it is made
(``nasplan_register_mount``), so should nasplan die with it in place, whoever cleans the lock
up (the next run, ``nasplan restore``) undoes it before it removes a single file, and never
removes through it (``nasplan.hosts.lock``). ``mounted`` unmounts it on every way out (the test
ends, fails, Ctrl-C). The mount point is ``/tmp/nasplan-mnt-TOKEN``; the password never appears
in argv: it reaches the client on stdin and lives only in a 0600 file of a 0700 directory
(``/tmp/nasplan-mntcfg-TOKEN``) while the mount needs it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources

from nasplan.errors import CannotStart
from nasplan.hosts.lock import PRELUDE
from nasplan.remote.runner import Runner
from nasplan.sections import split_sections

PROTOCOLS = ("smb", "nfs", "iscsi")
SMB, NFS, ISCSI = PROTOCOLS
# how a share is mounted: auto picks the kernel's client where the client has one, else FUSE
HOWS = ("auto", "kernel", "fuse")
ISCSI_PORT = 3260
MOUNT_TIMEOUT_S = 60.0
# the bridge and what it imports for an iSCSI LUN, written to the client's config directory
BRIDGE = resources.files("nasplan").joinpath("nbd_bridge.py").read_text()
ISCSI_RW = resources.files("nasplan.measure.kinds.iscsi").joinpath("iscsi_rw.py").read_text()

# sh helpers of both scripts: nasplan_root CMD: as root (sudo -n when the login user is not);
# nasplan_fail STAGE TEXT: say why and stop.
_HELPERS = r"""
nasplan_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
nasplan_fail() {
  printf '@@nasplan:failed@@\nstage=%s\n' "$1"; printf '%s\n' "$2" >&2
  [ "${made:-}" = 1 ] && nasplan_undo
  exit 3
}
# nasplan_stop_users: stop what works in the mount (a file or its directory there: fio left
# running by a cut-off command would keep it busy, then write on under the bare mount point);
# Linux's /proc, one ls and one awk whatever the number of processes; TERM, then KILL
nasplan_users() {
  ls -l /proc/[0-9]*/fd /proc/[0-9]*/cwd 2>/dev/null | nasplan_m=$mp awk '
    BEGIN { m = ENVIRON["nasplan_m"] }
    /^\/proc\/[0-9]+\/fd:$/ { split($0, a, "/"); pid = a[3]; next }
    / -> / { q = pid; if ($(NF-2) ~ /^\/proc\/[0-9]+\/cwd$/) { split($(NF-2), a, "/"); q = a[3] }
      if ($NF == m || index($NF, m "/") == 1) print q }' | sort -u | grep -vx "$$"
}
nasplan_stop_users() {
  [ -n "$mp" ] && [ -d /proc/self/fd ] || return 0
  for nasplan_sig in TERM TERM KILL; do
    nasplan_pids=$(nasplan_users) || return 0
    [ -n "$nasplan_pids" ] || return 0
    kill -s "$nasplan_sig" $nasplan_pids 2>/dev/null
    sleep 1
  done
}
# a mount that failed half way: whatever of it is there undone, lazily, quietly
nasplan_undo() {
  nasplan_stop_users
  case $how in
    fuse) fusermount3 -u -z "$mp" || fusermount -u -z "$mp" ;;
    kernel) nasplan_root umount -l "$mp" ;;
    iscsi) nasplan_root iscsiadm -m node -T "$share" -p "$portal" --logout ;;
  esac > /dev/null 2>&1
  [ -z "${bpid:-}" ] || kill "$bpid" 2>/dev/null
  { rmdir -- "$mp"; rm -rf -- "$cfg"; } 2> /dev/null
}
"""

# Which client mounts SMB: the kernel's when it has cifs (loaded or a module) and mount.cifs is
# there, else smbnetfs on FUSE.
_PICK_SMB = r"""
if [ "$how" = auto ]; then
  if command -v mount.cifs >/dev/null 2>&1 && { grep -qw cifs /proc/filesystems 2>/dev/null ||
      modinfo cifs >/dev/null 2>&1; }; then how=kernel
  elif command -v smbnetfs >/dev/null 2>&1 && [ -e /dev/fuse ]; then how=fuse
  else nasplan_fail client "no SMB client on this host: the kernel has no cifs (or mount.cifs \
is missing: cifs-utils) and smbnetfs (FUSE) is not installed"
  fi
fi
"""

_MOUNT_SMB_KERNEL = r"""
{ printf 'username=%s\n' "$user"; printf 'password=%s\n' "$password"
  if [ -n "$domain" ]; then printf 'domain=%s\n' "$domain"; fi; } > "$cfg/credentials" ||
  nasplan_fail config "cannot write $cfg/credentials"
opts="credentials=$cfg/credentials,uid=$(id -u),gid=$(id -g)${version:+,vers=$version}"
err=$(nasplan_root mount -t cifs "//$server/$share" "$mp" -o "$opts" 2>&1)
st=$?
rm -f -- "$cfg/credentials"
[ "$st" = 0 ] || nasplan_fail mount "mount -t cifs //$server/$share: $err"
dir=$mp
"""

# smbnetfs shows every server as a directory and its shares below: MP/SERVER/SHARE. Its config
# (with the password) stays while it is mounted: it reads the file again now and then.
_MOUNT_SMB_FUSE = r"""
case $password$user in *'"'*) nasplan_fail config "smbnetfs cannot read a user or password \
holding a double quote" ;; esac
mkdir -m 700 -- "$cfg/.smb" && : > "$cfg/.smb/smb.conf" &&
  printf 'auth "%s/%s" "%s%s" "%s"\n' "$server" "$share" "${domain:+$domain/}" "$user" \
    "$password" > "$cfg/.smb/smbnetfs.conf" || nasplan_fail config "cannot write $cfg/.smb"
# (it stays as a daemon: never holding the script's output, which would wait for it)
HOME=$cfg smbnetfs "$mp" -o "config=$cfg/.smb/smbnetfs.conf,smb_query_browsers=false" \
  < /dev/null > "$cfg/smbnetfs.out" 2>&1 ||
  nasplan_fail mount "smbnetfs: $(cat "$cfg/smbnetfs.out")"
dir=$mp/$server/$share
# smbnetfs logs in on first use: a wrong password or share shows here
ls -- "$dir" >/dev/null 2>"$cfg/ls.err" ||
  nasplan_fail login "//$server/$share through smbnetfs: $(cat "$cfg/ls.err")"
"""

# NFS and iSCSI: the kernel's client where it has one (and root or sudo -n), else the bridge
_PICK_OTHER = r"""
nasplan_bridgeable() {
  command -v nbdfuse >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 && [ -e /dev/fuse ]
}
if [ "$how" = auto ]; then
  auto=1
  if [ "$method" = nfs ]; then module=nfs; else module=iscsi_tcp; fi
  if { [ "$method" = nfs ] || command -v iscsiadm >/dev/null 2>&1; } &&
      { grep -qw "$module" /proc/filesystems 2>/dev/null || [ -d "/sys/module/$module" ] ||
        modinfo "$module" >/dev/null 2>&1; } && nasplan_root true 2>/dev/null; then how=kernel
  elif nasplan_bridgeable; then how=fuse
  else nasplan_fail client "no $method client on this host: the kernel has none ($module), or \
no root, and no nbdfuse (libnbd-bin) and python3 for the user-space bridge"
  fi
fi
"""

# The user-space bridge: nbdfuse serves the bridge's disk as $mp/nbd, the bridge's NBD server
# its --command; the CHAP secret in a 0600 file the bridge removes once read
_MOUNT_BRIDGE = r"""
cat > "$cfg/nbd_bridge.py" <<'NASPLAN_BRIDGE_END'
BRIDGE_TEXT
NASPLAN_BRIDGE_END
if [ "$method" = nfs ]; then
  set -- nfs "$server" "$share" "${path:+/$path}/nasplan-nbd-$token" "$size"
else
  cat > "$cfg/iscsi_rw.py" <<'NASPLAN_BRIDGE_END'
ISCSI_RW_TEXT
NASPLAN_BRIDGE_END
  set -- iscsi "$portal" "$share" "$lun"
  if [ -n "$user" ]; then
    printf '%s\n%s\n' "$user" "$password" > "$cfg/chap" || nasplan_fail config "cannot write $cfg"
    set -- "$@" --chap-file "$cfg/chap"
  fi
fi
# (nbdfuse stays in the foreground: started apart, it writes its PID file once it serves)
# ($cfg/running: removed by the bridge once its file is removed or its session logged out)
: > "$cfg/running" || nasplan_fail config "cannot write $cfg"
( trap '' HUP; exec nbdfuse -P "$cfg/nbdfuse.pid" "$mp" --command python3 \
  "$cfg/nbd_bridge.py" "$@" --running "$cfg/running" ) < /dev/null > "$cfg/bridge.out" 2>&1 &
bpid=$!
nasplan_register "$bpid" "$mp"
nasplan_i=0
until [ -s "$cfg/nbdfuse.pid" ] || ! kill -0 "$bpid" 2>/dev/null || [ "$nasplan_i" -ge 100 ]; do
  sleep 0.2; nasplan_i=$((nasplan_i + 1))
done
dir=$mp/nbd
[ -s "$cfg/nbdfuse.pid" ] && [ -f "$dir" ] || nasplan_fail mount "the user-space bridge: \
$(tail -n 3 "$cfg/bridge.out" | tr '\n' ' ')"
"""

# (with mount: auto, a kernel mount that fails falls back to the bridge, the reason said)
_MOUNT_NFS = r"""
if err=$(nasplan_root mount -t nfs ${version:+-o "vers=$version"} "$server:$share" "$mp" 2>&1)
then dir=$mp
elif [ "${auto:-}" = 1 ] && nasplan_bridgeable; then
  how=fuse kernel_err=$(printf '%s' "$err" | tr '\n' ' ')
  nasplan_register_mount fuse "$mp" || nasplan_fail record "the lock is full"
else nasplan_fail mount "mount -t nfs $server:$share: $err"
fi
"""

# A LUN: discovery, login, then the by-path device udev makes for it.
_LOGIN_ISCSI = r"""
err=$(nasplan_root iscsiadm -m discovery -t sendtargets -p "$portal" 2>&1) ||
  nasplan_fail discovery "iscsiadm discovery on $portal: $err"
# CHAP: written into the node's record by a root shell reading it on stdin (never in argv)
if [ -n "$user" ]; then
  printf '%s\n%s\n' "$user" "$password" | nasplan_root sh -c 'IFS= read -r u; IFS= read -r p
    for f in /etc/iscsi/nodes/"$1"/*/default /var/lib/iscsi/nodes/"$1"/*/default; do
      [ -f "$f" ] || continue; grep -v "^node.session.auth\." "$f" > "$f.new" &&
      printf "node.session.auth.%s = %s\n" authmethod CHAP username "$u" password "$p" \
        >> "$f.new" && mv -- "$f.new" "$f" || exit 1
    done' nasplan-chap "$share" || nasplan_fail login "cannot give iscsiadm the CHAP user"
fi
err=$(nasplan_root iscsiadm -m node -T "$share" -p "$portal" --login 2>&1) ||
  nasplan_fail login "iscsiadm login to $share on $portal: $err"
link="/dev/disk/by-path/ip-$portal-iscsi-$share-lun-$lun"
tries=0
until [ -b "$link" ] || [ "$tries" -ge 20 ]; do sleep 0.5; tries=$((tries + 1)); done
[ -b "$link" ] || nasplan_fail device "logged in, but no $link appeared"
dir=$(readlink -f -- "$link")
# fio runs as the login user: the device is its until the logout removes it
[ "$(id -u)" = 0 ] || nasplan_root chown "$(id -u)" -- "$dir" ||
  nasplan_fail device "cannot hand $dir to the login user"
"""

# (an iSCSI login through the kernel makes $mp too, empty: the watchdog's sign the run is on)
_MOUNT_BODY = r"""
IFS= read -r password || [ -n "$password" ] || password=
umask 077
if [ "$method" = smb ]; then PICK_SMB else PICK_OTHER fi
[ "$method" = iscsi ] && [ "$how" = kernel ] && how=iscsi
if [ "$how" = iscsi ]; then nasplan_register_mount iscsi "$share" "$portal"
else nasplan_register_mount "$how" "$mp"; fi && nasplan_register - - "$mp" "$cfg" ||
  nasplan_fail record "the lock is full"
mkdir -m 700 -- "$cfg" && mkdir -m 700 -- "$mp" || nasplan_fail mkdir "cannot make $mp"
made=1
"""

# The mount's watchdog, as every process nasplan leaves on a host (nasplan.hosts.lock): once the
# run's lease ($1) runs out (nasplan killed or cut off) or its lock is gone, the mount is undone
# lazily, its empty mount point and config (the password) removed; it ends by itself once the
# mount point is gone (unmounted by the run). $2: how it was mounted.
_WATCH = r"""
how=$2 made=1
nasplan_now() { if read -r u _ < /proc/uptime 2>/dev/null; then echo "${u%.*}"; else date +%s; fi; }
while [ -d "$mp" ]; do
  until=$(cat "$1" 2>/dev/null)
  case $until in ''|*[!0-9]*) break ;; esac
  [ "$(nasplan_now)" -ge "$until" ] && break
  sleep 1
done
[ -d "$mp" ] && nasplan_undo
exit 0
"""

# started once mounted, on a host this run holds the lock of; registered (token: the mount
# point) so that the next run's clean-up stops it before it unmounts
_WATCH_START = r"""
if [ -f "$nasplan_lease" ]; then
  ( trap '' HUP; exec sh -c "$watch" nasplan-mount-watch "$nasplan_lease" "$how" ) \
    > /dev/null 2>&1 < /dev/null &
  nasplan_register "$!" "$mp"
fi
"""

# $1: a directory in the share where what this test made (nasplan-*-TOKEN) is removed once
# nothing works there any more (a file fio still held open would not go)
_UNMOUNT = r"""
nasplan_stop_users
# once more a second later: a command cut off as it was being started (a Ctrl-C while its exec
# request was on the way) may open its file there only after the first look
sleep 1
nasplan_stop_users
case ${1:-} in "$mp"/*|"$mp")
  for nasplan_f in "$1"/nasplan-*-"$token"; do
    [ -e "$nasplan_f" ] && rm -rf -- "$nasplan_f"
  done ;;
esac
case $how in
  iscsi) err=$(nasplan_root iscsiadm -m node -T "$share" -p "$portal" --logout 2>&1) ||
    nasplan_fail logout "iscsiadm logout of $share: $err"
    # (the node's record holds the CHAP secret nasplan gave it)
    [ -z "$user" ] || nasplan_root iscsiadm -m node -T "$share" -p "$portal" -o delete \
      > /dev/null 2>&1 ;;
  fuse) err=$( { fusermount3 -u "$mp" || fusermount -u "$mp" ||
      fusermount3 -u -z "$mp" || fusermount -u -z "$mp"; } 2>&1) ||
    nasplan_fail unmount "fusermount -u $mp: $err"
    # the bridge: its NFS file removed, its iSCSI session logged out, once it says it is done
    nasplan_i=0
    while [ -e "$cfg/running" ] && [ "$nasplan_i" -lt 40 ]; do
      sleep 0.5; nasplan_i=$((nasplan_i + 1))
    done ;;
  kernel) err=$(nasplan_root umount -- "$mp" 2>&1 || nasplan_root umount -l -- "$mp" 2>&1) ||
    nasplan_fail unmount "umount $mp: $err" ;;
esac
# nothing is mounted there any more: the mount point is an empty directory of ours
rmdir -- "$mp" 2>/dev/null
rm -rf -- "$cfg"
# the mount's own processes (registered with it: its watchdog, which sees its mount point gone
# within a second, and the bridge's nbdfuse) end with it: waited for by PID (5 s at most), so
# that the run's release does not find them ending and say the run left them behind
nasplan_i=0
while [ ! -d "$mp" ] && [ -f "$nasplan_dir/pids" ] && [ "$nasplan_i" -lt 50 ]; do
  nasplan_left=
  while read -r nasplan_p nasplan_t; do
    case $nasplan_p in ''|*[!0-9]*) continue ;; esac
    [ "$nasplan_t" = "$mp" ] && grep -qF -- "$mp" "/proc/$nasplan_p/cmdline" 2>/dev/null &&
      nasplan_left=1
  done < "$nasplan_dir/pids"
  [ -n "$nasplan_left" ] || break
  sleep 0.1; nasplan_i=$((nasplan_i + 1))
done
printf '@@nasplan:unmounted@@\n'
"""


@dataclass(frozen=True)
class Share:
    """What to mount: ``name`` is the SMB share, the NFS export or the iSCSI target's IQN;
    ``protocol``: smb, nfs or iscsi."""

    protocol: str
    server: str
    name: str
    user: str | None = None
    password: str | None = None
    domain: str | None = None
    version: str | None = None  # SMB's vers= or NFS's vers=
    lun: int = 0
    port: int = ISCSI_PORT
    how: str = "auto"
    path: str = ""  # NFS through the bridge: the directory of the export its file is made in
    size_bytes: int = 0  # and that file's size

    def describe(self) -> str:
        """``SMB //198.18.1.1/data``, ``NFS 198.18.1.1:/data``, ``iSCSI iqn... LUN 0``."""
        return dict(_SHOWN)[self.protocol].format(s=self)


# how each protocol's share is named, and the script that mounts it
_SHOWN = (
    ("smb", "SMB //{s.server}/{s.name}"),
    ("nfs", "NFS {s.server}:{s.name}"),
    ("iscsi", "iSCSI {s.name} LUN {s.lun} on {s.server}:{s.port}"),
)
_MOUNTS = (
    ("smb", 'if [ "$how" = fuse ]; then ' + _MOUNT_SMB_FUSE + "else " + _MOUNT_SMB_KERNEL + "fi\n"),
    (
        "nfs",
        'if [ "$how" = kernel ]; then ' + _MOUNT_NFS + "fi\n"
        'if [ "$how" = fuse ]; then ' + _MOUNT_BRIDGE + "fi\n",
    ),
    ("iscsi", 'if [ "$how" = fuse ]; then ' + _MOUNT_BRIDGE + "else " + _LOGIN_ISCSI + "fi\n"),
)


@dataclass(frozen=True)
class Mounted:
    """A share in place on the client: ``path`` is its directory there (an iSCSI LUN's block
    device); ``how``: kernel, fuse or iscsi."""

    share: Share
    how: str
    mount_point: str
    config_dir: str
    path: str
    kernel_error: str = ""  # why the kernel's mount failed, when auto fell back to the bridge

    @property
    def bridged(self) -> bool:
        """Through the user-space bridge: ``path`` is its one file, one request at a time."""
        return self.how == "fuse" and self.share.protocol != SMB

    @property
    def plain(self) -> bool:
        """A mounted share: ``path`` is its directory (else the bridge's file, a LUN's device)."""
        return self.how != "iscsi" and not self.bridged

    @property
    def new_file(self) -> bool:
        """The bridge's file, new on an NFS export (to be written in full before use)."""
        return self.bridged and self.share.protocol == NFS

    def describe(self) -> str:
        """``SMB //198.18.1.1/data mounted with smbnetfs (FUSE)``."""
        with_ = {
            "kernel": "mounted with the kernel's client",
            "fuse": "mounted with smbnetfs (FUSE)",
            "iscsi": f"logged in with iscsiadm ({self.path})",
        }[self.how]
        if self.bridged:
            library = "libnfs" if self.share.protocol == NFS else "libiscsi"
            with_ = f"through the user-space bridge ({library}, nbdfuse)"
        if self.kernel_error:
            with_ += f" (the kernel's mount failed: {self.kernel_error.strip()[:200]})"
        return f"{self.share.describe()} {with_}"


def _values(share: Share, token: str, how: str) -> str:
    values = {
        "method": share.protocol,
        "how": how,
        "server": share.server,
        "share": share.name,
        "user": share.user or "",
        "domain": share.domain or "",
        "version": share.version or "",
        "lun": share.lun,
        "portal": f"{share.server}:{share.port}",
        "mp": f"/tmp/nasplan-mnt-{token}",
        "cfg": f"/tmp/nasplan-mntcfg-{token}",
        "token": token,
        "path": share.path.strip("/"),
        "size": share.size_bytes,
    }
    return "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in values.items())


def mount_script(share: Share, token: str) -> str:
    """POSIX sh: register, then mount ``share`` (the password on stdin); prints a ``mounted``
    section (how, mount_point, dir), else a ``failed`` one with the stage, why on stderr."""
    if share.protocol not in PROTOCOLS or share.how not in HOWS:
        raise ValueError(f"cannot mount {share.protocol!r} with {share.how!r}")
    # (each ends with a newline)
    body = _MOUNT_BODY.replace("PICK_SMB", _PICK_SMB).replace("PICK_OTHER", _PICK_OTHER)
    mount = dict(_MOUNTS)[share.protocol]
    mount = mount.replace("BRIDGE_TEXT\n", BRIDGE).replace("ISCSI_RW_TEXT\n", ISCSI_RW)
    said = (
        "printf '@@nasplan:mounted@@\\nhow=%s\\nmount_point=%s\\ndir=%s\\nkernel_error=%s\\n' "
        '"$how" "$mp" "$dir" "${kernel_err:-}"\n'
    )
    values = _values(share, token, share.how)
    watch = f"watch={shlex.quote(values + _HELPERS + _WATCH)}\n" + _WATCH_START
    return values + PRELUDE + _HELPERS + body + mount + watch + said


def unmount_script(mounted: Mounted, inside: str = "") -> str:
    """POSIX sh: stop what works in ``mounted``, remove what the test made in its directory
    ``inside`` (``nasplan-*-TOKEN``), undo it and remove its empty mount point and config;
    prints an ``unmounted`` section, else a ``failed`` one, why on stderr."""
    token = mounted.mount_point.rsplit("nasplan-mnt-", 1)[-1] if mounted.mount_point else "-"
    return (
        _values(mounted.share, token, mounted.how)
        + f"set -- {shlex.quote(inside)}\n"
        + PRELUDE
        + _HELPERS
        + _UNMOUNT
    )


def parse_mounted(share: Share, token: str, stdout: str) -> Mounted | None:
    """The ``mounted`` section a mount script printed -> Mounted; None without one."""
    section = split_sections(stdout).get("mounted")
    if section is None:
        return None
    fields = dict(line.split("=", 1) for line in section.splitlines() if "=" in line)
    return Mounted(
        share,
        fields.get("how", ""),
        fields.get("mount_point", ""),
        f"/tmp/nasplan-mntcfg-{token}",
        fields.get("dir", ""),
        fields.get("kernel_error", ""),
    )


def mount(runner: Runner, share: Share, token: str) -> Mounted:
    """Mount ``share`` on the client ``runner`` reaches; CannotStart saying why not."""
    result = runner.run_script(
        mount_script(share, token), stdin=(share.password or "") + "\n", timeout_s=MOUNT_TIMEOUT_S
    )
    found = parse_mounted(share, token, result.stdout) if result.ok else None
    if found is None or not found.path:
        stage = split_sections(result.stdout).get("failed", "").strip().removeprefix("stage=")
        why = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exited}"]
        raise CannotStart(
            f"{runner.name}: cannot mount {share.describe()}"
            + (f" ({stage})" if stage else "")
            + f": {why[0]}"
        )
    return found


def unmount(runner: Runner, mounted: Mounted, inside: str = "") -> str | None:
    """Undo ``mounted`` (``unmount_script``); None when done, else why not (the host's lock
    undoes it later)."""
    try:
        result = runner.run_script(unmount_script(mounted, inside), timeout_s=MOUNT_TIMEOUT_S)
    except Exception as exc:  # the client went away: its lock's next cleanup unmounts it
        return f"{runner.name}: could not unmount {mounted.share.describe()}: {exc}"
    if result.ok and "unmounted" in split_sections(result.stdout):
        return None
    why = (result.stderr.strip().splitlines() or [f"exit {result.exited}"])[-1]
    return f"{runner.name}: could not unmount {mounted.share.describe()}: {why}"


@contextmanager
def mounted(
    runner: Runner, share: Share, token: str, problems: list[str], subdir: str = ""
) -> Iterator[Mounted]:
    """``share`` mounted for the ``with`` block and unmounted on every way out of it, what the
    test made in its ``subdir`` (``nasplan-*-TOKEN``) removed first (an unmount that failed is
    appended to ``problems``)."""
    found = mount(runner, share, token)
    try:
        yield found
    finally:
        inside = "/".join(p for p in (found.path, subdir) if p) if found.plain else ""
        problem = unmount(runner, found, inside)
        if problem:
            problems.append(problem)
