"""One cell of the write-up's table (report/pivot.py): a test's direction at its coordinates,
its median, min–max and n, its ratio to the baseline cell with compare's significance mark (or
why it has none), a mark when its repetitions or its baseline's were too short to trust, and
what limited a transfer, as numbers and as the words the cell shows. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import MIN_TRUSTED_S, summarize
from nasplan.units import format_metric, format_other

DASH = "–"
NOT_RUN = "not run"
# a cell with a repetition under analysis.MIN_TRUSTED_S (as the results table flags it), and a
# ratio built on a baseline that has one
SHORT = f"⚠ under {MIN_TRUSTED_S:g} s"
SHORT_BASE = f"⚠ baseline under {MIN_TRUSTED_S:g} s"
# The significance marks after a ratio (compare/stats.py's verdicts), words and symbols only:
# a table must read the same in GitHub's light and dark themes and in a terminal.
MARKS = {
    "better": "*",
    "worse": "*",
    "not significant": " n.s.",
    "within noise": " ≈",
    "too few repetitions to tell": " n too small",
}


@dataclass(frozen=True)
class Point:
    """One direction of one test record, at its coordinates (dimension -> value text)."""

    coordinates: Mapping[str, str]
    test: Mapping[str, Any]
    direction: str | None
    metric: str
    values: tuple[float, ...]
    # ``duration_s`` of its ok repetitions under analysis.MIN_TRUSTED_S (its kind's judgement)
    short: tuple[float, ...] = ()


def metric_text(value: float | None, metric: str) -> str:
    """A value in its metric's unit: ``9.41 Gbit/s``, ``294.6 MiB/s`` (file and disk rates in
    MiB/s, 2^20 bytes/s, as everywhere in the report), ``0.250 ms``, ``12.30 s``."""
    if value is None:
        return DASH
    if "bytes_per_second" in metric:
        return format_metric(value, "bytes_per_second")
    if "bits_per_second" in metric or metric.endswith(("_ms", "_bytes")):
        return format_metric(value, metric)
    if metric.endswith("_s"):
        return f"{value:.2f} s"
    return format_other(value, metric)


def _range(low: float, high: float, metric: str) -> str:
    """``220.5–364.6`` when both share the median's unit (named once, by the median)."""
    low_text, high_text = metric_text(low, metric), metric_text(high, metric)
    low_number, _, low_unit = low_text.partition(" ")
    high_number, _, high_unit = high_text.partition(" ")
    return f"{low_number}–{high_number}" if low_unit == high_unit else f"{low_text}–{high_text}"


def _bottleneck(point: Point) -> str | None:
    """The run's verdict on what limited a transfer's or iSCSI run's direction."""
    if point.direction is None:
        return None
    found = ((point.test.get("bottleneck") or {}).get(point.direction) or {}).get("verdict")
    return str(found) if found else None


def _no_ratio(point: Point, base: Sequence[Point]) -> str | None:
    """Why ``point`` has no ratio to the one baseline point in ``base`` (None when it has
    one), in the words the baseline's own cell shows (a missing one: ``not run``)."""
    if not base:
        return f"baseline {NOT_RUN}"
    if len(base) > 1:
        return f"{len(base)} baseline cells"
    found = base[0]
    if not found.values:
        status = str(found.test.get("status") or NOT_RUN)
        return f"baseline {status}" if status != "ok" else "baseline has no result"
    if found.metric != point.metric:
        return "baseline in another unit"
    if not summarize(found.values)["median"]:
        return "baseline median 0"
    return None


def _versus(point: Point, base: Point) -> dict[str, Any]:
    """Ratio of the medians and compare's verdict of ``point`` against the baseline's values
    (both have values and the baseline's median is not 0: ``_no_ratio`` said None)."""
    # compare/ imports the report's filters: imported here, not at the top, so that either
    # package can be imported first
    from nasplan.significance import higher_is_better, verdict

    found = verdict(
        list(base.values), list(point.values), higher_is_better=higher_is_better(point.metric)
    )
    median, base_median = summarize(point.values)["median"], summarize(base.values)["median"]
    return {
        "ratio": median / base_median,
        "verdict": found.verdict,
        "rule": found.rule,
        "p_value": found.p_value,
        "short_baseline": list(base.short),
    }


@dataclass(frozen=True)
class Baseline:
    """What a cell is compared with: ``label`` (``""`` for the table's baseline, else
    ``link=p2p25``), its ``points``, whether the cell ``is_itself`` that baseline, the
    dimensions its test ``lacks`` of those the baseline names, and ``each``: the dimensions its
    test lacks that the baseline's cells have, so that it is compared with each of them (a
    ratio per point, named by its values of ``each``)."""

    label: str
    points: tuple[Point, ...]
    is_itself: bool = False
    lacks: tuple[str, ...] = ()
    each: tuple[str, ...] = ()


def ratios(point: Point, base: Baseline) -> list[dict[str, Any]]:
    """``point`` against ``base``: one entry (``label``, then ``baseline: True``, a
    ``no_ratio`` reason, or ``ratio``, ``verdict``, ``rule``, ``p_value``, ``short_baseline``),
    or one per baseline point named by its values of ``base.each``."""
    if base.is_itself:
        return [{"label": base.label, "baseline": True}]
    if base.lacks:
        return [{"label": base.label, "no_ratio": f"no {', '.join(base.lacks)}"}]
    if base.each and len(base.points) > 1:
        found = []
        for one in base.points:
            named = "/".join(f"{d}={one.coordinates.get(d, DASH)}" for d in base.each)
            label = "/".join(p for p in (base.label, named) if p)
            found += ratios(point, Baseline(label, (one,)))
        return found
    reason = _no_ratio(point, base.points)
    if reason is not None:
        return [{"label": base.label, "no_ratio": reason}]
    return [{"label": base.label, **_versus(point, base.points[0])}]


def _ratio_text(entry: Mapping[str, Any]) -> str:
    """`` ×2.53* of volume=hdd``, `` baseline``, `` no ratio of link=p2p25: baseline failed``."""
    of = f" of {entry['label']}" if entry["label"] else ""
    if entry.get("baseline"):
        return f" baseline{of}"
    if entry.get("no_ratio"):
        return f" no ratio{of}: {entry['no_ratio']}"
    return f" ×{entry['ratio']:.2f}{MARKS.get(entry['verdict'] or '', '')}{of}"


def cell(here: Sequence[Point], base: Baseline, against: Sequence[Baseline] = ()) -> dict[str, Any]:
    """One cell: its numbers (median, min, max, n, values; ``short``: its repetitions under
    analysis.MIN_TRUSTED_S) and its text, against the table's ``base`` (``ratio``, ``verdict``,
    ``rule``, ``p_value``, ``short_baseline``: the short repetitions of what the ratio is built
    on; or ``baseline``; or ``no_ratio``: why it has none; or, against each of several cells,
    ``ratios``) and against each further baseline of ``against`` (``against``: an entry each, as
    ``ratios`` gives them; the text ``×2.53 of volume=hdd``). A ratio built on a baseline with
    a short repetition is marked (``⚠ baseline under 3 s``)."""
    cell: dict[str, Any] = {
        "status": NOT_RUN, "metric": None, "n": 0, "median": None, "min": None, "max": None,
        "values": [], "ratio": None, "verdict": None, "rule": None, "p_value": None,
        "baseline": base.is_itself, "no_ratio": None, "ratios": [], "short": [],
        "short_baseline": [], "bottleneck": None, "text": NOT_RUN, "against": [],
    }  # fmt: skip
    if len(here) > 1:
        ids = ", ".join(sorted({str(p.test["id"]) for p in here}))
        return {**cell, "status": "ambiguous", "text": f"{len(here)} results ({ids})"}
    if not here:
        return cell
    point = here[0]
    summary = summarize(point.values, point.metric)
    status = str(point.test.get("status") or "ok")
    cell.update(
        status=status, metric=point.metric, n=summary["n"], median=summary["median"],
        min=summary["min"], max=summary["max"], values=list(point.values),
        bottleneck=_bottleneck(point), short=list(point.short),
    )  # fmt: skip
    if not point.values:
        cell["text"] = status if status != "ok" else "no result"
        return cell
    text = metric_text(summary["median"], point.metric)
    main = ratios(point, base)
    if len(main) > 1:
        cell["ratios"] = main
    elif main[0].get("no_ratio"):
        cell["no_ratio"] = main[0]["no_ratio"]
    elif "ratio" in main[0]:
        cell.update({k: v for k, v in main[0].items() if k != "label"})
    text += "".join(_ratio_text(entry) for entry in main)
    cell["against"] = [entry for one in against for entry in ratios(point, one)]
    # the baseline of further ones too: ``baseline, also of link=p2p25``, not ``baseline
    # baseline of ...``
    also = [e for e in cell["against"] if cell["baseline"] and e.get("baseline")]
    text += "".join(f", also of {e['label']}" for e in also)
    text += "".join(_ratio_text(e) for e in cell["against"] if e not in also)
    built_on = [s for e in (*main, *cell["against"]) for s in e.get("short_baseline") or ()]
    cell["short_baseline"] = built_on
    if point.short:
        text += f" {SHORT}"
    elif built_on:
        text += f" {SHORT_BASE}"
    spread = _range(summary["min"], summary["max"], point.metric) + ", " if summary["n"] > 1 else ""
    text += f" ({spread}n={summary['n']})"
    if cell["bottleneck"]:
        text += f" {cell['bottleneck']}"
    cell["text"] = text + (f" ({status})" if status != "ok" else "")
    return cell
