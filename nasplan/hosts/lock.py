"""One run at a time per host: the shell side of a lock directory on the host with its owner, a
lease, and a list of what the run started there (PIDs, temp files) so that whoever finds it stale
can clean up (taking and renewing it for a run's sessions: ``nasplan.run.leases``).

The lock is ``/tmp/nasplan-<hostname>.lock/`` (the host's own ``uname -n``; a lab host has a /tmp
of its own, as a real host does). ``lease`` holds the host clock (``/proc/uptime`` seconds, else
``date +%s``) until which the run counts as alive; nasplan renews it every few seconds. Processes
nasplan starts on the host read the same lease and stop by themselves once it has run out, so a
killed or cut-off nasplan leaves nothing running for longer than one lease.
"""

from __future__ import annotations

import getpass
import os
import shlex
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nasplan.sections import split_sections

EXIT_BUSY = 75
# the lock could not be written (a full /tmp): its section ``unwritable`` says why
EXIT_UNWRITABLE = 76

# Shell text that sets nasplan_dir, nasplan_lease and the helpers every start script uses, with
# as few processes as the shell allows (each one is dear on a NAS's slow CPU, and the prelude
# runs with every script that starts something).
# The host name is `uname -n`, put through tr only when it holds a character a file name must not.
# nasplan_clock: sets nasplan_now_s to the host clock in whole seconds (no subshell).
# nasplan_owns FILE: FILE has the line run_id=$run_id (grep -qxF, with the shell's own read).
# nasplan_register PID TOKEN [FILE...]: what a stale lock's finder kills (PID, only while its
# command line still holds TOKEN; ``-``: none) and removes (FILEs: absolute paths whose last
# part starts with nasplan-: a temp dir, a disk test's nasplan-fio-* directory, a transfer's copy
# on the NAS's volume), written BEFORE what it names is made; status 1 (said on stderr) when
# the lock cannot hold the line: the caller makes nothing then.
# nasplan_register_mount KIND WHAT [EXTRA]: a mount (or an iSCSI login) a stale lock's finder
# undoes before it removes any file: ``fuse PATH``, ``kernel PATH``, ``iscsi IQN PORTAL``;
# written BEFORE the mount is made, status 1 as nasplan_register's.
PRELUDE = r"""
nasplan_dir=$(uname -n 2>/dev/null)
case $nasplan_dir in *[!A-Za-z0-9_.-]*)
  nasplan_dir=$(printf '%s\n' "$nasplan_dir" | tr -c 'A-Za-z0-9_.\n-' '_') ;;
esac
nasplan_dir="/tmp/nasplan-$nasplan_dir.lock"
nasplan_lease="$nasplan_dir/lease"
nasplan_clock() {
  if read -r nasplan_now_s _ 2>/dev/null < /proc/uptime; then nasplan_now_s=${nasplan_now_s%.*}
  else nasplan_now_s=$(date +%s); fi
}
nasplan_owns() {
  [ -f "$1" ] || return 1
  while IFS= read -r nasplan_l || [ -n "$nasplan_l" ]; do
    [ "$nasplan_l" = "run_id=$run_id" ] && return 0
  done < "$1"
  return 1
}
nasplan_register() {
  [ -d "$nasplan_dir" ] || return 0
  nasplan_p=$1; nasplan_t=$2; shift 2
  if [ "$nasplan_p" != - ]; then
    # (a process is started before its PID is known: it stops by itself with the lease)
    echo "$nasplan_p $nasplan_t" >> "$nasplan_dir/pids" || nasplan_unrecorded "$nasplan_p"
  fi
  for nasplan_f in "$@"; do
    echo "$nasplan_f" >> "$nasplan_dir/files" || nasplan_unrecorded "$nasplan_f" || return 1
  done
}
nasplan_register_mount() {
  [ -d "$nasplan_dir" ] || return 0
  echo "$*" >> "$nasplan_dir/mounts" || nasplan_unrecorded "$*"
}
nasplan_unrecorded() {
  echo "nasplan: cannot record $1 in the host's lock $nasplan_dir (/tmp full?)" >&2
  return 1
}
"""

# Kill the PIDs a run registered (only while their command line still names its token: a
# reused PID is someone else's), undo its mounts, then remove its files; print what was undone.
# A file is never removed through a mount: a share mounted inside a listed directory is the
# NAS's own data, so a path with a mount at or under it is kept ("kept PATH ..."), never
# rm -rf'd. Mounts are read from /proc/self/mountinfo (Linux, BusyBox), else from `mount`'s
# "DEV on PATH ..." lines (macOS, FreeBSD).
# nasplan_cmdline PID: /proc where there is one (Linux, BusyBox); macOS and FreeBSD have none,
# so `ps -o args=` (POSIX); -ww: never cut to a terminal's or $COLUMNS' width (procps cuts at
# $COLUMNS; BSD ps at the window width). Prints nothing for a PID that is gone.
# nasplan_proc, nasplan_mountinfo: where /proc and the mount table are (a test points them
# elsewhere to take the ps path or to show a mount).
# nasplan_mount_in PATH [at]: status 0 when a mount is at PATH or under it (with ``at``: at PATH
# itself), 1 when none is.
_CLEANUP = r"""
nasplan_proc=/proc
nasplan_mountinfo=/proc/self/mountinfo
nasplan_cmdline() {
  if [ -r "$nasplan_proc/$1/cmdline" ]; then tr '\000' ' ' < "$nasplan_proc/$1/cmdline"
  else ps -ww -o args= -p "$1" 2>/dev/null; fi
}
nasplan_mount_in() {
  if [ -r "$nasplan_mountinfo" ]; then
    # mountinfo's 5th field is the mount point, with space, tab, newline and \ as octal escapes
    nasplan_m=$(printf '%s\n' "$1" | sed 's/\\/\\134/g; s/ /\\040/g; s/	/\\011/g')
    nasplan_m=$nasplan_m nasplan_at=${2:-} awk 'BEGIN { p = ENVIRON["nasplan_m"] }
      $5 == p || (ENVIRON["nasplan_at"] == "" && index($5, p "/") == 1) { found = 1 }
      END { exit !found }' "$nasplan_mountinfo"
  else
    mount 2>/dev/null | nasplan_m=$1 nasplan_at=${2:-} awk 'BEGIN { p = ENVIRON["nasplan_m"] }
      index($0, " on " p " ") || (ENVIRON["nasplan_at"] == "" && index($0, " on " p "/")) {
        found = 1 }
      END { exit !found }'
  fi
}
nasplan_listable() {
  case $1 in /*) ;; *) return 1 ;; esac
  case $1 in */../*|*/..|*/./*) return 1 ;; esac
  case ${1##*/} in nasplan-?*) return 0 ;; esac
  return 1
}
nasplan_as_root() { "$@" 2>/dev/null || sudo -n "$@" 2>/dev/null; }
nasplan_cleanup() {
  if [ -f "$1/pids" ]; then
    while read -r pid token; do
      case $pid in ''|*[!0-9]*) continue ;; esac
      [ -n "$token" ] || continue
      kill -0 "$pid" 2>/dev/null || continue  # gone (most are, by the end of a run)
      if nasplan_cmdline "$pid" | grep -qF -- "$token"; then
        kill "$pid" 2>/dev/null && echo "process $pid ($token)"
      fi
    done < "$1/pids"
  fi
  [ -f "$1/mounts" ] && nasplan_unmount_listed < "$1/mounts"
  [ -f "$1/files" ] && nasplan_remove_listed < "$1/files"
  return 0
}
# Undo each listed mount still in place; a FUSE one (its daemon may be gone: "transport endpoint
# is not connected") and a busy one are detached lazily (-z, -l): off the tree at once.
nasplan_unmount_listed() {
  while read -r kind what extra; do
    case $kind in
      iscsi) [ -n "$what" ] && [ -n "$extra" ] || continue
        nasplan_as_root iscsiadm -m node -T "$what" -p "$extra" --logout >/dev/null &&
          echo "iscsi $what ($extra)"
        continue ;;
      fuse|kernel) nasplan_listable "$what" || continue ;;
      *) continue ;;
    esac
    nasplan_mount_in "$what" at || continue
    if [ "$kind" = fuse ]; then
      { fusermount3 -u -z "$what" || fusermount -u -z "$what" || nasplan_as_root umount -l "$what"
      } >/dev/null 2>&1
    else
      { nasplan_as_root umount "$what" || nasplan_as_root umount -l "$what" ||
        nasplan_as_root umount -f "$what"; } >/dev/null 2>&1
    fi
    if nasplan_mount_in "$what" at; then echo "kept mount $what (it would not unmount)"
    else echo "mount $what"; fi
  done
}
nasplan_remove_listed() {
  while read -r f; do
    nasplan_listable "$f" || continue
    [ -e "$f" ] || [ -L "$f" ] || continue
    if nasplan_mount_in "$f"; then echo "kept $f (a mount is in it)"; continue; fi
    # (what an NFS server wrote may be root's: sudo when the login user may not)
    { rm -rf -- "$f" 2>/dev/null || sudo -n rm -rf -- "$f" 2>/dev/null; } && echo "file $f"
  done
}
"""

_LISTED_END = "NASPLAN_LISTED_END"

# The lock is made whole beside its place (owner and lease in nasplan-HOST.lock.PID.new) and
# renamed into place: a lock without a readable owner is none (stale by construction: left by
# an older nasplan, or half removed), and a /tmp that cannot hold the two lines is said (exit 76,
# the shell's error and df's free KiB). mv of a directory onto one that exists moves it inside:
# then the lock was someone else's, and the move is undone.
# nasplan_take: rename the new lock into place; 0 when this run holds the lock.
_ACQUIRE = r"""
nasplan_clock; now=$nasplan_now_s
nasplan_new="$nasplan_dir.$$.new"
nasplan_make() {
  rm -rf "$nasplan_new"
  nasplan_err=$( { mkdir -m 755 "$nasplan_new" &&
      printf '%s\nstarted_clock=%s\n' "$owner" "$now" > "$nasplan_new/owner" &&
      echo $((now + lease_s)) > "$nasplan_new/lease"; } 2>&1 ) &&
    nasplan_owns "$nasplan_new/owner" && [ -s "$nasplan_new/lease" ]
}
nasplan_unwritable() {
  rm -rf "$nasplan_new"
  set -- $(df -Pk /tmp 2>/dev/null | tail -n 1)
  printf '@@nasplan:unwritable@@\nerror=%s\nfree_kib=%s\n' \
    "$(printf '%s' "$nasplan_err" | tr '\n' ' ')" "${4:-}"
  exit 76
}
nasplan_busy() { rm -rf "$nasplan_new"; exit 75; }
nasplan_take() {
  [ -d "$nasplan_new" ] || nasplan_make || nasplan_unwritable
  [ -e "$nasplan_dir" ] && return 1
  mv -- "$nasplan_new" "$nasplan_dir" 2>/dev/null || return 1
  if [ -e "$nasplan_dir/${nasplan_new##*/}" ]; then  # moved into a lock made meanwhile
    rm -rf -- "$nasplan_dir/${nasplan_new##*/}"; return 1
  fi
}
nasplan_make || nasplan_unwritable
nasplan_tries=0
until nasplan_take; do
  nasplan_tries=$((nasplan_tries + 1))
  if [ ! -d "$nasplan_dir" ] && [ "$nasplan_tries" -lt 3 ]; then continue; fi  # released meanwhile
  until=
  [ -f "$nasplan_lease" ] && read -r until 2>/dev/null < "$nasplan_lease"
  case $until in *[!0-9]*) until= ;; esac
  printf '@@nasplan:owner@@\n'; cat "$nasplan_dir/owner" 2>/dev/null
  printf '\n@@nasplan:clock@@\nnow=%s\nlease_until=%s\n' "$now" "$until"
  if grep -q '^run_id=.' "$nasplan_dir/owner" 2>/dev/null; then
    if [ "${until:-0}" -gt "$now" ] && [ "$force" != 1 ]; then nasplan_busy; fi
  else
    printf '@@nasplan:ownerless@@\n'
  fi
  printf '@@nasplan:removed@@\n'
  nasplan_cleanup "$nasplan_dir"
  rm -rf "$nasplan_dir"
  nasplan_take || nasplan_busy
  break
done
printf '\n@@nasplan:locked@@\n%s\n' "$nasplan_dir"
"""

_RENEW = r"""
if nasplan_owns "$nasplan_dir/owner"; then
  nasplan_clock
  echo $((nasplan_now_s + lease_s)) > "$nasplan_dir/lease.tmp" &&
    mv "$nasplan_dir/lease.tmp" "$nasplan_lease" && echo renewed
else
  echo lost
fi
"""

_RELEASE = r"""
if nasplan_owns "$nasplan_dir/owner"; then
  printf '@@nasplan:removed@@\n'
  nasplan_cleanup "$nasplan_dir"
  rm -rf "$nasplan_dir"
fi
"""

# ``nasplan restore RUN_DIR`` after a killed run: that run's lock, once its lease has run out,
# or at once when the control node knows the run's process is gone ($force).
_RELEASE_STALE = r"""
if grep -qF "run_id=$run_name-" "$nasplan_dir/owner" 2>/dev/null; then
  until=
  [ -f "$nasplan_lease" ] && read -r until 2>/dev/null < "$nasplan_lease"
  case $until in ''|*[!0-9]*) until=0 ;; esac
  nasplan_clock
  if [ "$force" = 1 ] || [ "$nasplan_now_s" -ge "$until" ]; then
    printf '@@nasplan:removed@@
'
    nasplan_cleanup "$nasplan_dir"
    rm -rf "$nasplan_dir"
  fi
fi
"""


def _assign(values: Mapping[str, str | int]) -> str:
    return "".join(f"{name}={shlex.quote(str(value))}\n" for name, value in values.items())


def record_script(paths: Sequence[str], before: str = "") -> str:
    """POSIX sh: write ``paths`` (what the run is about to make on the host) into the host's
    lock, before they are made; prints ``recorded``, else exits 1 saying why on stderr. Nothing
    to do (prints ``recorded``) on a host this run holds no lock of. ``before``: shell text run
    first, in the same round trip (a check that exits to record nothing)."""
    return PRELUDE + before + f"nasplan_register - - {shlex.join(paths)} && echo recorded\n"


def remove_listed_script(paths: Sequence[str]) -> str:
    """POSIX sh: remove ``paths`` (what run.json says a run made on the host: its lock may be
    gone, a rebooted host's /tmp) by the lock's own rules (absolute, last part ``nasplan-*``);
    prints a ``removed`` section naming each."""
    listed = "".join(f"{p}\n" for p in paths if "\n" not in p and p != _LISTED_END)
    return (
        PRELUDE
        + _CLEANUP
        + "printf '@@nasplan:removed@@\\n'\n"
        + f"nasplan_remove_listed <<'{_LISTED_END}'\n{listed}{_LISTED_END}\n"
    )


def owner_text(run_id: str) -> str:
    """``key=value`` lines naming this run: run id, control node, PID, user."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for the uid (containers)
        user = str(os.getuid())
    return f"run_id={run_id}\ncontrol={socket.gethostname()}\npid={os.getpid()}\nuser={user}"


def acquire_script(run_id: str, lease_s: float, *, force: bool = False) -> str:
    """POSIX sh: take the host's lock (a stale one too, cleaning what it left); exit 75 if busy."""
    values: dict[str, str | int] = {
        "run_id": run_id,
        "owner": owner_text(run_id),
        "lease_s": max(1, round(lease_s)),
        "force": int(force),
    }
    return _assign(values) + PRELUDE + _CLEANUP + _ACQUIRE


def renew_script(run_id: str, lease_s: float) -> str:
    """POSIX sh: push this run's lease ``lease_s`` ahead; prints ``renewed`` or ``lost``."""
    return _assign({"run_id": run_id, "lease_s": max(1, round(lease_s))}) + PRELUDE + _RENEW


def release_stale_script(run_name: str, *, force: bool = False) -> str:
    """POSIX sh: remove the lock (and what it lists) of the run directory ``run_name`` when
    that run is gone: its lease ran out, or (``force``) its process is known to be gone; prints
    a ``removed`` section when it did."""
    values: dict[str, str | int] = {"run_name": run_name, "force": int(force)}
    return _assign(values) + PRELUDE + _CLEANUP + _RELEASE_STALE


def owner_script() -> str:
    """POSIX sh, read-only: the host lock's ``owner`` section (empty when nobody holds it)."""
    return PRELUDE + "printf '@@nasplan:owner@@\\n'; cat \"$nasplan_dir/owner\" 2>/dev/null\n"


def release_script(run_id: str) -> str:
    """POSIX sh: stop what this run left on the host, remove its lock (only if it is ours)."""
    return _assign({"run_id": run_id}) + PRELUDE + _CLEANUP + _RELEASE


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a host's lock, from its ``owner`` file and the host clock."""

    fields: Mapping[str, str]
    age_s: int | None
    lease_left_s: int | None

    def describe(self) -> str:
        """``run 2026...-plan (pid 4242 on ctl, user ann), started 12 s ago``."""
        f = self.fields
        who = (
            f"run {f.get('run_id', '?')} (pid {f.get('pid', '?')} on {f.get('control', '?')}, "
            f"user {f.get('user', '?')})"
        )
        return who + (f", started {self.age_s} s ago" if self.age_s is not None else "")

    def dead_here(self) -> bool:
        """True when the holder ran on this control node and its process is gone."""
        if self.fields.get("control") != socket.gethostname():
            return False
        pid = self.fields.get("pid", "")
        if not pid.isdigit() or int(pid) == os.getpid():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, someone else's
            return False
        return False


def parse_holder(stdout: str) -> LockHolder:
    """The ``owner`` and ``clock`` sections an acquire script printed -> LockHolder."""
    sections = split_sections(stdout)
    fields = dict(
        line.split("=", 1) for line in sections.get("owner", "").splitlines() if "=" in line
    )
    clock = dict(
        line.split("=", 1) for line in sections.get("clock", "").splitlines() if "=" in line
    )
    now, until = _number(clock.get("now")), _number(clock.get("lease_until"))
    started = _number(fields.get("started_clock"))
    age = now - started if now is not None and started is not None else None
    left = until - now if now is not None and until is not None else None
    return LockHolder(fields, age, left)


def _number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None
