"""Host scripts of the network phase: read state, arm a revert + apply, confirm, restore.

Every value is quoted with shlex; every command line comes from an argv list. The revert is
commit-confirmed style: a detached ``setsid sh`` sleeps, then restores, unless nasplan confirms.
Armed revert and confirm race on one atomic ``mv`` of the pidfile, so exactly one of them wins.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

from nasplan.hostlock import PRELUDE
from nasplan.network.model import NicChange
from nasplan.network.state import NicState

REVERT_BASE = "/tmp"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
EXIT_NO_SETSID, EXIT_NOT_ARMED, EXIT_APPLY_FAILED = 90, 91, 92

# Runs detached on the host: $1 revert dir, $2 seconds until nasplan must confirm, $3 the run's
# lease file (nasplan.hostlock). Unconfirmed, it restores after $2 seconds; confirmed, it stays
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
    """``/tmp/nasplan-revert-<token>-<host>``: per run and host (lab hosts share one /tmp)."""
    return f"{REVERT_BASE}/nasplan-revert-{_UNSAFE.sub('-', token)}-{_UNSAFE.sub('-', host)}"


def state_script(nics: Iterable[str]) -> str:
    """Print ``ip -j addr``, ``ip -j route`` and each NIC's sysfs speed in sections."""
    lines = [
        "printf '\\n@@nasplan:addr@@\\n'; ip -j addr show",
        "printf '\\n@@nasplan:route@@\\n'; ip -j route show table main",
    ]
    for nic in nics:
        header = shlex.quote(f"\n@@nasplan:speed:{nic}@@\n")
        speed = shlex.quote(f"/sys/class/net/{nic}/speed")
        lines.append(f"printf %s {header}; cat {speed} 2>/dev/null; echo")
    return "\n".join(lines) + "\n"


def apply_argvs(changes: Sequence[NicChange], before: Mapping[str, NicState]) -> list[list[str]]:
    """The commands that make ``changes`` (MTU first: an address on a down link stays unused)."""
    argvs: list[list[str]] = []
    for change in changes:
        if change.mtu_bytes is not None:
            argvs.append(["ip", "link", "set", "dev", change.nic, "mtu", str(change.mtu_bytes)])
        state = before.get(change.nic)
        if change.add_addresses and not (state and state.up):
            argvs.append(["ip", "link", "set", "dev", change.nic, "up"])
        for address in change.add_addresses:
            argvs.append(["ip", "addr", "replace", address, "dev", change.nic])
    return argvs


def restore_argvs(changes: Sequence[NicChange], before: Mapping[str, NicState]) -> list[list[str]]:
    """The commands that put every changed NIC back to ``before`` (each one may fail alone)."""
    argvs: list[list[str]] = []
    for change in changes:
        state = before[change.nic]
        for address in change.add_addresses:
            if address not in state.addresses:
                argvs.append(["ip", "addr", "del", address, "dev", change.nic])
        if state.mtu_bytes is not None:
            argvs.append(["ip", "link", "set", "dev", change.nic, "mtu", str(state.mtu_bytes)])
        for address in state.addresses:
            argvs.append(["ip", "addr", "replace", address, "dev", change.nic])
        argvs.append(["ip", "link", "set", "dev", change.nic, "up" if state.up else "down"])
        argvs.extend(route.argv(change.nic) for route in state.routes)
    return argvs


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
) -> str:
    """Arm the revert (restore.sh + detached timer), then apply, then print the new state.

    Exits 90 without setsid, 91 when the timer did not start (nothing applied), 92 when a
    change failed (the armed revert stays: nasplan restores at once).
    """
    d = shlex.quote(directory)
    return (
        "set -u\n"
        f"command -v setsid >/dev/null 2>&1 || {{ echo 'setsid not found' >&2; "
        f"exit {EXIT_NO_SETSID}; }}\n"
        f"rm -rf {d} && mkdir -m 700 {d} || exit {EXIT_NOT_ARMED}\n"
        f"cat > {d}/restore.sh <<'NASPLAN_RESTORE'\n{restore_body(restore)}NASPLAN_RESTORE\n"
        + PRELUDE
        + f"setsid sh -c {shlex.quote(_REVERT_DAEMON)} nasplan-revert {d} {int(timeout_s)} "
        '"$nasplan_lease" </dev/null >/dev/null 2>&1 &\n'
        "nasplan_i=0\n"
        f"while [ ! -f {d}/pid ]; do\n"
        "  nasplan_i=$((nasplan_i + 1))\n"
        f"  [ $nasplan_i -gt 50 ] && {{ echo 'revert timer did not start' >&2; "
        f"exit {EXIT_NOT_ARMED}; }}\n"
        "  sleep 0.1\n"
        "done\n"
        f"printf '@@nasplan:armed@@\\n%s\\n' \"$(cat {d}/pid)\"\n"
        "nasplan_failed=0\n"
        + _lines(apply)
        + state_script(nics)
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
    directory: str, restore: Sequence[Sequence[str]], nics: Iterable[str], *, force: bool
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
        "printf '\\n@@nasplan:outcome@@\\n%s\\n' \"$nasplan_outcome\"\n" + state_script(nics)
    )
