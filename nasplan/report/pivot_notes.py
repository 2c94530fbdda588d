"""What the write-up's table (report/pivot.py) says under it: its layout and baseline, how its
cells found theirs and what a short mark means, the significance marks, what a cell without a
result means, and the tests it cannot hold, by name. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from nasplan.analysis import MIN_TRUSTED_S
from nasplan.report.pivot_cell import NOT_RUN, SHORT, SHORT_BASE


class Layout(Protocol):
    """A table's layout as the notes read it (``pivot.TableSpec``)."""

    @property
    def rows(self) -> tuple[str, ...]: ...

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def baseline(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def metric(self) -> str | None: ...

    @property
    def against(self) -> tuple[tuple[tuple[str, str], ...], ...]: ...


def notes(
    spec: Layout,
    default: bool,
    marked: bool,
    first_row: bool = False,
    matched: Sequence[str] = (),
    left_out: Sequence[str] = (),
) -> list[str]:
    """What the table's cells say, under it: the layout, the baseline (and ``matched``: how
    cells found theirs, what a short mark means), the marks, what the table leaves out."""
    columns = " · ".join(spec.columns) if spec.columns else "none"
    found = [
        f"Rows: {', '.join(spec.rows)}; columns: {columns}. Each cell: the median of the "
        "successful repetitions"
        + (f" of `{spec.metric}`" if spec.metric else "")
        + " (bit rates in Mbit/s or Gbit/s, file and disk rates in MiB/s, 2^20 bytes/s)"
        + (", ×ratio to the baseline" if spec.baseline else "")
        + ", in brackets min–max and n, and for a transfer or iSCSI direction what limited it."
    ]
    if spec.baseline:
        pairs = ", ".join(f"{d}={v}" for d, v in spec.baseline)
        found.append(
            f"Baseline: the cell with {pairs} and the same other values (marked `baseline`)"
            + (
                f"; the first {spec.rows[0]}, as none was named (`baseline=DIM=VALUE`)."
                if first_row
                else "."
            )
            + " A cell without a ratio says why (`no ratio: baseline not run`)."
        )
    for one in spec.against:
        pairs = ", ".join(f"{d}={v}" for d, v in one)
        label = "/".join(f"{d}={v}" for d, v in one)
        found.append(
            f"Also against the cell with {pairs} and the same other values: `×ratio of {label}` "
            f"(`baseline of {label}` in that cell, `no ratio of {label}: why` without one)."
        )
    found += matched
    if marked:
        found.append(
            "After a ratio: `*` the change is significant (p < 0.05: Mann–Whitney U with at "
            "least 5 repetitions a side, else Welch's t-test on the logarithms); `n.s.` not "
            "significant; `≈` within noise (the medians within 3 %); `n too small`: one "
            "repetition on a side, nothing can be told."
        )
    found.append(
        f"`{NOT_RUN}`: no test for this cell (excluded from the matrix, or not in that run); "
        "`failed`, `skipped`, `interrupted`: the test ran or was planned without a result. "
        "Never a 0."
    )
    found += left_out
    if default:
        found.append(
            f"No table was asked for, so rows are the first dimension ({spec.rows[0]}) and "
            f"columns the others ({columns}); choose with "
            "`--table rows=DIM,columns=DIM/DIM,baseline=DIM=VALUE` (or a plan's `table:`)."
        )
    return found


def short_notes(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the short marks mean, when a cell has one."""
    if not any(c["short"] or c["short_baseline"] for c in cells):
        return []
    return [
        f"`{SHORT}`: a repetition of the cell took under {MIN_TRUSTED_S:g} s, too short to "
        f"trust (start-up weighs on it: the Diagnosis says what size or duration to use); "
        f"`{SHORT_BASE}`: the ratio is built on such a baseline. A ratio of short repetitions "
        "compares start-ups as much as rates."
    ]


def outside_notes(
    rowless: Sequence[Mapping[str, Any]], outside: Sequence[Mapping[str, Any]], rows: Sequence[str]
) -> list[str]:
    """The tests the table leaves out, by name: none is dropped without a word."""
    found = []
    for records, why in (
        (rowless, f"they have no {' or '.join(rows)}"),
        (outside, "not matrix cells"),
    ):
        ids = list(dict.fromkeys(str(t.get("base_id") or t.get("id")) for t in records))
        if ids:
            found.append(
                f"Not in this table ({why}): {', '.join(f'`{i}`' for i in ids)}; their results "
                "are in the Results table below."
            )
    return found
