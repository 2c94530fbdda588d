"""Findings on queues that fill under load (flent's "latency under load"): a test whose pings
took QUEUE_MS longer, and at least QUEUE_RATIO times as long, during its measurement as before.

A buffer on the path (a switch's, a NIC's, a shaper's) that holds a full link's packets makes
every other packet wait behind them: a call, a game, SMB's small requests wait that long behind
a copy ("bufferbloat").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.diagnose.common import finding
from nasplan.measure.kind import target_text

CAUSE = "queue-under-load"
# the increase a reader notices (a voice call's jitter buffer is some 20-40 ms), and that is not
# just a slower reply of a busy host
QUEUE_MS = 5.0
QUEUE_RATIO = 2.0


def findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One finding per test whose round-trip time rose under load past QUEUE_MS and
    QUEUE_RATIO (the medians of idle and loaded pings)."""
    found = []
    for test in run.get("tests") or []:
        under = test.get("latency_under_load") or {}
        # a transfer's each direction (a queue on the way in shows in writes only)
        each = under.get("directions") or {None: under}
        for direction, one in each.items():
            text = _text(test, one, direction)
            if text:
                evidence = {**one, "direction": direction, "queue_ms": QUEUE_MS,
                            "queue_ratio": QUEUE_RATIO}  # fmt: skip
                client = (test.get("params") or {}).get("client")
                found.append(finding(CAUSE, test["id"], client, text, evidence))
    return found


def _text(test: Mapping[str, Any], under: Mapping[str, Any], direction: str | None) -> str:
    """The finding's sentence, "" when the rise is under QUEUE_MS or QUEUE_RATIO."""
    idle, loaded = under.get("idle_rtt_median_ms"), under.get("loaded_rtt_median_ms")
    if idle is None or loaded is None:
        return ""
    increase = loaded - idle
    if increase < QUEUE_MS or loaded < QUEUE_RATIO * idle:
        return ""
    params, path = test.get("params") or {}, test.get("path") or {}
    client = params.get("client")
    where = f"{client} → {target_text(params, path)}" if client else target_text(params, path)
    p95 = under.get("loaded_rtt_p95_ms")
    during = f"while it {direction}s" if direction in ("write", "read") else "while the test ran"
    loaded_text = f"{loaded:.2f} ms (p95 {p95:.2f} ms)" if p95 is not None else f"{loaded:.2f} ms"
    return (
        f"the path {where} queues {increase:.1f} ms under load: its round-trip time was "
        f"{idle:.2f} ms idle and {loaded_text} {during}; a buffer on the path (a switch's, a "
        "NIC's, a shaper's) holds a full link's packets, and every other packet (a call, SMB's "
        "small requests) waits behind them"
    )
