"""The write-up's own table: results laid out by dimensions, rows against columns.

A *point* is one direction of one test record with its coordinates: the matrix cell it ran
(``cell``: ``link=p2p10``, ``size=1GiB``), ``direction`` (write/read, forward/reverse), ``test``
(the plan's id of the test) and, in a comparison, the run's labels (``ram=4G``). A table spec
names the dimensions along the rows and the columns, and optionally a baseline (``link=p2p25``:
each cell against the cell with that value and the same other values). Dimensions that vary but
are neither rows nor columns give a table each. Pure: run.json's records in, values out.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nasplan.analysis import ok_values
from nasplan.errors import InputError
from nasplan.measure import kinds
from nasplan.report import pivot_match, pivot_notes
from nasplan.report.pivot_cell import DASH, NOT_RUN, Point, cell
from nasplan.report.pivot_match import DIRECTION, TEST, Key, key, matches


def value_text(value: Any) -> str:
    """A dimension's value as a test id, tables and ``--table`` spell it: as written (``1GiB``,
    ``9000``, ``true``), the matrix's own rule (input/matrix.py)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class TableSpec:
    """Which dimensions make the rows and the columns; ``baseline``: dimension -> value."""

    rows: tuple[str, ...]
    columns: tuple[str, ...] = ()
    baseline: tuple[tuple[str, str], ...] = ()
    metric: str | None = None
    # further baselines, each its own ratio beside the baseline's (``against: [{link: p2p25}]``)
    against: tuple[tuple[tuple[str, str], ...], ...] = ()
    tests: tuple[str, ...] = ()  # the plan's tests (ids) it lays out; (): every one

    @property
    def named(self) -> tuple[str, ...]:
        """Every dimension the spec names, rows first."""
        others = (k for one in self.against for k, _ in one)
        return (*self.rows, *self.columns, *(k for k, _ in self.baseline), *others)


def parse_table_option(text: str) -> TableSpec:
    """``rows=link,columns=method/direction,baseline=link=p2p25`` -> a TableSpec.

    Several dimensions (and baseline pairs) are joined by ``/``; ``against=volume=hdd`` (several
    joined by ``+``) adds a ratio to each further baseline; ``metric=KEY`` tabulates a
    repetition key other than each test's own metric. Raises InputError on anything else.
    """
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        if not part or not sep or not value.strip():
            raise InputError(f"--table {text!r}: expected rows=DIM[/DIM...][,columns=...]")
        if key.strip() not in ("rows", "columns", "baseline", "against", "metric"):
            raise InputError(
                f"--table {text!r}: unknown {key.strip()!r} (rows, columns, baseline, against, "
                "metric)"
            )
        fields[key.strip()] = value.strip()
    baseline = _pairs(text, fields["baseline"]) if "baseline" in fields else {}
    against = [_pairs(text, one) for one in fields.get("against", "").split("+") if one]
    return spec_from_plan(
        {
            "rows": _names(fields.get("rows", "")),
            "columns": _names(fields.get("columns", "")),
            "baseline": baseline,
            "against": against,
            **({"metric": fields["metric"]} if "metric" in fields else {}),
        },
        "--table",
    )


def _pairs(text: str, value: str) -> dict[str, str]:
    """``link=p2p25/size=1GiB`` -> ``{link: p2p25, size: 1GiB}``; InputError when malformed."""
    found = {}
    for pair in value.split("/"):
        dim, sep, one = pair.partition("=")
        if not sep or not dim.strip() or not one.strip():
            raise InputError(f"--table {text!r}: a baseline is DIM=VALUE[/DIM=VALUE...]")
        found[dim.strip()] = one.strip()
    return found


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split("/") if n.strip()]


def spec_from_plan(table: Mapping[str, Any], where: str = "table") -> TableSpec:
    """A plan's ``table:`` (``{rows: [link], columns: [method, direction], baseline: {link:
    p2p25}, metric: ...}``) -> a TableSpec; InputError when rows are missing or repeated."""
    rows = tuple(str(n) for n in table.get("rows") or ())
    columns = tuple(str(n) for n in table.get("columns") or ())
    if not rows:
        raise InputError(f"{where}: rows name no dimension")
    twice = sorted({n for n in (*rows, *columns) if (*rows, *columns).count(n) > 1})
    if twice:
        raise InputError(f"{where}: {', '.join(twice)} named twice in rows and columns")
    baseline = tuple((str(k), value_text(v)) for k, v in (table.get("baseline") or {}).items())
    against = tuple(
        tuple((str(k), value_text(v)) for k, v in one.items()) for one in table.get("against") or ()
    )
    metric = table.get("metric")
    tests = tuple(str(t) for t in table.get("tests") or ())
    return TableSpec(rows, columns, baseline, str(metric) if metric else None, against, tests)


def points_of(
    tests: Sequence[Mapping[str, Any]],
    labels: Mapping[str, str] | None = None,
    *,
    metric: str | None = None,
    matrix_only: bool = True,
) -> list[Point]:
    """The points of a run's test records: each direction of each matrix record (every record
    with ``matrix_only=False``), coordinates in the order labels, test, cell, direction."""
    found = []
    for test in tests:
        cell = test.get("cell") or {}
        if matrix_only and not cell:
            continue
        base = {**(labels or {}), TEST: str(test.get("base_id") or test["id"])}
        base.update({str(k): value_text(v) for k, v in cell.items()})
        kind = kinds.readout(test)
        series = [s for s in kind.series(test) if s.direction is not None or s.values]
        if not series or (not any(s.values for s in series) and series[0].direction is None):
            for direction in kind.directions_asked(test):
                # a directed test that ran no direction stands in each direction's column
                unknown = direction is None and kind.directed
                where = base if unknown else {**base, DIRECTION: direction or DASH}
                found.append(Point(where, test, direction, metric or "", ()))
            continue
        for s in series:
            values = s.values
            if metric:
                values = ok_values(kind.ok_repetitions(test, s.direction), metric)
            where = {**base, DIRECTION: s.direction or DASH}
            short = tuple(kind.short_durations(test, s.direction))
            found.append(Point(where, test, s.direction, metric or s.metric, tuple(values), short))
    return found


def dimensions(points: Sequence[Point]) -> dict[str, list[str]]:
    """Dimension -> its values, both in first-seen order (``direction`` last)."""
    found: dict[str, list[str]] = {}
    for point in points:
        for dim, value in point.coordinates.items():
            values = found.setdefault(dim, [])
            if value not in values:
                values.append(value)
    if DIRECTION in found:
        found[DIRECTION] = found.pop(DIRECTION)
    return found


def check_spec(spec: TableSpec, dims: Mapping[str, Sequence[str]], where: str = "--table") -> None:
    """InputError naming a dimension (or a baseline value) the points do not have, and those
    they have."""
    known = ", ".join(dims) or "none"
    for dim in spec.named:
        if dim not in dims:
            raise InputError(f"{where}: no dimension {dim!r} in the results (there are: {known})")
    for dim, value in [*spec.baseline, *(pair for one in spec.against for pair in one)]:
        if value not in dims[dim]:
            raise InputError(
                f"{where}: baseline {dim}={value}: {dim} has no such value "
                f"(it has: {', '.join(dims[dim])})"
            )


def default_spec(dims: Mapping[str, Sequence[str]], first: Sequence[str]) -> TableSpec | None:
    """Without a spec: the first of ``first`` (cell or label dimensions) as rows, the others and
    the direction (when it varies) as columns; None without any."""
    varying = [d for d in first if d in dims and len(dims[d]) > 1] or [
        d for d in first if d in dims
    ]
    if not varying:
        return None
    columns = varying[1:] + ([DIRECTION] if len(dims.get(DIRECTION) or ()) > 1 else [])
    return TableSpec((varying[0],), tuple(columns))


def _values(points: Sequence[Point], dim: str) -> list[str]:
    """The values of ``dim`` among ``points`` in first-seen order; ``–`` for a point without it
    (another test of the run that lacks the dimension)."""
    found: list[str] = []
    for point in points:
        value = key(point, (dim,))[0]
        if value is not None and value not in found:
            found.append(value)
    return found


def _combinations(points: Sequence[Point], dims: Sequence[str]) -> list[tuple[str, ...]]:
    """The value combinations of ``dims`` some point has, in the values' first-seen order."""
    order = {d: _values(points, d) or [DASH] for d in dims}  # DASH: only unknown directions
    found: set[tuple[str, ...]] = set()
    for point in points:
        values = key(point, dims)
        found.update(
            itertools.product(
                *(
                    (order[d] or [DASH]) if v is None else [v]
                    for d, v in zip(dims, values, strict=True)
                )
            )
        )
    return sorted(found, key=lambda c: [order[d].index(v) for d, v in zip(dims, c, strict=True)])


def _header(values: Sequence[str]) -> str:
    """A column's heading, ``smb · write``; a dimension this table's tests lack left out."""
    return " · ".join(v for v in values if v != DASH) or DASH


def _title(fixed: Mapping[str, str]) -> str:
    """A table's heading from its fixed dimensions: ``smb, size=1GiB`` (a test by its id);
    ``without reverse`` for the tests that lack the dimensions the others' tables are split by."""
    named = [v if d == TEST else f"{d}={v}" for d, v in fixed.items() if v != DASH]
    lacking = [d for d, v in fixed.items() if v == DASH]
    return ", ".join(named) or (f"without {', '.join(lacking)}" if lacking else "")


@dataclass
class _Layout:
    """How the placed points lie in the tables: the dimensions that page them (``pages``), go
    beside the rows (``tied``) or are laid out (``every``: pages, rows, columns); and what the
    cells' baselines found on the way (``differs``, ``each``), for the notes."""

    spec: TableSpec
    placed: list[Point]
    baseline: dict[str, str]
    tied: list[str]
    pages: list[str]
    every: tuple[str, ...]
    loose: list[str]
    keyed: list[tuple[Key, Point]]
    differs: set[tuple[tuple[str, str, str], ...]] = field(default_factory=set)
    each: set[tuple[str, ...]] = field(default_factory=set)


def build(
    points: Sequence[Point],
    spec: TableSpec,
    *,
    default: bool = False,
    origin: str = "--table",
    outside: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The tables of ``points`` laid out by ``spec``, JSON-ready: one per combination of the
    varying dimensions the spec leaves out (those with one value per row, ``pivot_match.tied``,
    stand beside the rows instead), each with a header, its rows' texts and its cells' numbers;
    each cell against its baseline (``pivot_match.baseline_of``). A point with none of the
    row dimensions, and the records in ``outside`` (not matrix cells), are named in the notes.
    Raises InputError (check_spec) when the spec names what the points lack."""
    if spec.tests:
        points = [p for p in points if p.coordinates.get(TEST) in spec.tests]
    dims = dimensions(points)
    check_spec(spec, dims, origin)
    placed = [p for p in points if any(v != DASH for v in key(p, spec.rows))]
    rowless = [p.test for p in points if all(v == DASH for v in key(p, spec.rows))]
    first_row = not spec.baseline
    if first_row:  # against the first row, as write-ups are
        spec = replace(spec, baseline=((spec.rows[0], _values(placed, spec.rows[0])[0]),))
    laid = _layout(placed, spec, dims)
    tables = [_table(laid, fixed) for fixed in _combinations(placed, laid.pages)]
    every_cell = [c for t in tables for r in t["rows"] for c in r["cells"]]
    matched = pivot_match.notes(laid.baseline, spec.rows, laid.tied, laid.differs, laid.each)
    matched += pivot_notes.short_notes(every_cell)
    marked = any(c["verdict"] for c in every_cell)
    left_out = pivot_notes.outside_notes(rowless, outside, spec.rows)
    said = pivot_notes.notes(spec, default, marked, first_row, matched, left_out)
    return {
        "rows": list(spec.rows),
        "columns": list(spec.columns),
        "baseline": laid.baseline,
        "beside": laid.tied,
        "against": [dict(one) for one in spec.against],
        "metric": spec.metric,
        "default": default,
        "title": " × ".join(p for p in (", ".join(spec.rows), ", ".join(spec.columns)) if p),
        "tables": tables,
        "notes": said,
    }


def _layout(placed: list[Point], spec: TableSpec, dims: Iterable[str]) -> _Layout:
    """Which varying dimensions the spec leaves out go beside the rows, which page the tables."""
    laid = (*spec.rows, *spec.columns)
    baseline = dict(spec.baseline)
    varying = [d for d in dims if d not in laid and len(_values(placed, d)) > 1]
    tied = [
        d
        for d in varying
        if d not in (DIRECTION, TEST, *baseline) and pivot_match.tied(placed, d, spec.rows)
    ]
    pages = [d for d in varying if d not in tied]
    every = (*pages, *laid)
    loose = pivot_match.loose_dimensions(pages, baseline)
    keyed = [(key(p, every), p) for p in placed]
    return _Layout(spec, placed, baseline, tied, pages, every, loose, keyed)


def _table(laid: _Layout, fixed: tuple[str, ...]) -> dict[str, Any]:
    """The table of the points with the page values ``fixed``."""
    spec = laid.spec
    mine = [p for p in laid.placed if matches(key(p, laid.pages), fixed)]
    columns = _combinations(mine, spec.columns)
    rows: list[dict[str, Any]] = []
    for row in _combinations(mine, spec.rows):
        cells = [_cell_at(laid, (*fixed, *row, *column)) for column in columns]
        beside = [pivot_match.row_values(laid.placed, row, spec.rows, d) for d in laid.tied]
        rows.append({"values": [*row, *beside], "cells": cells})
    named = [_header(c) for c in columns] if spec.columns else ["result"]
    fixed_dims = dict(zip(laid.pages, fixed, strict=True))
    return {
        "title": _title(fixed_dims),
        "fixed": fixed_dims,
        "header": [*spec.rows, *laid.tied, *named],
        "rows": rows,
    }


def _cell_at(laid: _Layout, values: tuple[str, ...]) -> dict[str, Any]:
    """The cell at ``values`` (pages, rows, columns) against its baselines; what they found
    noted in ``laid``."""
    where = dict(zip(laid.every, values, strict=True))
    here = [p for k, p in laid.keyed if matches(k, tuple(where.values()))]
    main = pivot_match.near(where, "", laid.baseline, laid.keyed, laid.every, laid.loose)
    others = [
        pivot_match.near(
            where, pivot_match.label(one), dict(one), laid.keyed, laid.every, laid.loose
        )
        for one in laid.spec.against
    ]
    one = cell(here, main.compared, [o.compared for o in others])
    for near, entries in ((main, [one]), *((o, one["against"]) for o in others)):
        if near.found.differs and any(e.get("ratio") is not None for e in entries):
            laid.differs.add(near.found.differs)
        if near.compared.each and one["values"]:
            laid.each.add(near.compared.each)
    return one


def cell_dimensions(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """The matrix dimensions of a run's records, in first-seen order."""
    found: list[str] = []
    for test in tests:
        found.extend(str(d) for d in test.get("cell") or {} if str(d) not in found)
    return found


# a matrix cell's id: the plan's id, then its cell (input/matrix.py's cell_id; a value holds no
# ``, = [ ]``)
_CELL_ID = re.compile(r"([a-z0-9][a-z0-9_-]*)\[([^\[\]]+)\]")


def not_reached(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A record for each test of the run's plan that has none in the run (a run stopped before
    it, or one of --tests and --limit that left it out): no repetition, status ``not run``, its
    cell read back from its id; so that the table keeps the plan's rows, columns and baseline
    and says ``not run`` where nothing was measured."""
    recorded = {str(test.get("id")) for test in run.get("tests") or []}
    found = []
    for planned in (run.get("plan") or {}).get("tests") or []:
        test_id = str(planned.get("id"))
        if test_id in recorded:
            continue
        matched = _CELL_ID.fullmatch(test_id)
        pairs = [pair.partition("=") for pair in matched[2].split(",")] if matched else []
        found.append(
            {
                "id": test_id,
                "base_id": matched[1] if matched else test_id,
                "cell": {dim: value for dim, _, value in pairs},
                "kind": planned.get("kind"),
                "params": dict(planned),
                "status": NOT_RUN,
                "repetitions": [],
            }
        )
    return found


def run_tables(
    run: Mapping[str, Any], asked: TableSpec | None = None
) -> list[tuple[dict[str, Any] | None, str | None]]:
    """Every table of a run's report, each with why it could not be laid out (run_table's
    pairs): ``asked`` alone (``report --table``); else the plan's ``table:`` (when it has one)
    and each of its ``tables:`` in order, a listed one that does not fit the run (a part of the
    plan run) as its error with no table; else run_table's (the plan's ``table:`` or the
    default)."""
    plan = run.get("plan") or {}
    listed = plan.get("tables") or []
    if asked is not None or not listed:
        return [run_table(run, asked)]
    found = [run_table(run)] if plan.get("table") else []
    tests = [*(run.get("tests") or []), *not_reached(run)]
    dims = cell_dimensions(tests)
    outside = [t for t in tests if not t.get("cell") and t.get("status") != NOT_RUN] if dims else []
    for index, one in enumerate(listed):
        origin = f"the plan's tables[{index}]"
        try:
            spec = spec_from_plan(one, origin)
            points = points_of(tests, metric=spec.metric, matrix_only=bool(dims))
            laid = build(points, spec, origin=origin, outside=outside)
        except InputError as exc:
            found.append((None, str(exc)))
            continue
        found.append(({**laid, "title": one.get("title") or laid["title"]}, None))
    return found


def run_table(
    run: Mapping[str, Any], asked: TableSpec | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """A run's table and why the plan's ``table:`` could not be laid out (then the default).

    ``asked`` (``report --table``) wins over the plan's ``table:``; without either, a run with
    matrix records gets the default (default_spec), any other none. A run without matrix
    records is laid out by its tests and directions. The plan's tests the run has no record of
    stand in it as ``not run`` (not_reached). InputError: ``asked`` names a dimension the run
    lacks.
    """
    tests = [*(run.get("tests") or []), *not_reached(run)]
    dims = cell_dimensions(tests)
    # a run with matrix records tables those; its other tests are named under the table
    outside = [t for t in tests if not t.get("cell") and t.get("status") != NOT_RUN] if dims else []
    planned = (run.get("plan") or {}).get("table")
    if asked is not None:
        points = points_of(tests, metric=asked.metric, matrix_only=bool(dims))
        return build(points, asked, outside=outside), None
    error = None
    if planned:
        origin = "the plan's table"
        try:
            spec = spec_from_plan(planned, origin)
            points = points_of(tests, metric=spec.metric, matrix_only=bool(dims))
            laid = build(points, spec, origin=origin, outside=outside)
            return {**laid, "title": planned.get("title") or laid["title"]}, None
        except InputError as exc:
            error = str(exc)
    if not dims:
        return None, error
    points = points_of(tests)
    fallback = default_spec(dimensions(points), dims)
    return (build(points, fallback, default=True, outside=outside) if fallback else None), error
