"""Run labels (``link=10G,disk=ssd``) and the tables they allow: two-dimensional, or the
pivot of any number of label dimensions with the runs' own matrix dimensions (label_table).

Dimensions come from ``--label`` given once per run, in the order of the runs; without labels,
from the plan vars that differ between the runs (``nasplan apply -e link=10G`` records them).
When exactly two dimensions vary and each pair of values names one run, every test gets a
matrix: rows are the first dimension's values, columns the second's, in first-seen order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.errors import InputError
from nasplan.report import pivot


@dataclass(frozen=True)
class Matrix:
    """Layout of runs along two dimensions: ``cells[r][c]`` is a run index, or None."""

    row_dimension: str
    column_dimension: str
    rows: list[str]
    columns: list[str]
    cells: list[list[int | None]]


def parse_label(text: str) -> dict[str, str]:
    """``"link=10G,disk=ssd"`` -> ``{"link": "10G", "disk": "ssd"}``."""
    labels: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            key, value = "run", key
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise InputError(f"--label {text!r}: expected KEY=VALUE[,KEY=VALUE...] or a name")
        if key in labels:
            raise InputError(f"--label {text!r}: {key!r} given twice")
        labels[key] = value
    if not labels:
        raise InputError(f"--label {text!r}: empty")
    return labels


def _plan_vars(run: Mapping[str, Any]) -> dict[str, str]:
    values = (run.get("plan") or {}).get("vars") or {}
    return {str(k): str(v) for k, v in values.items() if not isinstance(v, (dict, list))}


def run_labels(runs: Sequence[Mapping[str, Any]], given: Sequence[str]) -> list[dict[str, str]]:
    """One label dict per run: parsed ``given`` (one per run), else the plan vars that vary."""
    if given:
        if len(given) != len(runs):
            raise InputError(
                f"--label given {len(given)} times for {len(runs)} runs: give one per run, in order"
            )
        return [parse_label(text) for text in given]
    all_vars = [_plan_vars(run) for run in runs]
    keys = sorted({k for v in all_vars for k in v})
    varying = [k for k in keys if len({v.get(k) for v in all_vars}) > 1]
    return [{k: v[k] for k in varying if k in v} for v in all_vars]


def varying_dimensions(labels: Sequence[Mapping[str, str]]) -> list[str]:
    """Label keys whose value is not the same in every run, in first-seen order."""
    keys: list[str] = []
    for label in labels:
        keys.extend(k for k in label if k not in keys)
    return [k for k in keys if len({label.get(k) for label in labels}) > 1]


def build_matrix(labels: Sequence[Mapping[str, str]]) -> Matrix | None:
    """The two-dimensional layout of the runs, or None unless exactly two dimensions vary
    and no two runs share a (row, column) pair."""
    dimensions = varying_dimensions(labels)
    if len(dimensions) != 2:
        return None
    row_key, column_key = dimensions
    rows: list[str] = []
    columns: list[str] = []
    where: dict[tuple[str, str], int] = {}
    for index, label in enumerate(labels):
        row, column = label.get(row_key), label.get(column_key)
        if row is None or column is None or (row, column) in where:
            return None
        where[(row, column)] = index
        rows.extend([row] if row not in rows else [])
        columns.extend([column] if column not in columns else [])
    cells = [[where.get((row, column)) for column in columns] for row in rows]
    return Matrix(row_key, column_key, rows, columns, cells)


def run_title(label: Mapping[str, str], fallback: str) -> str:
    """How a run is named in tables: ``link=10G, disk=ssd``, ``before``, or ``fallback``."""
    if not label:
        return fallback
    if list(label) == ["run"]:
        return label["run"]
    return ", ".join(f"{k}={v}" for k, v in label.items())


def label_table(
    runs: Sequence[Mapping[str, Any]],
    labels: Sequence[Mapping[str, str]],
    titles: Sequence[str],
    asked: pivot.TableSpec | None = None,
) -> dict[str, Any] | None:
    """The runs' table (report/pivot.py) over their labels and their records' own dimensions
    (matrix cells, ``test``, ``direction``); a run without a label is named by ``run``.

    Without ``asked``: the default (first label dimension as rows) when three or more label
    dimensions vary, or when one does and the runs have matrix records; else None (the
    two-dimensional tables of build_matrix, or none). InputError: ``asked`` names a dimension
    the runs lack.
    """
    cells = pivot.cell_dimensions([t for run in runs for t in run.get("tests") or []])
    varying = varying_dimensions(labels)
    metric = asked.metric if asked else None
    points = [
        point
        for run, label, title in zip(runs, labels, titles, strict=True)
        for point in pivot.points_of(
            run.get("tests") or [], label or {"run": title}, metric=metric, matrix_only=False
        )
    ]
    if asked is not None:
        return pivot.build(points, asked)
    if len(varying) < 3 and not (varying and cells):
        return None
    spec = pivot.default_spec(pivot.dimensions(points), [*varying, *cells])
    return pivot.build(points, spec, default=True) if spec else None
