"""UDP with iperf3: the rate a test asks for, and what turns its loss, jitter or shortfall into
a warning.

A UDP test sends at the rate it asks (``bitrate``, iperf3's ``-b``: per stream, 1 Mbit/s a
stream when not given) whatever the path can carry; what arrived is judged against that rate,
not the link's. The thresholds are the ones docs/measurements.md (UDP) gives; each warning
names its numbers. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure.kind import Caveat
from nasplan.units import format_bits_per_second

# iperf3's own rate for UDP without -b: 1 Mbit/s a stream
IPERF3_DEFAULT_BITS_PER_SECOND = 1_000_000
# Over this share of datagrams lost, what was asked did not all arrive: voice and video
# guidance (ITU-T Y.1541's classes, vendors' VoIP budgets) put the usable limit at 1 %.
LOSS_PERCENT = 1.0
# Interarrival jitter (RFC 3550, iperf3's figure) over this: the same guidance's 30 ms.
JITTER_MS = 30.0
# The sender sent under this share of the rate asked: it could not send as fast (its CPU, its
# NIC), so the path was not asked what the plan meant to ask.
SENT_RATIO = 0.9


def asked_bits_per_second(params: Mapping[str, Any]) -> float | None:
    """The rate a UDP test asked of its path: ``bitrate`` (or iperf3's 1 Mbit/s) per stream,
    times the streams; None for ``bitrate: 0`` (unlimited: as fast as the sender can)."""
    rate = params.get("udp_bitrate_bits_per_second")
    if rate == 0:
        return None
    per_stream = rate if isinstance(rate, (int, float)) else IPERF3_DEFAULT_BITS_PER_SECOND
    return float(per_stream) * int(params.get("parallel") or 1)


def _median(reps: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in reps if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def caveats(
    reps: Sequence[Mapping[str, Any]], asked: float | None, udp_maximum: float | None
) -> list[Caveat]:
    """What the ok repetitions of a UDP test say a reader must be warned of: a rate asked over
    the path's ``udp_maximum``, loss over LOSS_PERCENT (all datagrams together), median jitter
    over JITTER_MS, and a median sent rate under SENT_RATIO of what the sender could have sent
    (``asked``, or the path's maximum when it asked more). Loss is put on the path only when
    the sender reached that rate: a sender that did not (its CPU, its host) is named instead."""
    found = []
    over = asked is not None and udp_maximum is not None and asked > udp_maximum
    packets = sum(r.get("packets") or 0 for r in reps)
    lost = sum(r.get("lost_packets") or 0 for r in reps)
    asked_text = format_bits_per_second(asked) if asked is not None else "as fast as it could"
    sent = _median(reps, "sent_bits_per_second")
    reachable = udp_maximum if over else asked
    held = reachable is not None and sent is not None and sent < SENT_RATIO * reachable
    if over:
        assert asked is not None and udp_maximum is not None
        found.append(
            Caveat(
                "⚠ asked over the UDP maximum",
                f"UDP at {asked_text} asks more than the path's UDP maximum "
                f"({format_bits_per_second(udp_maximum)}): the path cannot carry it, and what "
                "did not fit was lost",
            )
        )
    if packets and lost / packets * 100 > LOSS_PERCENT:
        loss = lost / packets * 100
        why = _loss_cause(sent if held else None, over)
        found.append(
            Caveat(
                f"⚠ loss {loss:.1f} %",
                f"UDP loss {loss:.1f} % ({lost} of {packets} datagrams) at {asked_text}, over "
                f"the {LOSS_PERCENT:g} % a stream of voice or video tolerates: {why}",
            )
        )
    jitter = _median(reps, "jitter_ms")
    if jitter is not None and jitter > JITTER_MS:
        found.append(
            Caveat(
                f"⚠ jitter {jitter:.1f} ms",
                f"UDP jitter {jitter:.1f} ms (the repetitions' median) is over {JITTER_MS:g} "
                "ms: datagrams arrived unevenly (queues filling on the path, or a busy receiver)",
            )
        )
    # asked over the path's maximum, the sender's own link holds it back to that maximum (said
    # above already): only a sender under it was held back by its host
    if held:
        assert asked is not None and sent is not None and reachable is not None
        found.append(_sent_under(sent, asked, reachable if over else None))
    return found


def _loss_cause(held_at: float | None, over: bool) -> str:
    """Why datagrams were lost: the sender held back by its host (``held_at``: the rate it
    reached), else more than the path carries (``over``), else the path or the receiver."""
    if held_at is not None:
        return (
            f"the sender reached only {format_bits_per_second(held_at)}, so its host (CPU) "
            "limited it, not the path; datagrams were lost on the way or by a receiving host "
            "too busy to take them"
        )
    if over:
        return "more than the path carries"
    return "the path, a switch or the receiving host dropped datagrams at that rate"


def _sent_under(sent: float, asked: float, maximum: float | None) -> Caveat:
    """The sender sent under what it asked (and under the path's UDP ``maximum`` when it asked
    more than that)."""
    of_path = (
        f" and {sent / maximum * 100:.0f} % of the path's UDP maximum "
        f"({format_bits_per_second(maximum)})"
        if maximum is not None
        else ""
    )
    return Caveat(
        "⚠ sent under the rate asked",
        f"the UDP sender sent {format_bits_per_second(sent)} (median), "
        f"{sent / asked * 100:.0f} % of the {format_bits_per_second(asked)} asked{of_path}: the "
        "client could not send faster (its CPU or NIC), so the path was not tested at the rate "
        "asked",
    )
