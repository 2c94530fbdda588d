"""TrueNAS's own commit-confirmed change: ``interface.update``, ``interface.commit`` with
rollback and ``checkin_timeout``, ``interface.checkin``; the middleware rolls back by itself.

SCALE (Linux) and CORE / FreeNAS (FreeBSD: 11.3, 12.0 and 13.0 have the same methods, with the
same ``aliases`` and ``mtu`` fields) differ only in how the state is read back: ``ip -j`` there,
BSD ``ifconfig`` here (``net_tools``, from the host's facts).

``interface.update`` only stages a change; ``interface.commit`` applies every staged one and, with
``rollback``, restores them all after ``checkin_timeout`` seconds unless ``interface.checkin``
comes first. A file in the revert directory records that nasplan armed (and confirmed) it, so a
host found with nothing pending and no confirm has rolled back by itself.

``interface.update`` merges what it is sent into the NIC's stored configuration and replaces
its whole ``aliases`` list. That list holds the static aliases only; an address from DHCP or
SLAAC (or one the middleware does not configure) shows in ``state.aliases`` and in ``ip`` or
``ifconfig``, never in ``aliases``. So the snapshot reads the configuration with
``interface.query`` (``aliases``, ``ipv4_dhcp``, ``ipv6_auto``, ``mtu``: None for the default,
which the middleware applies as 1500), an update sends the configured aliases plus nasplan's,
and the restore sends the configuration back exactly. Fields and behaviour as in
truenas/middleware ``src/middlewared/middlewared/plugins/network.py`` (``query``,
``iface_extend``, ``do_update``) and ``plugins/interface/configure.py`` at the commits:
SCALE 24.04.2 7ae91f2c9eea2bc19bf9ed774304a39c26fe4a5c, CORE 13.0-U5.1
3dd62f69ac09d7e1c93db1c437fcf4cc12e7c595, 12.0-U6.1 c0cba0ca0f3f0cb8c6de35e5d13987be01f8dbce,
FreeNAS 11.3 45403ebc0d6ee28c3379b906dc84d85be26cdd8d.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nasplan.hosts.lock import PRELUDE
from nasplan.input.network import NicChange
from nasplan.network import scripts
from nasplan.network.state import NicConfig, NicState
from nasplan.network.tools import NetTools, parse_state_output, state_script
from nasplan.platforms.base import TRUENAS_INTERFACE_COMMIT
from nasplan.sections import split_sections

MECHANISM = TRUENAS_INTERFACE_COMMIT
# Restoring the snapshot is committed with a rollback too, then checked in by the same script.
RESTORE_CHECKIN_TIMEOUT_S = 60


def alias(address: str) -> dict[str, Any]:
    """``198.18.4.1/30`` -> ``{"type": "INET", "address": "198.18.4.1", "netmask": 30}``."""
    ip, _, prefix = address.partition("/")
    return {"type": "INET6" if ":" in ip else "INET", "address": ip, "netmask": int(prefix)}


def midclt(method: str, *args: Any) -> list[str]:
    """``midclt call METHOD ARG...`` argv; strings pass as they are, the rest as JSON."""
    return ["midclt", "call", method, *(a if isinstance(a, str) else json.dumps(a) for a in args)]


def commit_argv(timeout_s: int) -> list[str]:
    """``interface.commit`` that rolls back after ``timeout_s`` unless checked in."""
    return midclt("interface.commit", {"rollback": True, "checkin_timeout": int(timeout_s)})


def query_argv(nics: Iterable[str]) -> list[str]:
    """``interface.query`` of these NICs (ids are names), filtered on the host."""
    return midclt("interface.query", [["id", "in", list(nics)]])


def _netmask(value: Any) -> int:
    # An int in every release's datastore; the SCALE schema calls it a string: take both.
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise ValueError(f"netmask {value!r} is not a prefix length")
    return int(value)


def parse_interface_query(text: str) -> dict[str, NicConfig]:
    """``midclt call interface.query`` JSON -> ``{nic: NicConfig}`` (the stored configuration,
    not ``state``); ValueError when it is not the middleware's shape."""
    entries = json.loads(text)
    if not isinstance(entries, list):
        raise ValueError("interface.query did not return a list")
    found = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("aliases"), list):
            raise ValueError(f"interface.query entry without aliases: {entry!r}")
        aliases = tuple(
            f"{a['address']}/{_netmask(a.get('netmask'))}"
            for a in entry["aliases"]
            if isinstance(a, dict) and "address" in a
        )
        mtu = entry.get("mtu")
        found[str(entry.get("id") or entry.get("name"))] = NicConfig(
            aliases=aliases,
            ipv4_dhcp=entry.get("ipv4_dhcp") is True,
            ipv6_auto=entry.get("ipv6_auto") is True,
            mtu_bytes=mtu if isinstance(mtu, int) and not isinstance(mtu, bool) else None,
        )
    return found


def _configured_aliases(state: NicState) -> tuple[str, ...]:
    # A snapshot file written before nasplan read the configuration: its live addresses.
    return state.configured.aliases if state.configured is not None else state.addresses


def update_argvs(changes: Sequence[NicChange], before: Mapping[str, NicState]) -> list[list[str]]:
    """``interface.update`` per NIC (ids are names): the new MTU, the configured aliases plus
    the additions (never an address the NIC has from DHCP or SLAAC: sent, it would turn static).
    """
    argvs = []
    for change in changes:
        data: dict[str, Any] = {}
        if change.mtu_bytes is not None:
            data["mtu"] = change.mtu_bytes
        if change.add_addresses:
            # aliases replaces the whole list: keep the configured ones.
            had = _configured_aliases(before[change.nic]) if change.nic in before else ()
            data["aliases"] = [alias(a) for a in dict.fromkeys((*had, *change.add_addresses))]
        if data:
            argvs.append(midclt("interface.update", change.nic, data))
    return argvs


def restore_update_argvs(
    changes: Sequence[NicChange], before: Mapping[str, NicState]
) -> list[list[str]]:
    """``interface.update`` per changed NIC back to its snapshot configuration, exactly:
    aliases, ``ipv4_dhcp``, ``ipv6_auto``, ``mtu`` (None: the default again).

    A snapshot without the configuration (older files): the MTU, and the alias list only where
    nasplan changed it, from the live addresses as before.
    """
    argvs = []
    for change in changes:
        state = before[change.nic]
        data: dict[str, Any] = {}
        config = state.configured
        if config is not None:
            data["aliases"] = [alias(a) for a in config.aliases]
            data["ipv4_dhcp"] = config.ipv4_dhcp
            data["ipv6_auto"] = config.ipv6_auto
            data["mtu"] = config.mtu_bytes
        else:
            if change.add_addresses:
                data["aliases"] = [alias(a) for a in state.addresses]
            if state.mtu_bytes is not None:
                data["mtu"] = state.mtu_bytes
        argvs.append(midclt("interface.update", change.nic, data))
    return argvs


def _put_back(
    changes: Sequence[NicChange], before: Mapping[str, NicState], indent: str = ""
) -> str:
    """Update every changed NIC back to its snapshot, commit with rollback, check in."""
    return _steps(restore_update_argvs(changes, before), indent) + _steps(
        [commit_argv(RESTORE_CHECKIN_TIMEOUT_S), midclt("interface.checkin")], indent
    )


def _steps(argvs: Iterable[Sequence[str]], indent: str = "") -> str:
    return "".join(f"{indent}{shlex.join(argv)} >/dev/null || nasplan_failed=1\n" for argv in argvs)


# After checkin the middleware keeps the change for good: a detached watcher (like the generic
# backend's revert) puts the snapshot back through the middleware once the run's lease runs out.
# $1 revert dir, $2 lease file; no lease file (no host lock): nothing to follow, it ends.
_LEASE_WATCH = """\
d=$1; lease=$2
echo $$ > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid" || exit 1
now() { if read -r u _ < /proc/uptime 2>/dev/null; then echo "${u%.*}"; else date +%s; fi; }
while [ -f "$d/pid" ]; do
  [ -f "$lease" ] || { rm -f "$d/pid"; exit 0; }
  until=$(cat "$lease" 2>/dev/null)
  case $until in ''|*[!0-9]*) until=0 ;; esac
  [ "$(now)" -lt "$until" ] || break
  sleep 1
done
mv "$d/pid" "$d/fired" 2>/dev/null || exit 0
sh "$d/lease-restore.sh" > "$d/restore.log" 2>&1; touch "$d/done"
"""

# CORE and FreeNAS keep midclt in /usr/local/bin, which a sudo PATH may leave out.
_PATH = 'PATH="$PATH:/usr/local/bin"\n'
_QUERY = "truenas-interface-query"
_WAITING = f"nasplan_w=$({shlex.join(midclt('interface.checkin_waiting'))} 2>/dev/null)\n"
_NOT_WAITING = 'case "$nasplan_w" in ""|null|None) true ;; *) false ;; esac'


@dataclass(frozen=True)
class TrueNasCommit:
    """The TrueNAS middleware's own commit with rollback and checkin (SCALE, CORE, FreeNAS)."""

    # SCALE ships a current iproute2 (`ip -j`); CORE and FreeNAS are read with BSD ifconfig.
    net_tools: NetTools = field(default_factory=NetTools)
    mechanism: str = field(default=MECHANISM, init=False)
    snapshot_as_root: bool = field(default=True, init=False)  # midclt talks to root only

    def snapshot_script(self, nics: Sequence[str]) -> str:
        """The NICs' live state, then their stored configuration (``interface.query``)."""
        return (
            _PATH
            + state_script(nics, self.net_tools)
            + f"printf '\\n@@nasplan:{_QUERY}@@\\n'; {shlex.join(query_argv(nics))}\n"
        )

    def parse_snapshot(self, text: str) -> dict[str, NicState]:
        """Live states with ``configured`` set; a NIC the query did not list is left out."""
        states = parse_state_output(text)
        try:
            configs = parse_interface_query(split_sections(text).get(_QUERY) or "null")
        except ValueError:
            return {}
        return {
            nic: replace(state, configured=configs[nic])
            for nic, state in states.items()
            if nic in configs
        }

    def arm_and_apply_script(
        self,
        directory: str,
        timeout_s: int,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
    ) -> str:
        """Stage updates, commit with rollback (that arms it), print ``armed`` and the state.

        Exits 90 without midclt, 91 when changes were already pending or an update was refused
        (staged ones rolled back, nothing applied), 92 when the commit failed.
        """
        d = shlex.quote(directory)
        pending = shlex.join(midclt("interface.has_pending_changes"))
        rollback = shlex.join(midclt("interface.rollback"))
        return (
            "set -u\n"
            + _PATH
            + "command -v midclt >/dev/null 2>&1 || { echo 'midclt not found' >&2; "
            f"exit {scripts.EXIT_NO_SETSID}; }}\n"
            # Someone's staged or unconfirmed change would be committed (or rolled back) with ours.
            # midclt prints booleans as Python does: False.
            f'case "$({pending} 2>/dev/null)" in False|false) ;; *) echo "interface changes are '
            f'already pending on this host: finish them first" >&2; '
            f"exit {scripts.EXIT_NOT_ARMED} ;; esac\n"
            f"rm -rf {d} && mkdir -m 700 {d} || exit {scripts.EXIT_NOT_ARMED}\n"
            f"cat > {d}/lease-restore.sh <<'NASPLAN_RESTORE'\n"
            + "nasplan_failed=0\n"
            + _put_back(changes, before)
            + 'exit "$nasplan_failed"\nNASPLAN_RESTORE\n'
            "nasplan_failed=0\n"
            + _steps(update_argvs(changes, before))
            + f'if [ "$nasplan_failed" != 0 ]; then {rollback} >/dev/null 2>&1; rm -rf {d}; '
            f"echo 'interface.update refused a change' >&2; exit {scripts.EXIT_NOT_ARMED}; fi\n"
            f"if {shlex.join(commit_argv(timeout_s))} >/dev/null; then\n"
            f"  touch {d}/armed\n"
            f"  {_WAITING}"
            "  printf '@@nasplan:armed@@\\n%s\\n' \"$nasplan_w\"\n"
            "else nasplan_failed=1; fi\n"
            + state_script((c.nic for c in changes), self.net_tools)
            + f'[ "$nasplan_failed" = 0 ] || exit {scripts.EXIT_APPLY_FAILED}\n'
        )

    def confirm_script(self, directory: str) -> str:
        """``interface.checkin`` while the rollback is pending; ``fired`` when it already ran.

        Once checked in, a lease watcher keeps the change guarded for the rest of the run.
        """
        d = shlex.quote(directory)
        watch = (
            f"$nasplan_detach sh -c {shlex.quote(_LEASE_WATCH)} nasplan-revert {d} "
            '"$nasplan_lease" </dev/null >/dev/null 2>&1 &'
        )
        return (
            _PATH + PRELUDE + scripts.DETACH + _WAITING + f"if {_NOT_WAITING}; then\n"
            f"  if [ -f {d}/armed ]; then echo fired; else echo missing; fi\n"
            f"elif {shlex.join(midclt('interface.checkin'))} >/dev/null; then\n"
            f"  touch {d}/confirmed\n"
            f'  [ -f "$nasplan_lease" ] && {watch}\n'
            "  echo confirmed\n"
            "else echo missing; fi\n"
        )

    def restore_script(
        self,
        directory: str,
        changes: Sequence[NicChange],
        before: Mapping[str, NicState],
        *,
        force: bool,
    ) -> str:
        """Pending: ``interface.rollback``; confirmed (or ``force``): update back, commit, checkin.

        Armed, never confirmed and nothing pending: the middleware rolled back by itself.
        """
        d = shlex.quote(directory)
        fired_test = (
            "false"
            if force
            else f"[ -f {d}/fired ] || {{ [ -f {d}/armed ] && [ ! -f {d}/confirmed ]; }}"
        )
        return (
            _PATH + "nasplan_failed=0\n"
            # the lease watcher first: stopped, or (fired) given a moment to finish
            f"if mv {d}/pid {d}/disarmed 2>/dev/null; then\n"
            f'  kill -TERM "-$(cat {d}/disarmed)" 2>/dev/null\n'
            "fi\n"
            f"nasplan_i=0\n"
            f"while [ -f {d}/fired ] && [ ! -f {d}/done ] && [ $nasplan_i -lt 300 ]; do\n"
            "  nasplan_i=$((nasplan_i + 1)); sleep 0.1\n"
            "done\n"
            + _WAITING
            + f"if ! {_NOT_WAITING}; then\n"
            + _steps([midclt("interface.rollback")], "  ")
            + "  nasplan_outcome=restored\n"
            f"elif {fired_test}; then\n"
            "  nasplan_outcome=reverted-by-host\n"
            "else\n" + _put_back(changes, before, "  ") + "  nasplan_outcome=restored\n"
            "fi\n"
            f"rm -rf {d}\n"
            "printf '\\n@@nasplan:outcome@@\\n%s\\n' \"$nasplan_outcome\"\n"
            + state_script((c.nic for c in changes), self.net_tools)
        )
