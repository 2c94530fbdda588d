"""How the write-up's table (report/pivot.py) finds each cell's baseline, and says how.

Three things a plan does make a table's cells miss their baseline when compared value by value:
a key that goes with the row (``mtu`` set per link by an ``include:``, a target per path, the
Mac that only ran over one port) splits the table, and a row whose other values the baseline
row never had has no cell to compare with. So: a dimension with one value per row is shown
beside the rows, not as tables of its own (``tied``); a cell whose exact baseline (the same other
values) is missing is compared with the baseline row's nearest cell (the same rows and columns,
most other values alike, one such cell), and the difference is said (``Found.differs``,
``notes``). Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from nasplan.report.pivot_cell import DASH, Baseline, Point

DIRECTION = "direction"  # the pseudo-dimension of a record's directions
TEST = "test"  # the pseudo-dimension of the plan's test ids (base_id)
Key = tuple[str | None, ...]


def key(point: Point, dims: Sequence[str]) -> Key:
    """The point's values along ``dims``; None for a direction it has none of (a failed test
    whose direction is unknown stands in every direction's column); ``–`` for a dimension the
    point lacks."""
    return tuple(
        None if d == DIRECTION and d not in point.coordinates else point.coordinates.get(d, DASH)
        for d in dims
    )


def matches(found: Key, wanted: Sequence[str | None]) -> bool:
    """Whether a point's key is ``wanted`` (an unknown direction fits any)."""
    return all(k is None or w is None or k == w for k, w in zip(found, wanted, strict=True))


def tied(points: Sequence[Point], dim: str, rows: Sequence[str]) -> bool:
    """Whether ``dim`` goes with the rows: the points of each row have one value of it (or all
    lack it), so it says something of the row rather than splitting the table."""
    seen: dict[Key, str | None] = {}
    for point in points:
        value = key(point, (dim,))[0]
        if seen.setdefault(key(point, rows), value) != value:
            return False
    return True


def row_values(points: Sequence[Point], row: Sequence[str], rows: Sequence[str], dim: str) -> str:
    """The value a tied ``dim`` has in ``row`` (``–`` when its points lack it)."""
    for point in points:
        if key(point, rows) == tuple(row):
            return key(point, (dim,))[0] or DASH
    return DASH


@dataclass(frozen=True)
class Found:
    """A cell's baseline points (one: its baseline; none or several: it has none, unless
    ``each`` names the dimensions its test lacks and the baseline's cells have, when it is
    compared with each of them) and, when it is not the exact one, the values in which it
    differs: ``(dim, the cell's, the baseline's)``."""

    points: tuple[Point, ...]
    differs: tuple[tuple[str, str, str], ...] = ()
    each: tuple[str, ...] = ()


def baseline_of(
    where: Mapping[str, str],
    baseline: Mapping[str, str],
    keyed: Sequence[tuple[Key, Point]],
    every: Sequence[str],
    loose: Collection[str],
) -> Found:
    """The baseline of the cell at ``where`` (``every`` dimension -> value): the point with
    ``baseline``'s values and ``where``'s others; without one, the nearest point with
    ``baseline``'s values and ``where``'s along every dimension but the ``loose`` ones and
    those the cell's test lacks (``–``: iSCSI beside copies to each volume), when one point is
    nearer (more ``loose`` values alike) than every other, or every such point when the
    cell's test lacks a dimension they have (``Found.each``)."""
    wanted = tuple({**where, **{d: v for d, v in baseline.items() if d in where}}.values())
    exact = tuple(p for k, p in keyed if matches(k, wanted))
    lacked = [i for i, d in enumerate(every) if wanted[i] == DASH and d not in (DIRECTION, TEST)]
    if exact or not (loose or lacked):
        return Found(exact)
    free = {i for i, d in enumerate(every) if d in loose} | set(lacked)
    strict = [i for i in range(len(every)) if i not in free]
    near = [
        (k, p)
        for k, p in keyed
        if matches(tuple(k[i] for i in strict), tuple(wanted[i] for i in strict))
    ]
    if not near:
        return Found(())

    def alike(found: Key) -> int:
        return sum(1 for i, d in enumerate(every) if d in loose and found[i] == wanted[i])

    best = max(alike(k) for k, _ in near)
    chosen = [(k, p) for k, p in near if alike(k) == best]
    each = tuple(every[i] for i in lacked if any(k[i] != DASH for k, _ in chosen))
    named = {tuple(k[i] for i in lacked) for k, _ in chosen}
    if len(chosen) > 1 and (not each or len(named) < len(chosen)):
        return Found(tuple(p for _, p in chosen))
    found = chosen[0][0]
    differs = tuple(
        (d, str(wanted[i]), str(found[i]))
        for i, d in enumerate(every)
        if i in free and found[i] != wanted[i] and len(chosen) == 1
    )
    return Found(tuple(p for _, p in chosen), differs, each)


def label(pairs: Sequence[tuple[str, str]]) -> str:
    """An against baseline's name in a cell: ``link=p2p25`` (several: ``link=p2p25/mtu=1500``)."""
    return "/".join(f"{d}={v}" for d, v in pairs)


@dataclass(frozen=True)
class Near:
    """A cell's baseline as found (``Found``) and as the cell compares with it."""

    found: Found
    compared: Baseline


def near(
    where: Mapping[str, str],
    label: str,
    one: Mapping[str, str],
    keyed: Sequence[tuple[Key, Point]],
    every: Sequence[str],
    loose: Sequence[str],
) -> Near:
    """The baseline ``one`` (dimension -> value; ``label``: its name in the cell, ``""`` for
    the table's own) of the cell at ``where``, found by ``baseline_of``: whether
    the cell is that baseline, the dimensions of it the cell's test lacks (iperf3 beside copies
    to each volume: no ratio), the points it is compared with."""
    itself = all(where.get(d, v) == v for d, v in one.items())
    lacks = tuple(d for d in one if where.get(d) == DASH)
    found = baseline_of(where, one, keyed, every, [d for d in loose if d not in one])
    return Near(found, Baseline(label, found.points, itself, lacks, found.each))


def loose_dimensions(pages: Sequence[str], baseline: Mapping[str, str]) -> list[str]:
    """The dimensions a baseline may differ in when no cell has the exact values: those that
    split the table, but never the direction, the test or what the baseline names."""
    return [d for d in pages if d not in (DIRECTION, TEST) and d not in baseline]


def pairs_text(values: Mapping[str, str]) -> str:
    """``link=p2p25, mtu=1500`` (a dimension a point lacks: ``without mtu``)."""
    return ", ".join(f"{d}={v}" if v != DASH else f"without {d}" for d, v in values.items())


def notes(
    baseline: Mapping[str, str],
    rows: Sequence[str],
    tied_dims: Sequence[str],
    differs: Collection[tuple[tuple[str, str, str], ...]],
    each: Collection[tuple[str, ...]] = (),
) -> list[str]:
    """How the cells found their baseline, for the notes under the table."""
    found = []
    if tied_dims:
        named = ", ".join(f"`{d}`" for d in tied_dims)
        verb = "goes" if len(tied_dims) == 1 else "go"
        found.append(
            f"{named} {verb} with {', '.join(rows)} (one value per row, as the plan set it): "
            "shown beside the rows rather than as tables of their own, and each cell is "
            f"compared with the {pairs_text(baseline)} cell of its column whatever its {named}."
        )
    for one in sorted(differs):
        here = pairs_text({d: mine for d, mine, _ in one})
        there = pairs_text({d: theirs for d, _, theirs in one})
        if all(mine == DASH for _, mine, _ in one):
            found.append(
                f"The cells {here} (their test has none) are compared with the "
                f"{pairs_text(baseline)} cell with {there} (the one there is)."
            )
            continue
        found.append(
            f"No {pairs_text(baseline)} cell has {here}: the cells with {here} are compared "
            f"with its cell with {there} (the nearest it has)."
        )
    for dims in sorted(each):
        lacking = pairs_text(dict.fromkeys(dims, DASH))
        named = "/".join(f"{d}=…" for d in dims)
        found.append(
            f"The cells {lacking} (their test has none) are compared with each "
            f"{pairs_text(baseline)} cell of their other values, a ratio for each, named by "
            f"its {', '.join(dims)} (`×ratio of {named}`)."
        )
    return found
