"""Latency under load (flent's core test): ping the far end for a moment before a measurement
(idle), then all through it (loaded), riding in the client's own script (no round trip of its
own); pure parsers of each reply's time (iputils and busybox ping) and the idle-vs-loaded
summary a repetition records.

A queue that fills under load (a switch's or NIC's buffer, a shaper's) shows as round-trip time
the loaded pings have and the idle ones have not: the increase of the median is how long a
packet waits in it.
"""

from __future__ import annotations

import re
import shlex
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.sections import split_sections

IDLE_COUNT = 5  # idle pings before the load, INTERVAL_S apart: about a second
INTERVAL_S = 0.2  # the shortest interval iputils allows a user who is not root
IDLE_SECTION, LOADED_SECTION = "ping-idle", "ping-loaded"
# iputils: "64 bytes from 198.18.0.1: icmp_seq=1 ttl=64 time=0.045 ms";
# busybox: "64 bytes from 198.18.0.1: seq=0 ttl=64 time=0.045 ms"
_TIME = re.compile(r"^\d+ bytes from .*\btime[=<]([0-9.]+) ?ms", re.MULTILINE)
# the repetition keys of run.json (schemas/run.schema.json) that fields() fills
KEYS = (
    "idle_rtt_median_ms",
    "idle_rtt_p95_ms",
    "loaded_rtt_median_ms",
    "loaded_rtt_p95_ms",
    "loaded_pings",
)


def reply_times_ms(raw: str) -> list[float]:
    """Each reply's round-trip time in ms, in order, of ping's output (iputils or busybox)."""
    return [float(found) for found in _TIME.findall(raw)]


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile (the nearest rank: a value that was measured), None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-95 * len(ordered) // 100))  # ceil(0.95 n)
    return ordered[rank - 1]


def ride_texts(ping_path: str, address: str, token: str, deadline_s: int) -> tuple[str, str]:
    """POSIX sh ``(before, after)`` around the client in its script: ``before`` pings
    IDLE_COUNT times (idle), then starts pinging in the background (at most ``deadline_s``
    seconds: it ends by itself whatever happens to the script) and prints nothing; ``after``
    stops it and prints both outputs in their sections (IDLE_SECTION, LOADED_SECTION)."""
    base = f"/tmp/nasplan-ping-{re.sub(r'[^A-Za-z0-9_.-]', '_', token)}"
    idle, loaded = shlex.quote(f"{base}-idle"), shlex.quote(f"{base}-loaded")
    ping = f"{shlex.quote(ping_path)} -n -i {INTERVAL_S}"
    target = shlex.quote(address)
    before = (
        f"{ping} -c {IDLE_COUNT} -W 1 {target} >{idle} 2>&1 </dev/null\n"
        f"{ping} -w {int(deadline_s)} {target} >{loaded} 2>&1 </dev/null &\n"
        "nasplan_loaded_ping=$!\n"
    )
    after = (
        'kill "$nasplan_loaded_ping" 2>/dev/null; wait "$nasplan_loaded_ping" 2>/dev/null\n'
        f"printf '\\n@@nasplan:{IDLE_SECTION}@@\\n'; cat {idle} 2>/dev/null\n"
        f"printf '\\n@@nasplan:{LOADED_SECTION}@@\\n'; cat {loaded} 2>/dev/null\n"
        f"rm -f {idle} {loaded}\n"
    )
    return before, after


def fields(output: str) -> dict[str, Any]:
    """The repetition's latency keys (KEYS) from a script's output with both sections; each
    None when its pings had no reply (no section: the script did not get that far)."""
    sections = split_sections(output)
    idle = reply_times_ms(sections.get(IDLE_SECTION, ""))
    loaded = reply_times_ms(sections.get(LOADED_SECTION, ""))
    return {
        "idle_rtt_median_ms": statistics.median(idle) if idle else None,
        "idle_rtt_p95_ms": p95(idle),
        "loaded_rtt_median_ms": statistics.median(loaded) if loaded else None,
        "loaded_rtt_p95_ms": p95(loaded),
        "loaded_pings": len(loaded),
    }


def summary(reps: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The test's idle and loaded RTT (median and p95: the medians of its repetitions') and the
    increase under load; None when no repetition has both."""
    both = [
        r
        for r in reps
        if r.get("idle_rtt_median_ms") is not None and r.get("loaded_rtt_median_ms") is not None
    ]
    if not both:
        return None

    def median(key: str) -> float | None:
        values = [float(r[key]) for r in both if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    found = {key: median(key) for key in KEYS if key != "loaded_pings"}
    idle, loaded = found["idle_rtt_median_ms"], found["loaded_rtt_median_ms"]
    idle95, loaded95 = found["idle_rtt_p95_ms"], found["loaded_rtt_p95_ms"]
    found["increase_ms"] = (
        round(loaded - idle, 3) if idle is not None and loaded is not None else None
    )
    found["p95_increase_ms"] = (
        round(loaded95 - idle95, 3) if idle95 is not None and loaded95 is not None else None
    )
    found["repetitions"] = len(both)
    return found


def text(found: Mapping[str, Any]) -> str:
    """``idle 0.31 ms (p95 0.52 ms), under load 10.8 ms (p95 12.1 ms): +10.5 ms``."""

    def ms(value: Any) -> str:
        return "–" if value is None else f"{float(value):.2f} ms"

    increase = found.get("increase_ms")
    plus = "" if increase is None else f": {'+' if increase >= 0 else ''}{float(increase):.2f} ms"
    return (
        f"idle {ms(found.get('idle_rtt_median_ms'))} (p95 {ms(found.get('idle_rtt_p95_ms'))}), "
        f"under load {ms(found.get('loaded_rtt_median_ms'))} "
        f"(p95 {ms(found.get('loaded_rtt_p95_ms'))}){plus}"
    )
