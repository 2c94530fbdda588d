"""The comparison of runs as one JSON-ready dict (what ``--format json`` prints verbatim)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import ok_values
from nasplan.compare.envdiff import environment_diff
from nasplan.compare.match import MatchedTest, match_tests
from nasplan.compare.matrix import build_matrix, run_labels, run_title
from nasplan.compare.stats import (
    ALPHA,
    MANN_WHITNEY_MIN_N,
    MIN_EFFECT,
    NOISE,
    UNKNOWN,
    higher_is_better,
    verdict,
)

FORMAT = "nasplan-compare"
FORMAT_VERSION = 1


def _titles(runs: Sequence[Mapping[str, Any]], labels: Sequence[Mapping[str, str]]) -> list[str]:
    """Column titles: the labels, else the run id; numbered when two would read the same."""
    titles = [run_title(label, str(run["run_id"])) for run, label in zip(runs, labels, strict=True)]
    if len(set(titles)) < len(titles):
        titles = [f"{index + 1}: {title}" for index, title in enumerate(titles)]
    return titles


def _side(test: Mapping[str, Any] | None, metric: str) -> dict[str, Any] | None:
    """One run's numbers for a matched test: median, min, max, n, efficiency, ok values."""
    if test is None:
        return None
    summary = test.get("summary") or {}
    path = test.get("path") or {}
    return {
        "status": test.get("status"),
        "n": summary.get("n", 0),
        "median": summary.get("median"),
        "min": summary.get("min"),
        "max": summary.get("max"),
        "efficiency": test.get("efficiency"),
        "theoretical_bits_per_second": path.get("theoretical_bits_per_second"),
        "values": ok_values(test.get("repetitions") or [], metric),
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
        "explanation": result.explanation,
    }


def _test(matched: MatchedTest) -> dict[str, Any]:
    present = [t for t in matched.tests if t is not None]
    metric = str((present[0].get("summary") or {}).get("metric") or "bits_per_second")
    sides = [_side(t, metric) for t in matched.tests]
    return {
        "id": matched.key,
        "name": matched.name,
        "kind": matched.kind,
        "metric": metric,
        "comparable": matched.comparable,
        "mismatches": matched.mismatches,
        "differences": matched.differences,
        "runs": sides,
        "versus_first": [None]
        + [_versus(sides[0], side, metric, matched.comparable) for side in sides[1:]],
    }


def _headline(tests: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The largest change (vs the first run, in the last run that has it) with a verdict."""
    candidates = []
    for test in tests:
        for index in range(len(test["runs"]) - 1, 0, -1):
            versus = test["versus_first"][index]
            if versus and versus["ratio"]:
                candidates.append((test, index, versus))
                break
    if not candidates:
        return None
    decided = [c for c in candidates if c[2]["verdict"] not in (NOISE, UNKNOWN)]
    test, index, versus = max(decided or candidates, key=lambda c: abs(math.log(c[2]["ratio"])))
    return {"test": test["id"], "run": index, "decided": bool(decided), **versus}


def compare_runs(runs: Sequence[Mapping[str, Any]], labels: Sequence[str] = ()) -> dict[str, Any]:
    """Compare validated run dicts against the first: runs, environment diff, tests, matrix.

    ``labels`` (one ``KEY=VALUE[,...]`` or name per run) name the runs and give the matrix its
    dimensions; without them the plan vars that differ between the runs do.
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    parsed = run_labels(runs, labels)
    titles = _titles(runs, parsed)
    changes, unchanged = environment_diff(runs)
    tests = [_test(m) for m in match_tests(runs)]
    matrix = build_matrix(parsed)
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
    }
