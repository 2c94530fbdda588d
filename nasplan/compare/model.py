"""The comparison of runs as one JSON-ready dict (what ``--format json`` prints verbatim)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from nasplan.compare.envdiff import environment_diff
from nasplan.compare.match import SIZE_PARAMS, MatchedTest, match_tests
from nasplan.compare.matrix import (
    build_matrix,
    label_table,
    run_labels,
    run_title,
    varying_dimensions,
)
from nasplan.measure import kinds
from nasplan.measure.series import Series
from nasplan.report.pivot import TableSpec
from nasplan.significance import (
    ALPHA,
    BETTER,
    MANN_WHITNEY_MIN_N,
    MIN_EFFECT,
    UNDECIDED,
    WORSE,
    higher_is_better,
    verdict,
)

FORMAT = "nasplan-compare"
# 2: one row per direction (``direction``, ``label``), too-few verdicts, ``across``; a run's
# side of a transfer or iSCSI row carries its ``bottleneck`` verdict, and ``table`` the pivot of
# the runs' labels and matrix cells (report/pivot.py's build(), or null) (added, nothing changed).
FORMAT_VERSION = 2


def _titles(runs: Sequence[Mapping[str, Any]], labels: Sequence[Mapping[str, str]]) -> list[str]:
    """Column titles: the labels, else the run id; numbered when two would read the same."""
    titles = [run_title(label, str(run["run_id"])) for run, label in zip(runs, labels, strict=True)]
    if len(set(titles)) < len(titles):
        titles = [f"{index + 1}: {title}" for index, title in enumerate(titles)]
    return titles


def _bottleneck(test: Mapping[str, Any], direction: str | None) -> str | None:
    """The run's own verdict on what limited a transfer or iSCSI direction (``network-bound``,
    ``disk-bound``, ``cpu-bound``, ``protocol-bound``, ``cache-served``, ``unknown``;
    analysis.VERDICTS); None for other kinds and a run that has none."""
    if direction is None:
        return None
    verdict = ((test.get("bottleneck") or {}).get(direction) or {}).get("verdict")
    return str(verdict) if verdict else None


def _side(test: Mapping[str, Any] | None, series: Series | None) -> dict[str, Any] | None:
    """One run's numbers for a matched row: median, min, max, n, efficiency, ok values, and
    its bottleneck verdict (transfer, iSCSI)."""
    if test is None or series is None:
        return None
    summary, kind = series.summary, kinds.readout(test)
    return {
        "status": test.get("status"),
        "n": summary.get("n", 0),
        "median": summary.get("median"),
        "min": summary.get("min"),
        "max": summary.get("max"),
        "efficiency": series.efficiency,
        "theoretical_bits_per_second": series.theoretical_bits_per_second,
        "limit_name": series.limit_name,
        "values": series.values,
        "bottleneck": _bottleneck(test, series.direction),
        # a copy under analysis.MIN_TRUSTED_S: its ratio is of set-up times as much as of rates
        # (iperf3 times its data phase alone: the report flags it, a ratio of it still holds)
        "short": kind.short_skews_ratio and bool(kind.short_durations(test, series.direction)),
    }


def _versus(
    first: Mapping[str, Any] | None, other: Mapping[str, Any] | None, metric: str, comparable: bool
) -> dict[str, Any] | None:
    """Ratio, efficiency change and verdict of ``other`` against the first run's side."""
    if other is None or first is None or not comparable:
        return None
    result = verdict(first["values"], other["values"], higher_is_better=higher_is_better(metric))
    ratio = (
        other["median"] / first["median"]
        if first["median"] and other["median"] is not None
        else None
    )
    efficiency_change = (
        other["efficiency"] - first["efficiency"]
        if first["efficiency"] is not None and other["efficiency"] is not None
        else None
    )
    return {
        "ratio": ratio,
        "change": result.change,
        "efficiency_change": efficiency_change,
        "verdict": result.verdict,
        "rule": result.rule,
        "p_value": result.p_value,
        "needed_per_side": result.needed_per_side,
        "explanation": result.explanation,
    }


def _across_dimension(matched: MatchedTest, dimensions: Sequence[str]) -> MatchedTest:
    """Let a test whose only workload difference is its size be compared when the runs are
    labelled along a dimension (``--label size=1GB``): the cache experiment is exactly that."""
    names = {m.partition(":")[0] for m in matched.mismatches}
    if not dimensions or not matched.mismatches or not names <= SIZE_PARAMS:
        return matched
    return replace(
        matched,
        mismatches=[],
        differences=matched.differences + matched.mismatches,
        across=[m for m in matched.mismatches if m.startswith("size")],
    )


def _rows(matched: MatchedTest) -> list[dict[str, Any]]:
    """One row per direction of a matched test (write and read, forward and reverse)."""
    per_run = [kinds.readout(t).series(t) if t is not None else [] for t in matched.tests]
    directions: list[str | None] = []
    for found in per_run:
        directions.extend(s.direction for s in found if s.direction not in directions)
    named = len(directions) > 1 or kinds.readout({"kind": matched.kind}).directed
    rows = []
    for direction in directions:
        series = [next((s for s in found if s.direction == direction), None) for found in per_run]
        present = [s for s in series if s is not None]
        metric = present[0].metric
        sides = [_side(t, s) for t, s in zip(matched.tests, series, strict=True)]
        comparable = matched.comparable and sides[0] is not None
        versus: list[dict[str, Any] | None] = [None]
        versus += [_versus(sides[0], side, metric, comparable) for side in sides[1:]]
        rows.append(
            {
                "id": matched.key,
                "direction": direction,
                "label": f"{matched.key} ({direction})" if named and direction else matched.key,
                "name": matched.name,
                "kind": matched.kind,
                "metric": metric,
                "comparable": comparable,
                "mismatches": matched.mismatches,
                "differences": matched.differences,
                "across": matched.across,
                "runs": sides,
                "versus_first": versus,
            }
        )
    return rows


def _headline(tests: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The largest change (vs the first run, in the last run that has it) with a verdict;
    a row without one (within noise, too few repetitions) is the headline only when no row has."""
    candidates = []
    for test in tests:
        for index in range(len(test["runs"]) - 1, 0, -1):
            versus = test["versus_first"][index]
            if versus and versus["ratio"]:
                candidates.append((test, index, versus))
                break
    if not candidates:
        return None
    decided = [c for c in candidates if c[2]["verdict"] not in UNDECIDED]
    test, index, versus = max(decided or candidates, key=lambda c: abs(math.log(c[2]["ratio"])))
    return {
        "test": test["id"],
        "direction": test["direction"],
        "label": test["label"],
        "run": index,
        "decided": bool(decided),
        "undecided": sorted({c[2]["verdict"] for c in candidates} - {BETTER, WORSE}),
        **versus,
    }


def _matched(
    runs: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """How much of the runs could be compared: rows compared of rows in all, whether the runs
    ran one plan, the hosts they share, and ``little`` (half the rows or fewer compared, other
    plans, or no host in common): the verdicts then say little of the runs as a whole."""
    compared = sum(1 for t in tests if t["comparable"])
    plans = sorted({str(run["plan"]["name"]) for run in runs})
    shared = set(runs[0].get("hosts") or {})
    for run in runs[1:]:
        shared &= set(run.get("hosts") or {})
    little = compared * 2 <= len(tests) or len(plans) > 1 or not shared
    return {
        "compared": compared,
        "rows": len(tests),
        "plans": plans,
        "shared_hosts": sorted(shared),
        "little": little,
    }


def compare_runs(
    runs: Sequence[Mapping[str, Any]], labels: Sequence[str] = (), table: TableSpec | None = None
) -> dict[str, Any]:
    """Compare validated run dicts against the first: runs, environment diff, tests, matrix,
    table.

    ``labels`` (one ``KEY=VALUE[,...]`` or name per run) name the runs and give the matrix its
    dimensions; without them the plan vars that differ between the runs do. ``table``: the
    layout of the runs' table (``--table``; else the default of label_table, or none).
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    parsed = run_labels(runs, labels)
    titles = _titles(runs, parsed)
    changes, unchanged = environment_diff(runs)
    dimensions = varying_dimensions(parsed)
    tests = [row for m in match_tests(runs) for row in _rows(_across_dimension(m, dimensions))]
    matrix = build_matrix(parsed)
    laid_out = label_table(runs, parsed, titles, table)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "rules": {
            "alpha": ALPHA,
            "min_effect": MIN_EFFECT,
            "mann_whitney_min_n": MANN_WHITNEY_MIN_N,
        },
        "runs": [
            {
                "index": index,
                "title": titles[index],
                "labels": parsed[index],
                "run_id": run["run_id"],
                "plan": run["plan"]["name"],
                "started_at": run["started_at"],
                "status": run["status"],
                "nasplan_version": run.get("nasplan_version"),
                "hosts": sorted(run.get("hosts") or {}),
            }
            for index, run in enumerate(runs)
        ],
        "environment": {
            "changed": [{"aspect": c.aspect, "values": c.values} for c in changes],
            "unchanged_count": unchanged,
        },
        "tests": tests,
        "matched": _matched(runs, tests),
        "headline": _headline(tests),
        "matrix": None
        if matrix is None
        else {
            "row_dimension": matrix.row_dimension,
            "column_dimension": matrix.column_dimension,
            "rows": matrix.rows,
            "columns": matrix.columns,
            "cells": matrix.cells,
        },
        "table": laid_out,
    }


# `nasplan compare`'s exit codes beside the CLI's own (2: input, e.g. a run that does not load).
EXIT_COMPARED = 0
EXIT_FAIL_ON = 1  # a row got a verdict --fail-on names (a before/after check gating a change)
EXIT_NOTHING_COMPARED = 4  # no test of the runs could be compared


def exit_code(comparison: Mapping[str, Any], fail_on: Sequence[str] = ()) -> int:
    """What ``nasplan compare`` exits with: 1 when a row's verdict against the first run is one
    of ``fail_on`` (``worse``), 4 when no test was comparable, else 0."""
    verdicts = [
        versus["verdict"]
        for test in comparison["tests"]
        if test["comparable"]
        for versus in test["versus_first"]
        if versus
    ]
    if any(v in fail_on for v in verdicts):
        return EXIT_FAIL_ON
    return EXIT_COMPARED if verdicts else EXIT_NOTHING_COMPARED
