"""A comparison dict (``compare_runs``) as Markdown, JSON or CSV; same input, same bytes."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.quantities import QUANTITIES, quantity_of
from nasplan.report import mermaid
from nasplan.report.headline import SHORT
from nasplan.report.render import (
    DASH,
    bytes_rate,
    cell,
    join_and,
    percent,
    render_template,
    utc,
)
from nasplan.significance import BETTER, NOISE, NOT_SIGNIFICANT, TOO_FEW, UNKNOWN, WORSE
from nasplan.units import format_bits_per_second, format_other

FORMATS = ("markdown", "json", "csv")
VERDICT_ORDER = (BETTER, WORSE, NOISE, NOT_SIGNIFICANT, TOO_FEW, UNKNOWN)


def metric_value(value: float | None, metric: str) -> str:
    """A median in the metric's unit: ``9.55 Gbit/s``, ``210.8 MiB/s``, ``46.30 s``.

    Byte rates are MiB/s (2^20 bytes/s) as in the report, its verdicts and charts.
    """
    if value is None:
        return DASH
    if "bits_per_second" in metric:
        return format_bits_per_second(value)
    if "bytes_per_second" in metric:
        return bytes_rate(value)
    if metric.endswith("_ms"):
        return f"{value:.3f} ms"
    if metric.endswith("_bytes"):
        return f"{value:.0f} bytes"
    if metric.endswith("_s"):
        return f"{value:.2f} s"
    return format_other(value, metric)


def ratio(value: float | None) -> str:
    """``×2.08``; ``–`` when unknown."""
    return DASH if value is None else f"×{value:.2f}"


def points(value: float | None) -> str:
    """An efficiency change in percentage points: 0.021 -> ``+2.1 pts``."""
    return DASH if value is None else f"{value * 100:+.1f} pts".replace("-", "−")


def _run_cell(test: Mapping[str, Any], index: int) -> str:
    side = test["runs"][index]
    if side is None:
        return "not in this run"
    if side["median"] is None:
        return f"{side['status']}, no result"
    text = metric_value(side["median"], test["metric"])
    versus = test["versus_first"][index]
    if versus and versus["ratio"] is not None:
        text += f" ({ratio(versus['ratio'])})"
    if side.get("bottleneck"):
        text += f", {side['bottleneck']}"
    return text


def _efficiency(test: Mapping[str, Any]) -> str:
    sides = [s for s in test["runs"] if s is not None]
    values = [s["efficiency"] for s in sides]
    if all(v is None for v in values):
        return DASH
    text = " → ".join(percent(v) for v in values)
    changes = [v["efficiency_change"] for v in test["versus_first"][1:] if v]
    if len(changes) == 1 and changes[0] is not None:
        text += f" ({points(changes[0])})"
    return text


def _verdicts(test: Mapping[str, Any], titles: Sequence[str]) -> tuple[str, str]:
    """(verdict text, rule text) of a test row; runs named when there are more than two."""
    if not test["comparable"]:
        present = [titles[i] for i, side in enumerate(test["runs"]) if side is not None]
        reason = "; ".join(test["mismatches"]) or (
            f"only in {present[0]}" if len(present) == 1 else f"not in {titles[0]}"
        )
        return "not compared", reason
    verdicts, rules = [], []
    many = len(titles) > 2
    for index, versus in enumerate(test["versus_first"]):
        if versus is None:
            continue
        prefix = f"{titles[index]}: " if many else ""
        word = (
            f"**{versus['verdict']}**"
            if versus["verdict"] in (BETTER, WORSE)
            else versus["verdict"]
        )
        if test["runs"][0].get("short") or (test["runs"][index] or {}).get("short"):
            word += f" {SHORT}"  # a ratio of set-up times as much as of rates
        verdicts.append(prefix + word)
        rules.append(prefix + versus["explanation"])
    return "; ".join(verdicts), "; ".join(rules)


def _opening(comparison: Mapping[str, Any], tests: list[dict[str, Any]]) -> str:
    """The paragraph that opens a comparison: which runs, how much matched, the headline, the
    verdicts counted, what changed in the environment."""
    return (
        _which_runs(comparison["runs"])
        + _little_matched(comparison.get("matched") or {})
        + _headline(comparison)
        + _verdict_counts(tests)
        + _environment(comparison["environment"]["changed"])
    )


def _which_runs(runs: list[Mapping[str, Any]]) -> str:
    plans = sorted({r["plan"] for r in runs})
    hosts = sorted({h for r in runs for h in r["hosts"]})
    first, others = runs[0], runs[1:]
    return (
        f"nasplan compared {len(runs)} runs of plan{'s' if len(plans) > 1 else ''} "
        f"{join_and([f'`{p}`' for p in plans])}"
        + (f" between {join_and(hosts)}" if hosts else "")
        + f": **{first['title']}** ({utc(first['started_at'])}) is the baseline, against "
        + join_and([f"**{r['title']}** ({utc(r['started_at'])})" for r in others])
        + "."
    )


def _little_matched(matched: Mapping[str, Any]) -> str:
    if not matched.get("little"):
        return ""
    why = []
    if len(matched["plans"]) > 1:
        why.append(f"the runs are of other plans ({join_and(matched['plans'])})")
    if not matched["shared_hosts"]:
        why.append("they share no host")
    return (
        f" ⚠ **Little matched**: {matched['compared']} of {matched['rows']} test rows could "
        "be compared"
        + (f" ({'; '.join(why)})" if why else "")
        + ": the verdicts below say nothing of the rest, and little of the runs as a whole."
    )


def _headline(comparison: Mapping[str, Any]) -> str:
    headline = comparison["headline"]
    if not headline:
        return ""
    test = next(t for t in comparison["tests"] if t["label"] == headline["label"])
    if headline["decided"]:
        return _decided(test, headline, comparison["runs"][headline["run"]]["title"])
    if headline["undecided"] == [NOISE]:
        return (
            " Headline: **no difference**: every compared test is within noise (its "
            f"medians within {comparison['rules']['min_effect'] * 100:g} %)."
        )
    if headline["verdict"] in (TOO_FEW, NOT_SIGNIFICANT):
        return (
            f" No headline: no change could be told from chance; the largest difference "
            f"is {test['label']}, {ratio(headline['ratio'])}, {headline['verdict']} "
            f"({headline['explanation']})."
        )
    return (
        f" No test changed beyond noise; the largest difference is {test['label']}, "
        f"{ratio(headline['ratio'])} ({headline['explanation']})."
    )


def _decided(test: Mapping[str, Any], headline: Mapping[str, Any], title: str) -> str:
    """The headline of a test whose change was told from chance."""
    before, after = test["runs"][0], test["runs"][headline["run"]]
    short = any(s and s.get("short") for s in (before, after))
    return (
        f" Headline: {test['label']} is **{headline['verdict']}** in {title}: "
        f"{metric_value(after['median'], test['metric'])} against "
        f"{metric_value(before['median'], test['metric'])}, {ratio(headline['ratio'])} "
        f"({headline['explanation']})"
    ) + (
        f" {SHORT}: repetitions this short measure set-up more than the path, each "
        "run's Diagnosis says by how much."
        if short
        else "."
    )


def _verdict_counts(tests: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for test in tests:
        for word in test["verdict_words"]:
            counts[word] = counts.get(word, 0) + 1
    summary = [f"{counts[w]} {w}" for w in VERDICT_ORDER if w in counts]
    not_compared = sum(1 for t in tests if not t["comparable"])
    if not_compared:
        summary.append(f"{not_compared} not compared")
    return f" Verdicts: {', '.join(summary)}." if summary else ""


def _environment(changed: list[Mapping[str, Any]]) -> str:
    if not changed:
        return " Environment: nothing nasplan records changed between the runs."
    names = [c["aspect"] for c in changed]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f" Environment: {len(names)} aspect{'s' if len(names) != 1 else ''} changed ({shown})."


def _charts(comparison: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One Mermaid chart per quantity (bit rates, byte rates, times): horizontal bars, one per
    (test row, run) that has a median, labelled ``TEST · RUN`` so they read at any count; a
    test a run lacks has no bar and is named in the caption (mermaid draws a bar series' 0 as
    a stub and stacks series at one place, so the runs share one series and the labels say
    which run a bar is)."""
    runs = comparison["runs"]
    short = len(runs) > 3 or any(len(r["title"]) > 16 for r in runs)
    names = [f"run {i + 1}" if short else r["title"] for i, r in enumerate(runs)]
    groups: dict[str, tuple[list[str], list[float | None], list[str]]] = {}
    for test in comparison["tests"]:
        quantity = quantity_of(test["metric"])
        if quantity is None:
            continue
        categories, values, absent = groups.setdefault(quantity, ([], [], []))
        for index, side in enumerate(test["runs"]):
            if side is not None and side["median"] is not None:
                categories.append(f"{test['label']} · {names[index]}")
                values.append(side["median"])
            else:
                said = "not in it" if side is None else f"{side['status']}, no result"
                absent.append(f"{test['label']} · {names[index]} ({said})")
    found = []
    for quantity, (categories, values, absent) in groups.items():
        caption = "A bar per test and run (TEST · RUN)."
        if absent:
            caption += " No bar: " + "; ".join(absent) + "."
        block = mermaid.quantity_chart(
            f"Median {QUANTITIES[quantity].title} per test and run",
            quantity,
            categories,
            values,
            horizontal=True,
            caption=caption,
        )
        if block:
            found.append({"quantity": quantity, "block": block})
    return found


def _matrices(comparison: Mapping[str, Any]) -> list[dict[str, Any]]:
    matrix = comparison["matrix"]
    if matrix is None:
        return []
    found = []
    for test in comparison["tests"]:
        measured = [s for s in test["runs"] if s is not None and s["median"] is not None]
        if len(measured) < 2:
            continue
        rows = [
            [
                DASH if index is None else _run_cell(test, index).replace("not in this run", DASH)
                for index in row
            ]
            for row in matrix["cells"]
        ]
        found.append({"test": test, "rows": list(zip(matrix["rows"], rows, strict=True))})
    return found


def _notes(tests: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The first row of each test whose settings differ between runs (once per test)."""
    seen: set[str] = set()
    found = []
    for test in tests:
        if (test["mismatches"] or test["differences"]) and test["id"] not in seen:
            seen.add(test["id"])
            found.append(test)
    return found


def render_markdown(comparison: Mapping[str, Any], chart_files: Sequence[str] = ()) -> str:
    """The comparison as Markdown (tables, mermaid charts, matrices, ``chart_files`` images);
    deterministic."""
    titles = [r["title"] for r in comparison["runs"]]
    tests = []
    for test in comparison["tests"]:
        verdict_text, rule_text = _verdicts(test, titles)
        tests.append(
            {
                **test,
                "cells": [_run_cell(test, i) for i in range(len(titles))],
                "efficiency_text": _efficiency(test),
                "verdict_text": verdict_text,
                "rule_text": rule_text,
                "verdict_words": [v["verdict"] for v in test["versus_first"] if v],
            }
        )
    view = {
        "c": comparison,
        "titles": titles,
        "tests": tests,
        "opening": _opening(comparison, tests),
        "charts": _charts(comparison),
        "chart_files": list(chart_files),
        "run_keys": [
            {"short": f"run {i + 1}", "title": r["title"]} for i, r in enumerate(comparison["runs"])
        ],
        # the table asked for, or laid out by default, stands for the two-dimensional ones
        "matrices": [] if comparison.get("table") else _matrices(comparison),
        "table": comparison.get("table"),
        "table_error": None,
        "notes": _notes(tests),
        "bottlenecks": any(side and side.get("bottleneck") for t in tests for side in t["runs"]),
    }
    return render_template("compare.md.j2", view)


def render_json(comparison: Mapping[str, Any]) -> str:
    """The comparison dict as indented JSON with a trailing newline."""
    return json.dumps(comparison, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


CSV_COLUMNS = (
    "test_id", "direction", "test_name", "metric", "run_index", "run_id", "run_title",
    "labels", "status", "n", "median", "min", "max", "efficiency", "ratio_to_first",
    "efficiency_change", "verdict", "rule", "p_value", "comparable", "bottleneck",
)  # fmt: skip


def render_csv(comparison: Mapping[str, Any]) -> str:
    """One row per (test, direction, run) with raw numbers (bit/s, bytes/s, ratios as
    fractions), header first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for test in comparison["tests"]:
        for index, side in enumerate(test["runs"]):
            if side is None:
                continue
            run = comparison["runs"][index]
            versus = test["versus_first"][index] or {}
            labels = ";".join(f"{k}={v}" for k, v in run["labels"].items())
            row = [
                test["id"], test["direction"], test["name"], test["metric"], index,
                run["run_id"], run["title"], labels, side["status"], side["n"], side["median"],
                side["min"], side["max"],
                side["efficiency"], versus.get("ratio"), versus.get("efficiency_change"),
                versus.get("verdict"), versus.get("rule"), versus.get("p_value"),
                test["comparable"], side.get("bottleneck"),
            ]  # fmt: skip
            writer.writerow(["" if v is None else v for v in row])
    return out.getvalue()


def render(
    comparison: Mapping[str, Any], output_format: str = "markdown", chart_files: Sequence[str] = ()
) -> str:
    """The comparison as ``markdown`` (showing ``chart_files`` images), ``json`` or ``csv``."""
    if output_format == "json":
        return render_json(comparison)
    if output_format == "csv":
        return render_csv(comparison)
    if output_format == "markdown":
        return render_markdown(comparison, chart_files)
    raise ValueError(f"unknown format {output_format!r} (expected one of {', '.join(FORMATS)})")


__all__ = ["FORMATS", "cell", "render", "render_csv", "render_json", "render_markdown"]
