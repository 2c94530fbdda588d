"""Every kind's results in its own terms: one results row per test and direction, and the
headline (what was measured, the best and the worst, what limited it), from run.json alone."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S, short_durations
from nasplan.directions import DIRECTED_KINDS, Series, series_of
from nasplan.units import format_bits_per_second, format_metric

DASH = "–"
OVER_MAXIMUM = "⚠ over the maximum"
WIDE_SPREAD = "⚠ wide spread"
SHORT = f"⚠ under {MIN_TRUSTED_S:g} s"
METHOD_LABELS = {"smb": "SMB", "nfs": "NFS", "rsync": "rsync", "copy": "copy", "iscsi": "iSCSI"}
# What each kind measures, as the opening sentence says it.
KIND_PHRASES = {
    "iperf3": "TCP throughput with iperf3",
    "transfer": "file transfers",
    "disk": "disk rate with fio",
    "iscsi": "iSCSI block transfers",
    "latency": "latency with ping",
    "ping-sweep": "the path MTU with a DF ping sweep",
}
# Headline groups in the order they are told; a lower value is better only for round trips.
GROUPS = (
    "iperf3 TCP",
    "iperf3 UDP",
    "File transfers",
    "iSCSI",
    "Disk",
    "Latency",
    "Path MTU",
)
LOWER_IS_BETTER = frozenset({"Latency"})


def value_range(low: float | None, high: float | None, metric: str) -> str:
    """``939.8–941.5 Mbit/s``: min–max written one way for every quantity; both in full when
    their units differ."""
    if low is None or high is None:
        return DASH
    low_text, high_text = format_metric(low, metric), format_metric(high, metric)
    low_number, _, low_unit = low_text.partition(" ")
    high_number, _, high_unit = high_text.partition(" ")
    if low_unit == high_unit:
        return f"{low_number}–{high_number} {high_unit}"
    return f"{low_text} – {high_text}"


def is_udp(test: Mapping[str, Any]) -> bool:
    """An iperf3 test run with ``protocol: udp``."""
    return str((test.get("params") or {}).get("protocol") or "tcp").lower() == "udp"


def group_of(test: Mapping[str, Any]) -> str:
    """The headline group of a test: ``iperf3 TCP``, ``File transfers``, ..."""
    kind = test.get("kind")
    if kind == "iperf3":
        return "iperf3 UDP" if is_udp(test) else "iperf3 TCP"
    return {
        "transfer": "File transfers",
        "iscsi": "iSCSI",
        "disk": "Disk",
        "latency": "Latency",
        "ping-sweep": "Path MTU",
    }.get(str(kind), str(kind))


def kinds_text(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the run measured, one phrase per kind: ``TCP throughput with iperf3``, ..."""
    phrases: list[str] = []
    for test in tests:
        kind = str(test.get("kind"))
        phrase = KIND_PHRASES.get(kind, kind)
        if kind == "iperf3" and is_udp(test):
            phrase = "UDP throughput with iperf3"
        if phrase not in phrases:
            phrases.append(phrase)
    return phrases


def _target(params: Mapping[str, Any], path: Mapping[str, Any]) -> str:
    target, address = params.get("target"), params.get("address")
    if not target or target == "?":
        nic, server = path.get("server_interface"), params.get("server")
        target = f"{server} {nic}" if server and nic else server
    text = str(target or address or DASH)
    return f"{text} ({address})" if address and address != target else text


def data_flow(test: Mapping[str, Any], direction: str | None) -> str:
    """Where the data went, in its direction: ``ws → nas.lan (198.18.0.10)``; a reverse
    iperf3 test or a read ``nas.lan (198.18.0.10) → ws``; a disk ``nas /var/tmp``."""
    params, path = test.get("params") or {}, test.get("path") or {}
    if test.get("kind") == "disk":
        return f"{params.get('host', DASH)} {params.get('path', '')}".strip()
    client, target = params.get("client"), _target(params, path)
    if not client:
        return target
    if test.get("kind") == "latency":
        return f"{client} ↔ {target}"
    if direction in ("reverse", "read"):
        return f"{target} → {client}"
    return f"{client} → {target}"


def _measured(test: Mapping[str, Any], series: Series) -> str:
    params, kind = test.get("params") or {}, test.get("kind")
    if kind == "iperf3":
        streams = params.get("parallel") or 1
        text = f"iperf3 {'UDP' if is_udp(test) else 'TCP'}, {streams} stream{'s' * (streams != 1)}"
        if is_udp(test) and params.get("udp_bitrate_bits_per_second"):
            text += f" at {format_bits_per_second(params['udp_bitrate_bits_per_second'])}"
        if params.get("bidir"):
            text += f", --bidir {series.direction}"
        return text
    if kind == "transfer":
        method = str(params.get("method") or "?")
        return f"{METHOD_LABELS.get(method, method)} {series.direction}"
    if kind == "iscsi":
        return f"iSCSI {series.direction}"
    if kind == "disk":
        return f"fio {series.direction} ({'direct' if params.get('direct') else 'buffered'})"
    if kind == "latency":
        return "ping round trip"
    if kind == "ping-sweep":
        return "path MTU (DF ping sweep)"
    return str(kind)


def _ok_reps(test: Mapping[str, Any], direction: str | None) -> list[Mapping[str, Any]]:
    reps = [r for r in test.get("repetitions") or [] if r.get("status") == "ok"]
    if test.get("kind") in DIRECTED_KINDS:
        reps = [r for r in reps if r.get("direction") == direction]
    return reps


def _median_of(reps: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in reps if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def _udp_also(reps: Sequence[Mapping[str, Any]]) -> str:
    packets = sum(r.get("packets") or 0 for r in reps)
    lost = sum(r.get("lost_packets") or 0 for r in reps)
    sent, jitter = _median_of(reps, "sent_bits_per_second"), _median_of(reps, "jitter_ms")
    parts = [f"sent {format_bits_per_second(sent)}" if sent is not None else None]
    parts.append(f"loss {lost / packets * 100:.2f} % ({lost} of {packets})" if packets else None)
    parts.append(f"jitter {jitter:.3f} ms" if jitter is not None else None)
    return "; ".join(p for p in parts if p)


def _also(test: Mapping[str, Any], series: Series) -> str:
    """What else a reader wants beside the median, in the kind's own terms."""
    kind, reps = test.get("kind"), _ok_reps(test, series.direction)
    if kind == "iperf3" and is_udp(test):
        return _udp_also(reps) or DASH
    if kind == "iperf3" and series.metric == "bits_per_second":
        retransmits = [r["retransmits"] for r in reps if r.get("retransmits") is not None]
        cpu = [_median_of(reps, f"cpu_{side}_percent") for side in ("client", "server")]
        parts = [f"retransmits {sum(retransmits)}" if retransmits else None]
        if any(c is not None for c in cpu):
            shown = [DASH if c is None else f"{c:.1f} %" for c in cpu]
            parts.append(f"CPU client / server {shown[0]} / {shown[1]}")
        return "; ".join(p for p in parts if p) or DASH
    if kind in ("transfer", "iscsi"):
        verdict = ((test.get("bottleneck") or {}).get(series.direction) or {}).get("verdict")
        return str(verdict) if verdict else DASH
    if kind == "latency":
        lost = [r["lost_percent"] for r in reps if r.get("lost_percent") is not None]
        probe = test.get("mtu_probe") or {}
        parts = [f"loss {max(lost):g} %" if lost else None]
        if probe:
            mark = "" if probe.get("ok") else " ⚠"
            parts.append(
                f"path MTU {probe.get('path_mtu_bytes')} of {probe.get('expected_mtu_bytes')}{mark}"
            )
        return "; ".join(p for p in parts if p) or DASH
    if kind == "ping-sweep":
        expected = (test.get("params") or {}).get("expect_mtu_bytes")
        return f"expected {expected} bytes" if expected else DASH
    return DASH


def _maximum(series: Series, test: Mapping[str, Any]) -> str:
    limit = series.theoretical_bits_per_second
    path = test.get("path") or {}
    if not limit or "per_second" not in series.metric:
        return DASH
    shown = format_metric(limit / 8, series.metric) if "bytes" in series.metric else None
    value = shown or format_bits_per_second(limit)
    speed = path.get("speed_bits_per_second")
    link = f"{speed / 10**9:g} Gbit/s" if speed and speed >= 10**9 else None
    if speed and not link:
        link = f"{speed / 10**6:g} Mbit/s"
    where = ", ".join(p for p in (link, f"MTU {path.get('mtu_bytes')}") if p)
    return f"{value} {series.limit_name} ({where})"


def rows(test: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The results rows of one test: one per direction (``write``/``read``, ``forward``/
    ``reverse``), or one for a test that has none or produced nothing."""
    found = series_of(test)
    named = len(found) > 1 or test.get("kind") in DIRECTED_KINDS
    out = []
    every: list[Series | None] = list(found) or [None]
    for series in every:
        summary = series.summary if series else test.get("summary") or {}
        metric = series.metric if series else str(summary.get("metric") or "bits_per_second")
        median = summary.get("median")
        flags = [WIDE_SPREAD] if summary.get("wide_spread") else []
        if series and series.over_maximum:
            flags.append(OVER_MAXIMUM)
        direction = series.direction if series else None
        if short_durations(test, direction):  # set-up weighs on it: the Diagnosis says how
            flags.append(SHORT)
        out.append(
            {
                "id": test["id"],
                "label": f"{test['id']} ({direction})" if named and direction else test["id"],
                "group": group_of(test),
                "measured": _measured(test, series) if series else str(test.get("kind")),
                "flow": data_flow(test, direction),
                "median": median,
                "median_text": DASH if median is None else format_metric(median, metric),
                "range_text": value_range(summary.get("min"), summary.get("max"), metric),
                "n": summary.get("n", 0),
                "maximum_text": _maximum(series, test) if series else DASH,
                "efficiency": series.efficiency if series else None,
                "over_maximum": bool(series and series.over_maximum),
                "also": _also(test, series) if series else DASH,
                "status": " ".join([str(test["status"]), *flags]),
                "series": series,
            }
        )
    return out


def _of_maximum(row: Mapping[str, Any]) -> str:
    series = row["series"]
    if row["efficiency"] is None or series is None:
        return ""
    digits = 1 if row["over_maximum"] else 0
    text = f", {row['efficiency'] * 100:.{digits}f} % of its {series.limit_name}"
    return text + (f" {OVER_MAXIMUM}" if row["over_maximum"] else "")


def _told(row: Mapping[str, Any]) -> str:
    return f"{row['median_text']} ({_short(row)}: {row['flow']}{_of_maximum(row)})"


def _short(row: Mapping[str, Any]) -> str:
    series = row["series"]
    direction = series.direction if series and row["label"] != row["id"] else None
    return f"{row['id']} {direction}" if direction else str(row["id"])


def _limits(rows_of_group: Sequence[Mapping[str, Any]]) -> str:
    verdicts: dict[str, list[str]] = {}
    for row in rows_of_group:
        if row["also"] not in (DASH, "unknown") and row["group"] in ("File transfers", "iSCSI"):
            verdicts.setdefault(row["also"], []).append(_short(row))
    return ", ".join(f"{verdict} ({', '.join(labels)})" for verdict, labels in verdicts.items())


def headline(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per kind the run measured: the best and the worst with where they ran
    and how close to the path's maximum, and (transfers, iSCSI) what limited them."""
    every = [row for test in tests for row in rows(test)]
    groups = [g for g in GROUPS if any(r["group"] == g for r in every)]
    groups += sorted({r["group"] for r in every} - set(GROUPS))
    lines = []
    for group in groups:
        measured = [r for r in every if r["group"] == group and r["median"] is not None]
        if not measured:
            lines.append(f"{group}: no result.")
            continue
        lower = group in LOWER_IS_BETTER
        ordered = sorted(measured, key=lambda r: r["median"], reverse=not lower)
        if len(ordered) == 1:
            text = f"{group}: {_told(ordered[0])}"
        else:
            best, worst = ("lowest", "highest") if lower else ("best", "worst")
            text = f"{group}: {best} {_told(ordered[0])}, {worst} {_told(ordered[-1])}"
        if group == "iperf3 UDP":
            text += "; " + "; ".join(
                f"{_short(r)} {r['also']}" for r in ordered if r["also"] != DASH
            )
        limits = _limits(measured)
        lines.append(text + (f"; what limited it: {limits}" if limits else "") + ".")
    return lines
