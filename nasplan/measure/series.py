"""A test's results as series: one per direction it measured, each compared on its own.

A kind says which series its record has (``Readout.series``); the two shapes every kind uses are
here: ``directed`` (a ``directions`` summary per direction: write and read) and ``single`` (the
record's summary). Nothing here knows a kind by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import efficiency, ok_values, summarize

# the order a directed kind runs its directions in, and its repetitions are kept in
DIRECTIONS = ("write", "read")
# a read after the NAS dropped its cache of the file (a transfer's ``read_cache: cold``): the
# read direction's data, measured apart from a read right after the write
COLD_READ = "cold-read"
ORDER = (*DIRECTIONS, COLD_READ)
TCP_MAXIMUM = "TCP maximum"


@dataclass(frozen=True)
class Series:
    """One direction of one test: the repetition values of ``metric`` and their summary.

    ``direction`` is ``write``/``read`` (a directed kind), ``forward``/``reverse`` (iperf3: the
    client sends / the server sends), or None for a kind without one (latency).
    ``theoretical_bits_per_second`` is the path's maximum for what the series carries:
    ``limit_name`` says which (``TCP maximum``; for UDP iperf3 the ``rate asked``, or the
    ``UDP maximum`` when it asked for no rate).
    """

    direction: str | None
    metric: str
    values: list[float]
    summary: dict[str, Any]
    efficiency: float | None
    theoretical_bits_per_second: float | None
    limit_name: str = TCP_MAXIMUM
    # the limit is one no payload can pass (a path's maximum); False for a rate asked (UDP)
    hard_limit: bool = True

    @property
    def over_maximum(self) -> bool:
        """A median above the path's maximum: the path or the speed nasplan assumed is wrong."""
        return self.hard_limit and self.efficiency is not None and self.efficiency > 1.0


def directions_asked(direction: str | None) -> tuple[str, ...]:
    """A plan's ``direction`` (``both``, ``write``, ``read``) as the directions it runs."""
    return DIRECTIONS if direction in (None, "both") else (str(direction),)


def direction_position(direction: str | None) -> int:
    """Where a direction's repetitions stand in a record: writes first, cold reads last."""
    return ORDER.index(direction) if direction in ORDER else 0


def series_of(rep: Mapping[str, Any]) -> str | None:
    """Which series of its test a repetition measures: its direction (None: a kind without),
    within its job for a kind that runs several jobs (a disk profile's ``SEQ1M Q8T1 read``)."""
    job, direction = rep.get("profile_job"), rep.get("direction")
    return f"{job} {direction}" if job else direction


def data_direction(direction: str) -> str:
    """Which way the data went in ``direction``: a cold read is a read (``write``/``read``)."""
    return "read" if direction == COLD_READ else direction


def by_direction(record: Mapping[str, Any], direction: str | None, metric: str) -> list[float]:
    """The ok values of ``metric`` of ``direction``'s repetitions (None: every repetition)."""
    reps = record.get("repetitions") or []
    if direction is not None:
        reps = [r for r in reps if r.get("direction") == direction]
    return ok_values(reps, metric)


def directed(record: Mapping[str, Any], *, network: bool) -> list[Series]:
    """Each direction of a directed record (``directions``: write, read) as a Series, in the
    order they ran; ``network``: its byte rate crossed the path, so it has the path's maximum.
    A direction its ok repetitions have and its summaries lack, or summarised over fewer of
    them (a test stopped before its kind summarised it), is summarised from those repetitions:
    what finished is shown.

    Example: a ``direction: both`` SMB transfer gives ``[Series("write", "bytes_per_second",
    ...), Series("read", ...)]``.
    """
    theoretical = (record.get("path") or {}).get("theoretical_bits_per_second")
    summaries = dict(record.get("directions") or {})
    for rep in record.get("repetitions") or []:
        if rep.get("status") == "ok" and isinstance(rep.get("direction"), str):
            summaries.setdefault(rep["direction"], None)
    found = []
    for direction, summary in summaries.items():
        metric = str((summary or {}).get("metric") or "bytes_per_second")
        values = by_direction(record, direction, metric)
        if not summary or len(values) > (summary.get("n") or 0):
            summary = summarize(values, metric)
        median = summary.get("median")
        bits = median * 8 if network and median is not None else None
        found.append(
            Series(
                direction,
                metric,
                values,
                dict(summary),
                efficiency(bits, theoretical) if network else None,
                theoretical if network else None,
            )
        )
    return found


def single(record: Mapping[str, Any], direction: str | None = None) -> Series:
    """The record's summary as its one Series (its metric, its efficiency, its path's TCP
    maximum); summarised from its ok repetitions when they outnumber its summary's (a test
    stopped before its kind summarised it)."""
    summary = dict(record.get("summary") or {})
    metric = str(summary.get("metric") or "bits_per_second")
    theoretical = (record.get("path") or {}).get("theoretical_bits_per_second")
    values = ok_values(record.get("repetitions") or [], metric)
    found = record.get("efficiency")
    if len(values) > (summary.get("n") or 0):
        summary = summarize(values, metric)
        found = efficiency(summary["median"], theoretical) if "bits" in metric else found
    return Series(direction, metric, values, summary, found, theoretical)
