"""Resource sampling during a test: one detached POSIX-sh loop per host, a pure parser.

The loop reads /proc/stat and /proc/meminfo every SAMPLE_INTERVAL_S with shell builtins only
(no process per sample, so it does not distort what it measures) and appends one line per
sample to a /tmp file. It stops when its flag file is removed, when the run's lease on the host
runs out (nasplan gone: see nasplan.hostlock), or by itself after ``max_s``.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shlex
import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasplan import shell
from nasplan.hostlock import PRELUDE
from nasplan.hosts import in_parallel
from nasplan.runner import Runner

if TYPE_CHECKING:
    from nasplan.hosts import HostSession

SAMPLE_INTERVAL_S = 0.5
MAX_SAMPLING_S = 3600
_TIMEOUT_S = 15.0

# Each line: "S <uptime s> <cpu jiffies: user nice system idle iowait irq softirq steal> M <kB>".
# `sleep 0.5` fails on a busybox built without FLOAT_DURATION: fall back to whole seconds.
# $1: the run's lease file (nasplan.hostlock): the loop ends once nasplan stopped renewing it.
_LOOP = """\
ticks=0
lease=${1:-}
while [ -e "$flag" ] && [ "$ticks" -lt "$limit" ]; do
  read -r up _ < /proc/uptime
  if [ -n "$lease" ] && [ -f "$lease" ]; then
    read -r until < "$lease" || until=0
    case $until in ''|*[!0-9]*) until=0 ;; esac
    [ "${up%.*}" -lt "$until" ] || { rm -f "$out" "$flag"; break; }
  fi
  read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
  mem=
  while read -r key value _; do
    case $key in MemAvailable:) mem=$value; break ;; esac
  done < /proc/meminfo
  echo "S $up $user $nice $system $idle ${iowait:-0} ${irq:-0} ${softirq:-0} ${steal:-0} M $mem"
  if sleep 0.5 2>/dev/null; then ticks=$((ticks + 1)); else sleep 1; ticks=$((ticks + 2)); fi
done >> "$out"
"""

_START = """\
: > "$out" && : > "$flag" || exit 1
nohup sh -c "$loop" nasplan-sampler "$nasplan_lease" >/dev/null 2>&1 </dev/null &
nasplan_register "$!" "$out" "$out" "$flag"
echo "$!"
"""

# The loop is ours (started by _START): end it now rather than wait out its interval; a line it
# was writing is incomplete and ignored by the parser.
_STOP = """\
rm -f "$flag"
kill "$pid" 2>/dev/null
cat "$out" 2>/dev/null
rm -f "$out"
"""

_SAMPLE = re.compile(
    r"^S (?P<up>[0-9.]+) (?P<cpu>(?:[0-9]+ ){8})M (?P<mem>[0-9]*)\s*$", re.MULTILINE
)


def _assign(values: Mapping[str, str | int]) -> str:
    return "".join(f"{name}={shlex.quote(str(value))}\n" for name, value in values.items())


def paths(token: str) -> tuple[str, str]:
    """``(output file, flag file)`` under /tmp for a sampler token."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", token)
    base = f"/tmp/nasplan-sample-{safe}"
    return f"{base}.txt", f"{base}.run"


def start_script(token: str, *, max_s: float = MAX_SAMPLING_S) -> str:
    """POSIX sh that starts the detached sampling loop; prints its PID."""
    out, flag = paths(token)
    limit = max(1, round(max_s / SAMPLE_INTERVAL_S))
    loop = _assign({"out": out, "flag": flag, "limit": limit}) + _LOOP
    return _assign({"out": out, "flag": flag, "loop": loop}) + PRELUDE + _START


def stop_script(token: str, pid: int) -> str:
    """POSIX sh that stops the loop, prints what it sampled, removes its files."""
    out, flag = paths(token)
    return _assign({"out": out, "flag": flag, "pid": pid}) + _STOP


def parse(raw: str) -> dict[str, Any]:
    """Sampler output -> ``{"samples", "cpu_busy_percent_median", "cpu_busy_percent_max",
    "mem_available_bytes_min", "duration_s"}`` (numbers None when there are too few samples).

    CPU busy % is over all cores, between consecutive samples: 100 - idle - iowait.
    """
    rows = [
        (
            float(m["up"]),
            [int(v) for v in m["cpu"].split()],
            int(m["mem"]) * 1024 if m["mem"] else None,
        )
        for m in _SAMPLE.finditer(raw)
    ]
    busy: list[float] = []
    for (_, before, _), (_, after, _) in itertools.pairwise(rows):
        deltas = [b - a for a, b in zip(before, after, strict=True)]
        total = sum(deltas)
        if total > 0:
            busy.append(100.0 * (total - deltas[3] - deltas[4]) / total)
    memory = [mem for _, _, mem in rows if mem is not None]
    return {
        "samples": len(rows),
        "cpu_busy_percent_median": statistics.median(busy) if busy else None,
        "cpu_busy_percent_max": max(busy) if busy else None,
        "mem_available_bytes_min": min(memory) if memory else None,
        "duration_s": rows[-1][0] - rows[0][0] if len(rows) > 1 else None,
    }


def start(runner: Runner, token: str, *, max_s: float = MAX_SAMPLING_S) -> int | None:
    """Start sampling on one host; its PID, or None when it could not start (never raises)."""
    if shell.of(runner).is_windows:  # the sampler reads /proc: Linux only
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


@contextlib.contextmanager
def sampling(
    sessions: Mapping[str, HostSession],
    hosts: Sequence[str],
    token: str,
    *,
    max_s: float = MAX_SAMPLING_S,
) -> Iterator[dict[str, dict[str, Any] | None]]:
    """Sample every ready host of ``hosts`` while the block runs; stopped in ``finally``.

    Yields a dict filled on exit: host -> parse() result (None when sampling failed there),
    for run.json's ``resources`` of the test.
    """
    started: dict[str, tuple[Runner, int]] = {}
    collected: dict[str, dict[str, Any] | None] = {}

    def start_one(name: str) -> None:
        session = sessions.get(name)
        if session is None or not session.ready or session.runner is None:
            return
        pid = start(session.runner, f"{token}-{name}", max_s=max_s)
        if pid is None:
            collected[name] = None
        else:
            started[name] = (session.runner, pid)

    def stop_one(name: str) -> None:
        runner, pid = started[name]
        collected[name] = stop(runner, f"{token}-{name}", pid)

    # Hosts at once: sampling must not add its round trips host after host to every test.
    in_parallel(dict.fromkeys(hosts), start_one)
    try:
        yield collected
    finally:
        in_parallel(list(started), stop_one)
