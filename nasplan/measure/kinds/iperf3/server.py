"""iperf3 server side: POSIX sh scripts that start a one-off daemon server and stop it again."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from nasplan.hosts.lock import PRELUDE
from nasplan.sections import split_sections

# seconds the start script waits for the daemon to LISTEN
SERVER_READY_TIMEOUT_S = 5
# exit status of the start script when something already listens on the port
PORT_IN_USE_EXIT = 3


# Shared shell helpers. `nap` sleeps 10 ms for the first 0.1 s of a wait, 0.1 s after that, or
# 1 s where sleep takes whole seconds only (busybox built without FLOAT_DURATION), and counts in
# hundredths so loops stay bounded either way. Short naps first: a daemon listens, and a finished
# one-off server exits, almost at once, and every wait lies between two measurements.
# `alive` treats a zombie as gone: a daemon reparented to a lazy init stays a zombie for a while.
# Files are read with the shell's own `read` where a line will do: every process a script starts
# costs the host (a NAS's CPU is slow) and lies on the test's critical path.
_SH_HELPERS = """\
ticks=0
nap() {
  if [ "$ticks" -lt 10 ]; then nap_s=0.01 nap_n=1; else nap_s=0.1 nap_n=10; fi
  sleep "$nap_s" 2>/dev/null || { sleep 1; nap_n=100; }
  ticks=$((ticks + nap_n))
}
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ -r "/proc/$1/status" ] || return 0
  while read -r alive_key alive_state _; do
    case $alive_key in State:) [ "$alive_state" != Z ]; return ;; esac
  done 2>/dev/null < "/proc/$1/status"
  return 0
}
"""

# The server runs in the background of this shell rather than as `iperf3 -D`, which returns
# before it listens and so needs more looks. HUP is ignored and no descriptor of the SSH session
# is kept, so it outlives the session as a daemon would. Ready once the port is in LISTEN state:
# asked of iproute2's `ss` where there is one (netlink, listening sockets only: a read of
# /proc/net/tcp walks every bucket of the kernel's TCP hash tables, sized by the machine's
# memory), else read from /proc/net/tcp{,6} (BusyBox NAS shells: one grep for both: -s, a host
# without IPv6 has no tcp6; the port there is 4 upper-case hex digits; grep reads the table in
# blocks, the shell's `read` a byte at a time). Two looks at once, then naps. A server that ends
# before it listens (bad option, port taken) fails at once, its log on stderr. Files of this
# token exist only after a retry.
_START_BODY = """\
if command -v ss >/dev/null 2>&1; then
  listening() {
    case $(ss -ltn "sport = :$port" 2>/dev/null) in *":$port "*) return 0 ;; esac
    return 1
  }
else
  listening() {
    grep -Eqs "^ *[0-9]+: [0-9A-F]+:$port_hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6
  }
fi
if [ -r /proc/net/tcp ] && listening; then
  echo "nasplan: iperf3 port $port is already in use on $(hostname 2>/dev/null)" >&2
  exit 3
fi
if ! command -v "$iperf3" >/dev/null 2>&1; then
  echo "nasplan: $iperf3: not found" >&2
  exit 1
fi
if [ -e "$pidfile" ] || [ -e "$logfile" ]; then rm -f "$pidfile" "$logfile"; fi
( trap '' HUP; exec "$iperf3" -s -1 -p "$port" --pidfile "$pidfile" -J --logfile "$logfile" ) \
  >/dev/null 2>&1 </dev/null &
server=$!
if [ ! -r /proc/net/tcp ]; then
  # no Linux procfs to watch the port (BSD): give the server a moment instead
  sleep 1
  alive "$server" && { nasplan_watch; exit 0; }
else
  looks=0
  while [ "$ticks" -lt "$limit" ] && alive "$server"; do
    listening && { nasplan_watch; exit 0; }
    if [ "$looks" -lt 2 ]; then looks=$((looks + 1)); else nap; fi
  done
fi
if alive "$server"; then
  echo "nasplan: iperf3 server did not listen on port $port within $((limit / 100)) s" >&2
  kill "$server" 2>/dev/null
  # gone, not ending, when this returns (Linux: /proc tells a zombie; 2 s at most)
  if [ -r "/proc/$server/status" ]; then
    ticks=0
    while [ "$ticks" -lt 200 ] && alive "$server"; do nap; done
  fi
else
  echo "nasplan: $iperf3 -s ended before it listened on port $port" >&2
fi
cat "$logfile" >&2 2>/dev/null
rm -f "$pidfile" "$logfile"
exit 1
"""

# A one-off server waits for its client forever: a watchdog ends it once the run's lease on the
# host runs out (nasplan killed or cut off before the client came; see nasplan.hosts.lock). Both
# are registered in the host's lock so that the next run removes them should they outlive it.
_WATCH = """\
now() { if read -r u _ < /proc/uptime 2>/dev/null; then echo "${u%.*}"; else date +%s; fi; }
while kill -0 "$1" 2>/dev/null; do
  until=$(cat "$2" 2>/dev/null)
  case $until in ''|*[!0-9]*) exit 0 ;; esac
  if [ "$(now)" -ge "$until" ]; then
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = iperf3 ] && kill "$1"
    exit 0
  fi
  sleep 1
done
"""

_WATCH_START = """\
nasplan_watch() {
  pid=
  [ -r "$pidfile" ] && read -r pid < "$pidfile"
  case $pid in ''|*[!0-9]*) return 0 ;; esac
  nasplan_register "$pid" "${server_token:-$pidfile}" "$pidfile" "$logfile"
  [ -f "$nasplan_lease" ] || return 0
  ( trap '' HUP; exec sh -c "$watch" nasplan-iperf3-watch "$pid" "$nasplan_lease" "$pidfile" ) \\
    >/dev/null 2>&1 </dev/null &
  echo "$!" > "$pidfile.watch"
  nasplan_register "$!" "$pidfile" "$pidfile.watch"
}
"""

# The one-off server exits by itself once it has written its JSON: give it `grace` hundredths of
# a second before TERM, then KILL. Only an iperf3 process is killed (the PID may have been reused).
_STOP_BODY = """\
pid=
[ -r "$pidfile" ] && read -r pid 2>/dev/null < "$pidfile"
case $pid in ''|*[!0-9]*) pid= ;; esac
if [ -n "$pid" ] && [ -r "/proc/$pid/comm" ]; then
  comm=
  read -r comm 2>/dev/null < "/proc/$pid/comm"
  [ "$comm" = iperf3 ] || pid=
fi
if [ -n "$pid" ]; then
  while [ "$ticks" -lt "$grace" ] && alive "$pid"; do nap; done
  if alive "$pid"; then
    kill "$pid" 2>/dev/null
    ticks=0
    while [ "$ticks" -lt 100 ] && alive "$pid"; do nap; done
    alive "$pid" && kill -9 "$pid" 2>/dev/null
  fi
fi
cat "$logfile" 2>/dev/null
# its watchdog too (only while its command line still names this server's pidfile)
watch=
[ -r "$pidfile.watch" ] && read -r watch 2>/dev/null < "$pidfile.watch"
case $watch in ''|*[!0-9]*) ;; *)
  kill -0 "$watch" 2>/dev/null &&
    tr '\\000' ' ' < "/proc/$watch/cmdline" 2>/dev/null | grep -qF -- "$pidfile" && kill "$watch"
esac
rm -f "$pidfile" "$logfile" "$pidfile.watch"
"""


def _assignments(values: Mapping[str, str | int]) -> str:
    return "".join(f"{name}={shlex.quote(str(value))}\n" for name, value in values.items())


# The server in the foreground of its own SSH channel (iperf3 >= 3.7), started first: while it
# gets ready to listen (iperf3 3.12 loads OpenSSL) the script does the rest (the host lock's
# prelude, the text riding along, the watchdog); the script then waits for it, so the channel lasts
# as long as the server. The server says on that channel when it listens: "Server listening on
# PORT", flushed at once with --forceflush since 3.7. nasplan reads it and starts the client:
# no look at the LISTEN table before or after, no nap. A server that cannot listen (its port
# taken, a bad option) ends without saying it; only then does nasplan look whether the port is
# someone else's (``port_check_script``). `-i 1`: an interval line a second (and a `[SUM]` line
# with -P), flushed at once, read while the client runs (``Launched.read``: the test's rate each
# second on the console, ``kinds.iperf3.live_rate``); what is not read waits in the channel
# (an SSH channel's window holds hours of it). The riding text's output and the LAUNCH_SECTION
# line go out in one write: nothing of iperf3's falls between them: nasplan waits for both
# markers (READY_MARKER and that line).
# The server is registered in the host's lock and its watchdog started before the script writes
# anything, and the script ignores SIGPIPE once the server runs: should nasplan's connection be
# gone by then (nasplan killed, sshd gone), the server is still found and stopped (the lab's
# sshd-lost tests caught a server left listening when that write killed the script first).
LAUNCH_SINCE = (3, 7)
READY_MARKER = "Server listening on"
LAUNCH_SECTION = "iperf3-server"
_LAUNCH_START = """\
if ! command -v "$iperf3" >/dev/null 2>&1; then
  echo "nasplan: $iperf3: not found" >&2
  exit 1
fi
if [ -e "$pidfile" ] || [ -e "$logfile" ]; then rm -f "$pidfile" "$logfile"; fi
"$iperf3" -s -1 -p "$port" -i 1 --forceflush 2>&1 &
server=$!
trap '' PIPE
echo "$server" > "$pidfile"
"""
_LAUNCH_END = """\
nasplan_watch
printf '%s\\n@@nasplan:%s@@\\n' "$also_said" "$section"
wait "$server"
"""


def launch_section_marker() -> str:
    """The line that ends the launch script's own output (after the text riding along's)."""
    return f"@@nasplan:{LAUNCH_SECTION}@@"


def launch_said(output: str) -> str:
    """What iperf3 itself printed in a launch script's output: the lines before the first
    ``@@nasplan:`` section and those of the launch section (the text riding along has its own)."""
    head = output.split("@@nasplan:", 1)[0]
    return head + "\n" + split_sections(output).get(LAUNCH_SECTION, "")


def server_launch_script(
    iperf3_path: str, port: int, pidfile: str, logfile: str, *, also: str = ""
) -> str:
    """POSIX sh that runs a one-off iperf3 server (iperf3 >= LAUNCH_SINCE) on its channel.

    Run with ``start_until(..., [READY_MARKER, launch_section_marker()])``: ready once both
    came; a script that ends without them did not start (a missing iperf3: exit 1, the reason
    on stderr; iperf3's own reason in its output). ``also`` as for ``server_start_script``
    (its output, before the LAUNCH_SECTION line, is captured and printed in one write).
    """
    values: dict[str, str | int] = {
        "iperf3": iperf3_path,
        "port": port,
        "pidfile": pidfile,
        "logfile": logfile,
        "section": LAUNCH_SECTION,
        "watch": _WATCH,
        # what the host lock's clean-up finds in its command line (it names no pidfile)
        "server_token": f"-s -1 -p {port} -i 1 --forceflush",
    }
    captured = f"also_said=$(\n{also})\n" if also else "also_said=\n"
    return _assignments(values) + _LAUNCH_START + PRELUDE + _WATCH_START + captured + _LAUNCH_END


# The client runs under the same watchdog as a server: should nasplan be gone mid-test (killed,
# cut off) and the client hang (a network change reverted under it: iperf3 waits on a control
# connection whose address is gone, for as long as TCP retransmits, ~15 min), it is ended once
# the run's lease on the host runs out. Started first (before the lock's prelude and its
# `uname`), its watchdog while it connects; its output (the JSON nasplan keeps byte for byte)
# and exit status are its own. A host's sampler riding in it (``nasplan.measure.sampler.Ride``)
# starts before the client, so that it sees the measurement whole, and says what it did only
# after the client's output, in sections after a line of their own (``client_said``).
_CLIENT_START = """\
"$@" &
client=$!
"""
_CLIENT = """\
nasplan_register "$client" "$token"
if [ -f "$nasplan_lease" ]; then
  ( trap '' HUP; exec sh -c "$watch" nasplan-iperf3-watch "$client" "$nasplan_lease" "$token" ) \\
    >/dev/null 2>&1 </dev/null &
  watcher=$!
  nasplan_register "$watcher" "$token"
fi
wait "$client"
status=$?
[ -n "${watcher-}" ] && kill "$watcher" 2>/dev/null
"""


def client_script(argv: Sequence[str], *, before: str = "", said: str = "", stop: str = "") -> str:
    """POSIX sh that runs the iperf3 client ``argv`` under the host lease's watchdog (see
    _CLIENT), registered in the host's lock by its arguments (what the lock's clean-up looks for
    in a command line before it kills a PID). Text riding in the same round trip (the host's
    sampler: ``nasplan.measure.sampler.Ride``): ``before`` runs before the client and prints
    nothing, ``said`` after it, ``stop`` after that once the client ended well."""
    values = {"watch": _WATCH, "token": " ".join(argv[1:])}
    started = f"set -- {shlex.join(argv)}\n"
    if before:
        started += _assignments(values) + PRELUDE + before + _CLIENT_START
    else:
        started += _CLIENT_START + _assignments(values) + PRELUDE
    stop = f'if [ "$status" -eq 0 ]; then\n{stop}fi\n' if stop else ""
    return started + _CLIENT + said + stop + 'exit "$status"\n'


def client_said(output: str) -> str:
    """The client's own output in that of a ``client_script`` with text riding in it: what
    came before the first section of that text's (all of it when there is none)."""
    return output.split("\n@@nasplan:", 1)[0]


_PORT_CHECK = """\
if command -v ss >/dev/null 2>&1; then
  case $(ss -ltn "sport = :$port" 2>/dev/null) in *":$port "*) taken=1 ;; esac
elif grep -Eqs "^ *[0-9]+: [0-9A-F]+:$port_hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6
then
  taken=1
fi
if [ -n "${taken-}" ]; then
  echo "nasplan: iperf3 port $port is already in use on $(hostname 2>/dev/null)" >&2
  exit 3
fi
exit 0
"""


def port_check_script(port: int) -> str:
    """POSIX sh: exit 3 (PORT_IN_USE_EXIT, the reason on stderr) when something listens on TCP
    ``port``; 0 when nothing does or the host cannot tell (no `ss`, no /proc/net/tcp: BSD)."""
    return _assignments({"port": port, "port_hex": f"{port:04X}"}) + _PORT_CHECK


def server_start_script(
    iperf3_path: str,
    port: int,
    pidfile: str,
    logfile: str,
    *,
    ready_timeout_s: int = SERVER_READY_TIMEOUT_S,
    also: str = "",
) -> str:
    """POSIX sh (busybox ash too) that starts a one-off daemon server and waits until it listens.

    Exit 0: listening. Exit 3: the port was already in use. Exit 1: failed (reason on stderr).
    ``also``: shell text run first, in the same round trip (the host's resource sampler's start:
    nasplan.measure.sampling); its output comes before the server's (none on success).
    """
    values: dict[str, str | int] = {
        "iperf3": iperf3_path,
        "port": port,
        "port_hex": f"{port:04X}",
        "pidfile": pidfile,
        "logfile": logfile,
        "limit": ready_timeout_s * 100,
        "watch": _WATCH,
    }
    return _assignments(values) + _SH_HELPERS + PRELUDE + _WATCH_START + also + _START_BODY


def server_stop_script(pidfile: str, logfile: str, *, grace_s: float = 2.0, also: str = "") -> str:
    """POSIX sh that stops the ``pidfile`` server if still alive, prints its log, removes both.

    ``also``: shell text run last, in the same round trip (the host's resource sampler's stop);
    what it prints follows the server's log.
    """
    values: dict[str, str | int] = {
        "pidfile": pidfile,
        "logfile": logfile,
        "grace": round(grace_s * 100),
    }
    return _assignments(values) + _SH_HELPERS + _STOP_BODY + also + "exit 0\n"


def server_argv(iperf3_path: str, port: int, pidfile: str, logfile: str) -> list[str]:
    """The one-off daemon server as ``server_start_script`` runs it (run.json keeps it)."""
    return [iperf3_path, "-s", "-1", "-p", str(port), "--pidfile", pidfile, "-J", "--logfile",
            logfile]  # fmt: skip


def launch_argv(iperf3_path: str, port: int) -> list[str]:
    """The one-off server as ``server_launch_script`` runs it on its own channel."""
    return [iperf3_path, "-s", "-1", "-p", str(port), "-i", "1", "--forceflush"]


def temp_paths(token: str, port: int) -> tuple[str, str]:
    """The server's pidfile and logfile under /tmp for this run token: ``(pidfile, logfile)``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", token)
    base = f"/tmp/nasplan-iperf3-{safe}-{port}"
    return f"{base}.pid", f"{base}.log"
