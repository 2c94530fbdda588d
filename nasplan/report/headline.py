"""Every kind's results in its own terms: one results row per test and direction, and the
headline (what was measured, the best and the worst, what limited it), from run.json alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S
from nasplan.measure import kinds
from nasplan.measure.kind import DASH, Readout
from nasplan.measure.series import Series
from nasplan.units import counted, format_bits_per_second, format_metric

OVER_MAXIMUM = "⚠ over the maximum"
WIDE_SPREAD = "⚠ wide spread"
SHORT = f"⚠ under {MIN_TRUSTED_S:g} s"


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


def kinds_text(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the run measured, one phrase per kind: ``TCP throughput with iperf3``, ..."""
    phrases: list[str] = []
    for test in tests:
        phrase = kinds.readout(test).phrase_of(test)
        if phrase not in phrases:
            phrases.append(phrase)
    return phrases


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
    kind = kinds.readout(test)
    found = kind.series(test)
    named = kind.named(test, found)
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
        if kind.short_durations(test, direction):  # set-up weighs on it: the Diagnosis says how
            flags.append(SHORT)
        flags += [c.mark for c in kind.caveats(test)]  # the Warnings say why
        if test.get("warnings"):
            flags.append(f"⚠ {counted(len(test['warnings']), 'warning')}")
        out.append(
            {
                "id": test["id"],
                "label": f"{test['id']} ({direction})" if named and direction else test["id"],
                "group": kind.group(test),
                "group_position": _position(kind, test),
                "lower_is_better": kind.lower_is_better,
                "measured": kind.measured(test, series) if series else kind.name,
                "flow": kind.flow(test, direction),
                "median": median,
                "median_text": DASH if median is None else format_metric(median, metric),
                "range_text": value_range(summary.get("min"), summary.get("max"), metric),
                "n": summary.get("n", 0),
                "maximum_text": _maximum(series, test) if series else DASH,
                "efficiency": series.efficiency if series else None,
                "over_maximum": bool(series and series.over_maximum),
                "also": kind.also(test, series) if series else DASH,
                "tells_also": kind.tells_also(test),
                "verdict": _verdict(test, direction),
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
        if row["verdict"] not in (None, "unknown"):
            verdicts.setdefault(row["verdict"], []).append(_short(row))
    return ", ".join(f"{verdict} ({', '.join(labels)})" for verdict, labels in verdicts.items())


def _position(kind: Readout, test: Mapping[str, Any]) -> tuple[int, int, str]:
    """Where a row's group is told: by its kind's place, then the group's in its kind."""
    group = kind.group(test)
    within = kind.groups.index(group) if group in kind.groups else len(kind.groups)
    return kinds.position(kind.name), within, group


def _verdict(test: Mapping[str, Any], direction: str | None) -> str | None:
    """The run's verdict on what limited this direction of a copy, None when it has none."""
    found = ((test.get("bottleneck") or {}).get(direction) or {}).get("verdict")
    return str(found) if found else None


def headline(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per kind the run measured: the best and the worst with where they ran
    and how close to the path's maximum, and (transfers, iSCSI) what limited them."""
    every = [row for test in tests for row in rows(test)]
    positions = {row["group"]: row["group_position"] for row in every}
    lines = []
    for group in sorted(positions, key=lambda g: positions[g]):
        of_group = [r for r in every if r["group"] == group]
        measured = [r for r in of_group if r["median"] is not None]
        if not measured:
            lines.append(f"{group}: no result.")
            continue
        lower = of_group[0]["lower_is_better"]
        ordered = sorted(measured, key=lambda r: r["median"], reverse=not lower)
        if len(ordered) == 1:
            text = f"{group}: {_told(ordered[0])}"
        else:
            best, worst = ("lowest", "highest") if lower else ("best", "worst")
            text = f"{group}: {best} {_told(ordered[0])}, {worst} {_told(ordered[-1])}"
        if any(r["tells_also"] for r in ordered):
            text += "; " + "; ".join(
                f"{_short(r)} {r['also']}" for r in ordered if r["also"] != DASH
            )
        limits = _limits(measured)
        lines.append(text + (f"; what limited it: {limits}" if limits else "") + ".")
    return lines
