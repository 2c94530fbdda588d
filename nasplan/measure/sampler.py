"""Resource sampling during a test: one detached POSIX-sh loop per host, a pure parser.

The loop reads /proc/stat, /proc/meminfo, /proc/diskstats and /proc/net/dev every
SAMPLE_INTERVAL_S with shell builtins only (no process per sample, so it does not distort what
it measures) and appends one line per sample to a /tmp file. It stops when its flag file is
removed, when the run's lease on the host runs out (nasplan gone: see nasplan.hosts.lock), or by
itself after ``max_s``. ``parse`` turns the lines into the test's summary and a per-second
series (CPU busy, memory available, disk and NIC bytes per second, like vmstat). A test's
samplers, started and stopped beside its own work, are ``nasplan.measure.sampling``'s.
"""

from __future__ import annotations

import itertools
import re
import shlex
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan import platforms
from nasplan.hosts.lock import PRELUDE
from nasplan.remote.runner import Runner

SAMPLE_INTERVAL_S = 0.5
MAX_SAMPLING_S = 3600
_TIMEOUT_S = 15.0

# Each line: "S <uptime s> <cpu jiffies: user nice system idle iowait irq softirq steal>
# M <MemAvailable kB> D <disk>:<sectors read>:<sectors written>... N <nic>:<rx bytes>:<tx bytes>...
# E". Disks are whole devices (those in /sys/block: a partition is counted in its disk), without
# RAM, loop and optical devices; sectors are 512 bytes whatever the device's own sector size.
# NICs: every interface but lo. P: each core's busy:idle jiffies from the cpuN lines of the same
# /proc/stat (busy: user nice system irq softirq steal; idle: idle iowait), so that one saturated
# core shows beside a whole machine that looks idle. "E" ends a complete line (one written when the
# loop was killed is not). T: each NIC's temperature sensors where hwmon has them
# (/sys/class/net/NIC/device/hwmon/hwmon*/temp*_input, millidegrees C; none on virtual NICs): a rate
# that falls while a NIC heats is named. `sleep 0.5` fails on a busybox built without
# FLOAT_DURATION: fall back to whole seconds.
# $1: the run's lease file (nasplan.hosts.lock): the loop ends once nasplan stopped renewing it
# (kept in $lease: the NIC loop below reuses the positional parameters).
# M is what the loop's own cgroup may still use where it has a memory limit below that: the limit
# less its usage, its inactive file pages (reclaimable, as MemAvailable counts them) given back
# (cgroup v2: memory.max, memory.current, memory.stat's inactive_file; v1: memory.limit_in_bytes,
# memory.usage_in_bytes, total_inactive_file), so a NAS in a container or a lab host with a
# 128 MiB limit reads its own memory, not the machine's.
_LOOP = """\
ticks=0
lease=${1:-}
cg_max= cg_use= cg_stat= cg_idle=inactive_file
while IFS=: read -r _ cg_c cg_p; do
  case ",$cg_c," in
    ,,) cg_d=$cg_root$cg_p
      [ -r "$cg_d/memory.max" ] && cg_max=$cg_d/memory.max cg_use=$cg_d/memory.current \
        cg_stat=$cg_d/memory.stat ;;
    *,memory,*) cg_d=$cg_root/memory$cg_p
      [ -r "$cg_d/memory.limit_in_bytes" ] && cg_max=$cg_d/memory.limit_in_bytes \
        cg_use=$cg_d/memory.usage_in_bytes cg_stat=$cg_d/memory.stat cg_idle=total_inactive_file ;;
  esac
done < /proc/self/cgroup 2>/dev/null
while [ -e "$flag" ] && [ "$ticks" -lt "$limit" ]; do
  read -r up _ < /proc/uptime
  if [ -n "$lease" ] && [ -f "$lease" ]; then
    read -r until < "$lease" || until=0
    case $until in ''|*[!0-9]*) until=0 ;; esac
    [ "${up%.*}" -lt "$until" ] || { rm -f "$out" "$flag"; break; }
  fi
  read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
  cores=
  while read -r c_name c_u c_n c_s c_i c_w c_q c_sq c_st _; do
    case $c_name in
      cpu) ;;
      cpu*)
        c_busy=$((c_u + c_n + c_s + ${c_q:-0} + ${c_sq:-0} + ${c_st:-0}))
        cores="$cores $c_busy:$((c_i + ${c_w:-0}))" ;;
      *) break ;;
    esac
  done < /proc/stat
  mem=
  while read -r key value _; do
    case $key in MemAvailable:) mem=$value; break ;; esac
  done < /proc/meminfo
  if [ -n "$cg_max" ]; then
    read -r cg_l < "$cg_max" 2>/dev/null || cg_l=
    read -r cg_u < "$cg_use" 2>/dev/null || cg_u=
    case "$cg_l:$cg_u" in
      *[!0-9:]*|:*|*:) ;;
      *)
        cg_i=0
        while read -r key value _; do
          [ "$key" = "$cg_idle" ] && { cg_i=$value; break; }
        done < "$cg_stat" 2>/dev/null
        cg_a=$(( (cg_l - cg_u + cg_i) / 1024 ))
        [ "$cg_a" -ge 0 ] || cg_a=0
        if [ -z "$mem" ] || [ "$cg_a" -lt "$mem" ]; then mem=$cg_a; fi ;;
    esac
  fi
  disks=
  while read -r _ _ name _ _ rsect _ _ _ wsect _; do
    case $name in ram*|loop*|zram*|sr*|fd*) continue ;; esac
    [ -e "/sys/block/$name" ] && disks="$disks $name:$rsect:${wsect:-0}"
  done < /proc/diskstats 2>/dev/null
  nics=
  while IFS=: read -r name counters; do
    [ -n "$counters" ] || continue
    name=${name##* }
    [ "$name" = lo ] && continue
    set -- $counters
    nics="$nics $name:$1:${9:-0}"
  done < /proc/net/dev 2>/dev/null
  temps=
  for t_path in /sys/class/net/*/device/hwmon/hwmon*/temp*_input; do
    read -r t_val < "$t_path" 2>/dev/null || continue
    t_nic=${t_path#/sys/class/net/}
    temps="$temps ${t_nic%%/*}:$t_val"
  done
  cpu="$user $nice $system $idle ${iowait:-0} ${irq:-0} ${softirq:-0} ${steal:-0}"
  echo "S $up $cpu M $mem D$disks N$nics P$cores T$temps E"
  if sleep 0.5 2>/dev/null; then ticks=$((ticks + 1)); else sleep 1; ticks=$((ticks + 2)); fi
done >> "$out"
"""

_START = """\
: > "$out" && : > "$flag" || exit 1
( trap '' HUP; exec sh -c "$loop" nasplan-sampler "$nasplan_lease" ) >/dev/null 2>&1 </dev/null &
nasplan_register "$!" "$out" "$out" "$flag"
echo "$!"
"""

# The loop is ours (started by _START): end it now rather than wait out its interval; a line it
# was writing is incomplete and ignored by the parser. Should the kill miss, the loop ends at
# its next sample, when it finds its flag gone. Once signalled it is waited for (5 s at most):
# gone, not ending, when the script returns (the run's release must not find it still there).
_STOP = """\
kill "$pid" 2>/dev/null
nasplan_i=0
while [ "$nasplan_i" -lt 50 ] && grep -qF -- "$out" "/proc/$pid/cmdline" 2>/dev/null; do
  sleep 0.1; nasplan_i=$((nasplan_i + 1))
done
cat "$out" 2>/dev/null
rm -f "$flag" "$out"
"""


def _assign(values: Mapping[str, str | int]) -> str:
    return "".join(f"{name}={shlex.quote(str(value))}\n" for name, value in values.items())


def paths(token: str) -> tuple[str, str]:
    """``(output file, flag file)`` under /tmp for a sampler token."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", token)
    base = f"/tmp/nasplan-sample-{safe}"
    return f"{base}.txt", f"{base}.run"


# where the loop finds its cgroup's memory files: cgroup v2's unified tree, v1's memory/ below it
CGROUP_ROOT = "/sys/fs/cgroup"


def loop_text(out: str, flag: str, limit: int, cgroup_root: str = CGROUP_ROOT) -> str:
    """The sampling loop itself: a sample into ``out`` every SAMPLE_INTERVAL_S while ``flag``
    exists, at most ``limit`` samples; its cgroup's memory files under ``cgroup_root``."""
    return _assign({"out": out, "flag": flag, "limit": limit, "cg_root": cgroup_root}) + _LOOP


def _start_body(token: str, max_s: float) -> str:
    """The loop's start (needs PRELUDE before it); prints its PID."""
    out, flag = paths(token)
    loop = loop_text(out, flag, max(1, round(max_s / SAMPLE_INTERVAL_S)))
    return _assign({"out": out, "flag": flag, "loop": loop}) + _START


def start_script(token: str, *, max_s: float = MAX_SAMPLING_S) -> str:
    """POSIX sh that starts the detached sampling loop; prints its PID."""
    return PRELUDE + _start_body(token, max_s)


def stop_script(token: str, pid: int) -> str:
    """POSIX sh that stops the loop, prints what it sampled, removes its files."""
    out, flag = paths(token)
    return _assign({"out": out, "flag": flag, "pid": pid}) + _STOP


# Riding along in a test's own round trip on the host (a subshell: its variables stay its own;
# the script it rides in has the host lock's PRELUDE), its output in sections of its own: the
# loop's PID (STARTED), what it saw (SECTION).
SECTION = "sampler"
STARTED = "sampler-started"


def start_text(token: str, *, max_s: float = MAX_SAMPLING_S) -> str:
    """Shell text for a script that has PRELUDE: starts the loop, prints the STARTED section
    with its PID."""
    return f"printf '@@nasplan:{STARTED}@@\\n'\n(\n{_start_body(token, max_s)})\n"


def stop_text(token: str, pid: int) -> str:
    """Shell text that stops the loop and prints what it sampled in its section (after whatever
    the script printed before, on a line of its own)."""
    return f"printf '\\n@@nasplan:{SECTION}@@\\n'\n(\n{stop_script(token, pid)})\n"


@dataclass(frozen=True)
class Ride:
    """A host's sampler riding in one script around the test's own work there (an iperf3
    client): ``before`` runs first and prints nothing (the work's output is its own); ``said``
    then prints the STARTED section; ``stop`` (run once the work ended well) stops the loop and
    prints SECTION. Each is "" when it has nothing to do."""

    before: str = ""
    said: str = ""
    stop: str = ""


NO_RIDE = Ride()
# what ``before`` printed, kept by the script for ``said``
_SAID = "nasplan_sampler_said"


def ride(
    token: str, *, start: bool, stop: bool, pid: int | None, max_s: float = MAX_SAMPLING_S
) -> Ride:
    """The texts of one riding script: ``start`` the loop in it; ``stop`` the loop in it, the
    one ``pid`` names or (None) the one this script started."""
    before = f"{_SAID}=$(\n{start_text(token, max_s=max_s)})\n" if start else ""
    said = f"printf '\\n%s\\n' \"${_SAID}\"\n" if start else ""
    if not stop:
        return Ride(before, said)
    if pid is not None:
        return Ride(before, said, stop_text(token, pid))
    out, flag = paths(token)
    # the PID is the last line of what ``before`` printed (none when the start failed)
    assign = _assign({"out": out, "flag": flag}) + f"pid=${{{_SAID}##*[!0-9]}}\n"
    stopped = f"printf '\\n@@nasplan:{SECTION}@@\\n'\n(\n{assign}{_STOP})\n"
    return Ride(before, said, stopped if start else "")


# Lines of an older sampler end after the memory field; a line without its "E" is incomplete.
_SAMPLE = re.compile(
    r"^S (?P<up>[0-9.]+) (?P<cpu>(?:[0-9]+ ){8})M (?P<mem>[0-9]*)"
    r"(?: D(?P<disks>(?: [^ :]+:[0-9]+:[0-9]+)*) N(?P<nics>(?: [^ :]+:[0-9]+:[0-9]+)*)"
    r"(?: P(?P<cores>(?: [0-9]+:[0-9]+)*))?(?: T(?P<temps>(?: [^ :]+:-?[0-9]+)*))? E)?\s*$",
    re.MULTILINE,
)
SECTOR_BYTES = 512
# Series points are taken this far apart (the loop samples twice as often).
SERIES_STEP_S = 1.0


@dataclass(frozen=True)
class _Row:
    up_s: float
    cpu: tuple[int, ...]
    mem_bytes: int | None
    disks: dict[str, tuple[int, int]]
    nics: dict[str, tuple[int, int]]
    cores: tuple[tuple[int, int], ...] = ()
    # NIC -> its hottest sensor, millidegrees C
    temps: tuple[tuple[str, int], ...] = ()


def _counters(text: str | None) -> dict[str, tuple[int, int]]:
    pairs = {}
    for item in (text or "").split():
        name, first, second = item.rsplit(":", 2)
        pairs[name] = (int(first), int(second))
    return pairs


def _cores(text: str | None) -> tuple[tuple[int, int], ...]:
    pairs = (item.split(":") for item in (text or "").split())
    return tuple((int(busy), int(idle)) for busy, idle in pairs)


def _temps(text: str | None) -> tuple[tuple[str, int], ...]:
    """`` eth1:54000 eth1:61000`` -> ``(("eth1", 61000),)``: each NIC's hottest sensor."""
    hottest: dict[str, int] = {}
    for item in (text or "").split():
        nic, value = item.rsplit(":", 1)
        hottest[nic] = max(int(value), hottest.get(nic, int(value)))
    return tuple(sorted(hottest.items()))


def _temperature_series(points: list[_Row]) -> dict[str, list[float | None]]:
    """NIC -> its temperature in degrees C at each point after the first; {} without sensors."""
    names = sorted({nic for row in points for nic, _ in row.temps})
    return {
        nic: [
            (dict(after.temps)[nic] / 1000 if nic in dict(after.temps) else None)
            for after in points[1:]
        ]
        for nic in names
    }


def _rows(raw: str) -> list[_Row]:
    return [
        _Row(
            float(m["up"]),
            tuple(int(v) for v in m["cpu"].split()),
            int(m["mem"]) * 1024 if m["mem"] else None,
            _counters(m["disks"]),
            _counters(m["nics"]),
            _cores(m["cores"]),
            _temps(m["temps"]),
        )
        for m in _SAMPLE.finditer(raw)
    ]


def _busy_percent(before: _Row, after: _Row) -> float | None:
    deltas = [b - a for a, b in zip(before.cpu, after.cpu, strict=True)]
    total = sum(deltas)
    return 100.0 * (total - deltas[3] - deltas[4]) / total if total > 0 else None


def _busiest_core_percent(before: _Row, after: _Row) -> float | None:
    """The busiest core's busy % between two samples; None without per-core counters (an
    older sampler's lines, or a core that came or went)."""
    if not before.cores or len(before.cores) != len(after.cores):
        return None
    busiest = None
    for (busy0, idle0), (busy1, idle1) in zip(before.cores, after.cores, strict=True):
        total = busy1 - busy0 + idle1 - idle0
        if total > 0:
            percent = 100.0 * (busy1 - busy0) / total
            busiest = percent if busiest is None else max(busiest, percent)
    return busiest


def _rate(before: int, after: int, seconds: float, factor: int = 1) -> float | None:
    """Counter delta per second; None when the counter went back (wrapped or reset)."""
    return (after - before) * factor / seconds if after >= before else None


def _pairs_series(
    points: list[_Row], field: str, keys: tuple[str, str], factor: int
) -> dict[str, dict[str, list[float | None]]]:
    """Per device: both counters as rates between consecutive points; idle devices left out."""
    names = sorted({name for row in points for name in getattr(row, field)})
    series: dict[str, dict[str, list[float | None]]] = {}
    for name in names:
        columns: tuple[list[float | None], list[float | None]] = ([], [])
        for before, after in itertools.pairwise(points):
            old, new = getattr(before, field).get(name), getattr(after, field).get(name)
            seconds = after.up_s - before.up_s
            for column, index in zip(columns, (0, 1), strict=True):
                known = old is not None and new is not None and seconds > 0
                column.append(_rate(old[index], new[index], seconds, factor) if known else None)
        if any(value for column in columns for value in column):
            series[name] = dict(zip(keys, columns, strict=True))
    return series


def series(raw: str, step_s: float = SERIES_STEP_S) -> dict[str, Any] | None:
    """Sampler output -> one point about every ``step_s`` (the rate over the step before it).

    ``{"t_s": [1.0, 2.0, ...] (since the first sample), "cpu_busy_percent": [...],
    "cpu_busiest_core_percent": [...] (None without per-core counters),
    "mem_available_bytes": [...], "disks": {"sda": {"read_bytes_per_second": [...],
    "write_bytes_per_second": [...]}}, "nics": {"eth0": {"rx_bytes_per_second": [...],
    "tx_bytes_per_second": [...]}}, "nic_temperature_c": {"eth1": [54.0, ...]}}`` (only with
    a NIC's hwmon sensor); disks and NICs that moved no byte are left out.
    None with fewer than two points.
    """
    rows = _rows(raw)
    if not rows:
        return None
    points = [rows[0]]
    for row in rows[1:]:
        # a quarter step of slack: the loop's 0.5 s sleeps drift by a few milliseconds each
        if row.up_s - points[-1].up_s >= step_s * 0.75:
            points.append(row)
    if len(points) < 2:
        return None
    first = points[0].up_s
    pairs = list(itertools.pairwise(points))
    return {
        "t_s": [round(after.up_s - first, 2) for _, after in pairs],
        "cpu_busy_percent": [_busy_percent(before, after) for before, after in pairs],
        "cpu_busiest_core_percent": [_busiest_core_percent(b, a) for b, a in pairs],
        "mem_available_bytes": [after.mem_bytes for _, after in pairs],
        "disks": _pairs_series(
            points, "disks", ("read_bytes_per_second", "write_bytes_per_second"), SECTOR_BYTES
        ),
        "nics": _pairs_series(points, "nics", ("rx_bytes_per_second", "tx_bytes_per_second"), 1),
        **({"nic_temperature_c": temps} if (temps := _temperature_series(points)) else {}),
    }


def parse(raw: str) -> dict[str, Any]:
    """Sampler output -> ``{"samples", "cpu_busy_percent_median", "cpu_busy_percent_max",
    "cpu_cores", "cpu_busiest_core_percent_median", "cpu_busiest_core_percent_max",
    "mem_available_bytes_min", "duration_s", "series"}`` (numbers None when there are too few
    samples; ``series``: see series(), present when the lines carry disk and NIC counters).

    CPU busy % is over all cores, between consecutive samples: 100 - idle - iowait; the busiest
    core's is the highest of each core's own between the same two samples (a single-threaded
    program at 100 % of one core of four reads 25 % over all of them).
    """
    rows = _rows(raw)
    busy = [
        value
        for before, after in itertools.pairwise(rows)
        if (value := _busy_percent(before, after)) is not None
    ]
    cores = [
        value
        for before, after in itertools.pairwise(rows)
        if (value := _busiest_core_percent(before, after)) is not None
    ]
    memory = [row.mem_bytes for row in rows if row.mem_bytes is not None]
    result: dict[str, Any] = {
        "samples": len(rows),
        "cpu_busy_percent_median": statistics.median(busy) if busy else None,
        "cpu_busy_percent_max": max(busy) if busy else None,
        "cpu_cores": len(rows[-1].cores) if rows and rows[-1].cores else None,
        "cpu_busiest_core_percent_median": statistics.median(cores) if cores else None,
        "cpu_busiest_core_percent_max": max(cores) if cores else None,
        "mem_available_bytes_min": min(memory) if memory else None,
        "duration_s": rows[-1].up_s - rows[0].up_s if len(rows) > 1 else None,
    }
    points = series(raw)
    if points is not None:
        result["series"] = points
    return result


def start(runner: Runner, token: str, *, max_s: float = MAX_SAMPLING_S) -> int | None:
    """Start sampling on one host; its PID, or None when it could not start (never raises)."""
    if not platforms.of(runner).posix_shell:  # the sampler is POSIX sh reading /proc
        return None
    try:
        result = runner.run_script(start_script(token, max_s=max_s), timeout_s=_TIMEOUT_S)
    except Exception:  # sampling is best effort: a test never fails for it
        return None
    text = result.stdout.strip()
    return int(text) if result.ok and text.isdigit() else None


def stop(runner: Runner, token: str, pid: int) -> dict[str, Any] | None:
    """Stop sampling on one host and parse what it saw; None when nothing came back."""
    try:
        result = runner.run_script(stop_script(token, pid), timeout_s=_TIMEOUT_S)
    except Exception:  # best effort, as in start()
        return None
    parsed = parse(result.stdout)
    return parsed if parsed["samples"] else None
