"""Per-stream findings: a TCP stream held by its window, and 1 vs N streams on one path.

One TCP stream moves at most one window per round trip: rate <= window / RTT. iperf3 keeps each
stream's largest congestion window, the receiver's largest advertised window and its RTTs
(``repetitions[].per_stream``); the window that would fill the link is link rate x RTT. Two
iperf3 tests (or matrix cells) of one path that differ only in ``parallel`` say whether the
aggregate scales with the streams: then each stream is limited, not the link.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import BOUND_RATIO
from nasplan.measure import kinds
from nasplan.measure.findings import finding
from nasplan.measure.kind import OneCore
from nasplan.units import format_bits_per_second

WINDOW_CAUSE = "stream-window"
SCALING_CAUSE = "streams-scaling"
# A stream moving at least this share of what its largest window allows at its mean RTT
# (window / mean RTT, the lower end of the range the finding gives) is held by its window: the
# window in flight varies below its largest, and the RTT is in whole microseconds.
# docs/measurements.md#what-limits-one-stream-one-core says the same.
WINDOW_HELD_RATIO = 0.5
# N streams giving at least this share of N times one stream's rate scale with the streams.
SCALES_RATIO = 0.8
# Less than this gain from more streams: they do not help.
NO_GAIN_RATIO = 1.15
# A mean RTT this many times one stream's, with more streams: they queue on something shared.
RTT_GREW_RATIO = 1.5
# Parameters that make two iperf3 tests the same path and workload but for their streams.
_SAME = ("server", "client", "address", "reverse", "bidir", "protocol", "window_bytes", "mss_bytes",
         "zerocopy", "udp_bitrate_bits_per_second")  # fmt: skip


def _bytes_text(value: float) -> str:
    return f"{value / 1024:.1f} KiB" if value < 1024**2 else f"{value / 1024**2:.1f} MiB"


def _rtt_text(microseconds: float) -> str:
    return f"{microseconds:.0f} µs" if microseconds < 1000 else f"{microseconds / 1000:.2f} ms"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _median_rep(test: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ok repetition with per-stream figures whose rate is nearest the test's median."""
    reps: list[Mapping[str, Any]] = [
        r
        for r in test.get("repetitions") or []
        if r.get("status") == "ok" and r.get("per_stream") and r.get("bits_per_second")
    ]
    median = (test.get("summary") or {}).get("median")
    if not reps or not isinstance(median, (int, float)):
        return None
    return min(reps, key=lambda r: abs(float(r["bits_per_second"]) - median))


def _stream_rows(rep: Mapping[str, Any]) -> list[tuple[float, str, float, float, float]]:
    """(window bytes, which window, best RTT µs, mean RTT µs, rate) of each stream with them."""
    rows = []
    for stream in rep["per_stream"]:
        windows = {
            kind: stream[key]
            for kind, key in (
                ("congestion", "max_snd_cwnd_bytes"),
                ("receiver", "max_snd_wnd_bytes"),
            )
            if stream.get(key)
        }
        mean, rate = stream.get("mean_rtt_us"), stream.get("bits_per_second")
        if windows and mean and rate:
            kind = min(windows, key=lambda k: windows[k])
            best = float(stream.get("min_rtt_us") or mean)
            rows.append((float(windows[kind]), kind, best, float(mean), float(rate)))
    return rows


def window_limit(test: Mapping[str, Any]) -> dict[str, Any] | None:
    """What bounds each stream of ``test`` (its median repetition), medians over its streams:
    ``{"streams", "window_bytes", "window_kind", "min_rtt_us", "rtt_us" (mean),
    "stream_bits_per_second", "best_bits_per_second" (window / best RTT),
    "window_bits_per_second" (window / mean RTT), "link_bits_per_second", "fill_window_bytes"
    (link rate x best RTT, a stream's share), "held_share" (the stream's rate over window /
    mean RTT), "held"}``, or None without per-stream figures or a TCP maximum. ``held``: at
    the RTT it saw the window cannot fill the link, and the stream moved at least
    WINDOW_HELD_RATIO of what the window allows at that RTT (a busy machine stretches every
    round trip, and a stream held by its window slows down with it)."""
    rep, link = _median_rep(test), (test.get("path") or {}).get("theoretical_bits_per_second")
    if rep is None or not link:
        return None
    rows = _stream_rows(rep)
    if not rows:
        return None
    count, link = len(rows), float(link)
    best = sum(r[0] * 8 / (r[2] / 1e6) for r in rows)  # every stream's window / RTT
    seen = sum(r[0] * 8 / (r[3] / 1e6) for r in rows)
    measured = float(rep["bits_per_second"])
    min_rtt = _median([r[2] for r in rows])
    stream = _median([r[4] for r in rows])
    share = stream / (seen / count) if seen else 0.0
    return {
        "streams": count,
        "window_bytes": _median([r[0] for r in rows]),
        "window_kind": statistics.mode(r[1] for r in rows),
        "min_rtt_us": min_rtt,
        "rtt_us": _median([r[3] for r in rows]),
        "stream_bits_per_second": stream,
        "best_bits_per_second": best / count,
        "window_bits_per_second": seen / count,
        "link_bits_per_second": link,
        "fill_window_bytes": link * min_rtt / 1e6 / 8 / count,
        "held_share": share,
        "held": seen < link * 0.95 and share >= WINDOW_HELD_RATIO and measured < BOUND_RATIO * link,
    }


def _range(low: str, high: str) -> str:
    """``8.42–9.27 Gbit/s`` from ``8.42 Gbit/s`` and ``9.27 Gbit/s``; one value when equal."""
    if low == high:
        return low
    (low_value, low_unit), high_unit = low.split(" ", 1), high.split(" ", 1)[1]
    return f"{low_value}–{high}" if low_unit == high_unit else f"{low}–{high}"


def _window_text(limit: Mapping[str, Any]) -> str:
    """``the receiver's advertised window (11.3 KiB per round trip of 10–11 µs: 8.42–9.27
    Gbit/s a stream)``."""
    which = "the receiver's advertised" if limit["window_kind"] == "receiver" else "its congestion"
    rtt = _range(_rtt_text(limit["min_rtt_us"]), _rtt_text(limit["rtt_us"]))
    rates = _range(
        format_bits_per_second(limit["window_bits_per_second"]),
        format_bits_per_second(limit["best_bits_per_second"]),
    )
    return (
        f"{which} window ({_bytes_text(limit['window_bytes'])} per round trip of {rtt}: "
        f"{rates} a stream)"
    )


def _window_finding(test: Mapping[str, Any], limit: Mapping[str, Any]) -> dict[str, Any]:
    count = limit["streams"]
    rate = format_bits_per_second(limit["stream_bits_per_second"])
    window = test.get("params", {}).get("window_bytes")
    plan = f"; the plan's `window:` is {_bytes_text(window)}" if window else ""
    text = (
        f"{f'each of its {count} streams' if count > 1 else 'its stream'} is held by "
        f"{_window_text(limit)}, measured {rate} a stream "
        f"({limit['held_share'] * 100:.0f} % of what that window allows at its mean round "
        f"trip); filling the {format_bits_per_second(limit['link_bits_per_second'])} TCP "
        f"maximum takes {_bytes_text(limit['fill_window_bytes'])} a stream (link rate × its "
        f"best round trip){plan}: a larger window or more streams."
    )
    return finding(WINDOW_CAUSE, test["id"], test["params"].get("client"), text, dict(limit))


def _key(test: Mapping[str, Any]) -> tuple[Any, ...]:
    params = test.get("params") or {}
    cell = {k: v for k, v in (test.get("cell") or {}).items() if k != "parallel"}
    return (test.get("base_id"), sorted(cell.items()), *(params.get(k) for k in _SAME))


def _candidates(run: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Ok TCP iperf3 tests with a median, grouped by path and workload but their streams."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for test in run.get("tests") or []:
        if kinds.readout(test).streams_comparable(test):
            groups.setdefault(repr(_key(test)), []).append(test)
    return groups


def _one_stream_limit(run: Mapping[str, Any], test: Mapping[str, Any], one_core: OneCore) -> str:
    """What limits one stream of ``test``: its window, one core (``one_core``: diagnose's
    reading of a host's busiest core), or neither as far as known."""
    limit = window_limit(test)
    if limit is not None and limit["held"]:
        return f"one stream is held by {_window_text(limit)}"
    params = test.get("params") or {}
    for host in (params.get("client"), params.get("server")):
        held = one_core(run, test, str(host))
        if held is not None:
            return f"one stream is held by one CPU core ({held})"
    if limit is not None:
        return f"not {_window_text(limit)} nor, as far as sampled, one CPU core"
    return "its window or one CPU core (no per-stream figures to tell which)"


def _shared_limit(base: Mapping[str, Any], more: Mapping[str, Any]) -> str:
    """Why streams that do not add up are held by something they share."""
    before, after = window_limit(base), window_limit(more)
    if before and after and after["rtt_us"] >= RTT_GREW_RATIO * before["rtt_us"]:
        return (
            f"each stream's round trip grew from {_rtt_text(before['rtt_us'])} to "
            f"{_rtt_text(after['rtt_us'])} with them, so they wait on something they share (a "
            "host's CPU, a queue on the path)"
        )
    return (
        "the limit is shared by every stream (a host's CPU, its NIC or the path), not one "
        "stream's window"
    )


def _scaling_finding(
    run: Mapping[str, Any], base: Mapping[str, Any], more: Mapping[str, Any], one_core: OneCore
) -> dict[str, Any]:
    params = base.get("params") or {}
    n0, n1 = int(params.get("parallel") or 1), int(more["params"].get("parallel") or 1)
    r0, r1 = float(base["summary"]["median"]), float(more["summary"]["median"])
    found = (more.get("path") or {}).get("theoretical_bits_per_second")
    link = float(found) if isinstance(found, (int, float)) and found > 0 else None
    ratio, ideal = r1 / r0, n1 / n0
    at_link = link is not None and r1 >= BOUND_RATIO * link
    of_link = f", {r1 / link * 100:.0f} % of the TCP maximum" if link else ""
    head = (
        f"{base['id']} vs {more['id']}: {n1} streams ×{ratio:.2f} of {n0} "
        f"({format_bits_per_second(r0)} → {format_bits_per_second(r1)}{of_link})"
    )
    if ratio >= SCALES_RATIO * ideal and not at_link:
        verdict = "each stream is limited (its window or one CPU core), not the link"
    elif ratio >= NO_GAIN_RATIO and at_link:
        verdict = f"one stream is limited, {n1} reach the link"
    elif ratio < NO_GAIN_RATIO and at_link:
        verdict = "the link is the limit"
    elif ratio < NO_GAIN_RATIO:
        verdict = "more streams do not help: " + _shared_limit(base, more)
    else:
        verdict = "more streams help in part: one stream is limited, and something shared too"
    text = f"{head}: {verdict}"
    if ratio >= NO_GAIN_RATIO:
        text += f"; {_one_stream_limit(run, base, one_core)}"
    text += "."
    evidence = {
        "tests": [base["id"], more["id"]],
        "streams": [n0, n1],
        "bits_per_second": [r0, r1],
        "ratio": ratio,
        "link_bits_per_second": link,
        "at_link": at_link,
    }
    return finding(SCALING_CAUSE, more["id"], params.get("client"), text, evidence)


def findings(run: Mapping[str, Any], one_core: OneCore) -> list[dict[str, Any]]:
    """Each held stream's window, then each 1-vs-N pair of one path (the iperf3 kind's own
    causes: ``Readout.causes``)."""
    found = []
    for test in run.get("tests") or []:
        if test.get("status") == "ok":  # (iperf3 alone records per-stream figures)
            limit = window_limit(test)
            if limit is not None and limit["held"]:
                found.append(_window_finding(test, limit))
    for tests in _candidates(run).values():
        by_streams = {int((t.get("params") or {}).get("parallel") or 1): t for t in tests}
        if len(by_streams) < 2:
            continue
        fewest = min(by_streams)
        found.extend(
            _scaling_finding(run, by_streams[fewest], by_streams[n], one_core)
            for n in sorted(by_streams)
            if n != fewest
        )
    return found
