"""Host scripts of the network phase: read state, arm a revert + apply, confirm, restore.

Every value is quoted with shlex; every command line comes from an argv list. The revert is
commit-confirmed style: a detached ``sh`` sleeps, then restores, unless nasplan confirms.
Armed revert and confirm race on one atomic ``mv`` of the pidfile, so exactly one of them wins.

Linux detaches the timer with ``setsid``. macOS and FreeBSD have no setsid(1): there the timer is
detached with whatever the host has, in this order: ``setsid``, FreeBSD's ``daemon -f`` (both
make it a session and process-group leader), ``nohup`` (macOS: the timer stays in the script's
process group, so the disarm's ``kill -TERM -PGID`` finds no group and does nothing; the timer
then ends by itself within a second, once its pid file has been moved away).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence

from nasplan.hosts.lock import PRELUDE
from nasplan.network.tools import NetTools, state_script

REVERT_BASE = "/tmp"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
EXIT_NO_SETSID, EXIT_NOT_ARMED, EXIT_APPLY_FAILED = 90, 91, 92

# Sets nasplan_how to the first way this host has to detach a process (setsid, daemon, nohup;
# empty: none) and nasplan_detach to its command words, used unquoted: `$nasplan_detach sh -c`.
# (Not a shell function: dash keeps a backgrounded function call's output open until it ends.)
DETACH = """\
if command -v setsid >/dev/null 2>&1; then nasplan_how=setsid; nasplan_detach=setsid
elif [ "$(uname -s 2>/dev/null)" = FreeBSD ] && [ -x /usr/sbin/daemon ]; then
  nasplan_how=daemon; nasplan_detach="/usr/sbin/daemon -f"
elif command -v nohup >/dev/null 2>&1; then nasplan_how=nohup; nasplan_detach=nohup
else nasplan_how=; nasplan_detach=false; fi
"""

# Runs detached on the host: $1 revert dir, $2 seconds until nasplan must confirm, $3 the run's
# lease file (nasplan.hosts.lock). Unconfirmed, it restores after $2 seconds; confirmed, it stays
# armed for as long as nasplan renews the lease (a killed or cut-off nasplan: restored within one
# lease); confirmed without a lease file (no host lock), confirming disarms it.
_REVERT_DAEMON = """\
d=$1; lease=$3
echo $$ > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid" || exit 1
now() { if read -r u _ < /proc/uptime 2>/dev/null; then echo "${u%.*}"; else date +%s; fi; }
end=$(( $(now) + $2 ))
while [ -f "$d/pid" ]; do
  if [ -f "$d/confirmed" ]; then
    [ -n "$lease" ] && [ -f "$lease" ] || { rm -f "$d/pid"; exit 0; }
    until=$(cat "$lease" 2>/dev/null)
    case $until in ''|*[!0-9]*) until=0 ;; esac
    [ "$(now)" -lt "$until" ] || break
  else
    [ "$(now)" -lt "$end" ] || break
  fi
  sleep 1
done
mv "$d/pid" "$d/fired" 2>/dev/null || exit 0
sh "$d/restore.sh" > "$d/restore.log" 2>&1; touch "$d/done"
"""


def revert_dir(token: str, host: str) -> str:
    """``/tmp/nasplan-revert-<token>-<host>``: per run and host (two hosts may be one machine)."""
    return f"{REVERT_BASE}/nasplan-revert-{_UNSAFE.sub('-', token)}-{_UNSAFE.sub('-', host)}"


def _lines(argvs: Iterable[Sequence[str]]) -> str:
    # Each step on its own: one that fails must not keep the others from putting state back.
    return "".join(f"{shlex.join(argv)} || nasplan_failed=1\n" for argv in argvs)


def restore_body(argvs: Iterable[Sequence[str]]) -> str:
    """restore.sh: every restore command, exit 1 when one failed."""
    return "nasplan_failed=0\n" + _lines(argvs) + 'exit "$nasplan_failed"\n'


def arm_and_apply_script(
    directory: str,
    timeout_s: int,
    restore: Sequence[Sequence[str]],
    apply: Sequence[Sequence[str]],
    nics: Iterable[str],
    tools: NetTools | None = None,
    *,
    any_detacher: bool = False,
) -> str:
    """Arm the revert (restore.sh + detached timer), then apply, then print the new state.

    ``any_detacher``: detach the timer with setsid, FreeBSD's daemon or nohup, whichever the host
    has (macOS, FreeBSD); else with setsid only (Linux). Prints ``armed`` (the timer's PID) and
    ``detached-with``. Exits 90 with no way to detach, 91 when the timer did not start (nothing
    applied), 92 when a change failed (the armed revert stays: nasplan restores at once).
    """
    d = shlex.quote(directory)
    if any_detacher:
        check = (
            DETACH + '[ -n "$nasplan_how" ] || { echo '
            f"'none of setsid, daemon, nohup found' >&2; exit {EXIT_NO_SETSID}; }}\n"
        )
        start = "$nasplan_detach sh"
    else:
        check = (
            "command -v setsid >/dev/null 2>&1 || { echo 'setsid not found' >&2; "
            f"exit {EXIT_NO_SETSID}; }}\nnasplan_how=setsid\n"
        )
        start = "setsid sh"
    return (
        "set -u\n" + check + f"rm -rf {d} && mkdir -m 700 {d} || exit {EXIT_NOT_ARMED}\n"
        f"cat > {d}/restore.sh <<'NASPLAN_RESTORE'\n{restore_body(restore)}NASPLAN_RESTORE\n"
        + PRELUDE
        + f"{start} -c {shlex.quote(_REVERT_DAEMON)} nasplan-revert {d} {int(timeout_s)} "
        '"$nasplan_lease" </dev/null >/dev/null 2>&1 &\n'
        "nasplan_i=0\n"
        f"while [ ! -f {d}/pid ]; do\n"
        "  nasplan_i=$((nasplan_i + 1))\n"
        f"  [ $nasplan_i -gt 50 ] && {{ echo 'revert timer did not start' >&2; "
        f"exit {EXIT_NOT_ARMED}; }}\n"
        "  sleep 0.1\n"
        "done\n"
        f"printf '@@nasplan:armed@@\\n%s\\n' \"$(cat {d}/pid)\"\n"
        "printf '@@nasplan:detached-with@@\\n%s\\n' \"$nasplan_how\"\n"
        "nasplan_failed=0\n"
        + _lines(apply)
        + state_script(nics, tools)
        + f'[ "$nasplan_failed" = 0 ] || exit {EXIT_APPLY_FAILED}\n'
    )


def confirm_script(directory: str) -> str:
    """Keep the change: the revert now follows the run's lease (see ``_REVERT_DAEMON``).

    Prints ``confirmed``, or ``fired`` when the host already reverted, or ``missing``.
    """
    d = shlex.quote(directory)
    return (
        f"if [ -f {d}/pid ]; then\n"
        f"  touch {d}/confirmed\n"
        f"  if [ -f {d}/pid ]; then echo confirmed; else echo fired; fi\n"
        f"elif [ -f {d}/fired ]; then echo fired\n"
        "else echo missing; fi\n"
    )


def restore_script(
    directory: str,
    restore: Sequence[Sequence[str]],
    nics: Iterable[str],
    *,
    force: bool,
    tools: NetTools | None = None,
) -> str:
    """Disarm, restore (unless the host's revert fired and ``force`` is off), print the state.

    Prints an ``outcome`` section: ``reverted-by-host`` or ``restored``.
    """
    d = shlex.quote(directory)
    fired_test = "false" if force else f"[ -f {d}/fired ]"
    return (
        f"if mv {d}/pid {d}/disarmed 2>/dev/null; then\n"
        f'  kill -TERM "-$(cat {d}/disarmed)" 2>/dev/null\n'
        "fi\n"
        f"if {fired_test}; then\n"
        "  nasplan_i=0\n"
        f"  while [ ! -f {d}/done ] && [ $nasplan_i -lt 100 ]; do\n"
        "    nasplan_i=$((nasplan_i + 1)); sleep 0.1\n"
        "  done\n"
        "  nasplan_outcome=reverted-by-host\n"
        "else\n"
        "  nasplan_failed=0\n"
        + "".join(f"  {line}\n" for line in _lines(restore).splitlines())
        + "  nasplan_outcome=restored\n"
        "fi\n"
        f"rm -rf {d}\n"
        "printf '\\n@@nasplan:outcome@@\\n%s\\n' \"$nasplan_outcome\"\n" + state_script(nics, tools)
    )
