"""A plan's ``table:`` checked against its tests' matrix cells before anything connects: a
dimension no cell has, or a baseline value the matrix never takes, is named at its position
(the report lays the table out from run.json: report/pivot.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.input.loader import Document
from nasplan.input.matrix import value_text

# What every record has besides its cell (report/pivot.py's DIRECTION and TEST).
PSEUDO_DIMENSIONS = ("test", "direction")


def tables_errors(
    document: Document, plan: Mapping[str, Any], cells: Sequence[tuple[str, Mapping[str, Any]]]
) -> list[str]:
    """table_errors of the plan's ``table:`` and of each of its ``tables:`` (``cells``: each
    test's id in the plan and its matrix cell)."""
    listed = plan.get("tables") or []
    found = table_errors(document, plan.get("table"), cells)
    for index, one in enumerate(listed if isinstance(listed, list) else []):
        found += table_errors(document, one, cells, where=("tables", index))
    return found


def table_errors(
    document: Document,
    table: Any,
    cells: Sequence[tuple[str, Mapping[str, Any]]],
    where: tuple[str | int, ...] = ("table",),
) -> list[str]:
    """``FILE:LINE:COL: table.rows[0]: ...`` for each dimension of ``table`` (at ``where`` in
    the plan) that no matrix cell of its tests (``cells``: (test id, cell), one per test,
    empty outside a matrix; the table's ``tests``, else every one), ``test`` or ``direction``
    names, each baseline value its dimension never takes, and each of its tests the plan has
    not."""
    if not isinstance(table, Mapping):
        return []
    ids = list(dict.fromkeys(test for test, _ in cells))
    named = [str(t) for t in table.get("tests") or []]
    there_are = f"(there are: {', '.join(ids)})"
    errors = [
        document.error((*where, "tests", index), f"no test {test!r} in the plan {there_are}")
        for index, test in enumerate(named)
        if test not in ids
    ]
    values: dict[str, list[str]] = {}
    for cell in (c for test, c in cells if not named or test in named):
        for dim, value in cell.items():
            taken = values.setdefault(str(dim), [])
            taken.extend([value_text(value)] if value_text(value) not in taken else [])
    known = [*values, *PSEUDO_DIMENSIONS]
    there = f"(there are: {', '.join(known)})"
    errors += [
        document.error((*where, key, index), f"no dimension {dim!r} in the plan {there}")
        for key in ("rows", "columns")
        for index, dim in enumerate(table.get(key) or [])
        if dim not in known
    ]
    both = set(table.get("rows") or []) & set(table.get("columns") or [])
    errors += [
        document.error((*where, "columns"), f"{dim!r} is in rows and columns") for dim in both
    ]
    baselines: list[tuple[tuple[str | int, ...], Mapping[str, Any]]] = [
        ((*where, "baseline"), table.get("baseline") or {}),
        *(((*where, "against", i), one) for i, one in enumerate(table.get("against") or [])),
    ]
    for at, baseline in baselines:
        for dim, value in baseline.items() if isinstance(baseline, Mapping) else ():
            if dim not in known:
                errors.append(document.error((*at, dim), f"no dimension {dim!r} {there}"))
            elif dim in values and value_text(value) not in values[dim]:
                has = ", ".join(values[dim])
                message = f"{dim} has no value {value_text(value)!r} (it has: {has})"
                errors.append(document.error((*at, dim), message))
    return errors
