"""A test run a few repetitions at a time: its parts merged into one record, and what a resumed
run keeps of a test's record.

A run that interleaves its tests runs each one as parts (``PlanTest.first_repetition``,
``repetitions``), each with its own set-up and teardown and a record of its own. ``merge``
makes the one record a run of all those repetitions at once gives: repetitions in the order
the kind runs them (writes first, by number), times on one clock (each part shifted by when it
began after the first), the hosts' resource series laid end to end, and the kind's summary
computed again over all of them (``Kind.summarize``). One part at offset 0 is its own record.

The parts may be frozen (``record.frozen``: a cell's log); the record ``merge`` returns is a
new one in plain types that shares nothing with them (one part too: ``record.thawed``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nasplan.measure.record import finish, thawed
from nasplan.measure.series import direction_position, series_of

Record = dict[str, Any]
Summarize = Callable[[Record], Record]
# a part's record (plain or frozen) and when it began on the test's clock (seconds after the
# first part)
Part = tuple[Mapping[str, Any], float]


def rep_key(rep: Mapping[str, Any]) -> tuple[int, int]:
    """Where a repetition goes in its record: by direction (writes first), then number."""
    return direction_position(rep.get("direction")), int(rep.get("index") or 0)


def merge(parts: Sequence[Part], summarize: Summarize) -> Record:
    """One record from a test's parts (in the order they ran); see the module's docstring.

    Everything but repetitions, resources, timeline and warnings (each once) is the last
    part's (a latency test's path-MTU probe); its parameters are the last part's over those
    of the parts before it (a part that could not start, a client lost, does not unsay the
    address and clients the repetitions before it measured with); errors that no repetition
    explains (a part that could not start, a cleanup that failed) are kept, each once.
    """
    record: Record = thawed(parts[-1][0])
    if len(parts) == 1 and parts[0][1] == 0:
        return record
    record["params"] = _params([part for part, _ in parts])
    reps = [_shifted(rep, offset_s) for part, offset_s in parts for rep in part["repetitions"]]
    record["repetitions"] = sorted(reps, key=rep_key)
    record["params"]["repetitions"] = len({rep.get("index") for rep in reps})
    path = next((p["path"] for p, _ in parts if p.get("path")), record.get("path"))
    record["path"] = thawed(path)
    if any("resources" in part for part, _ in parts):
        record["resources"] = merge_resources([(p.get("resources"), off) for p, off in parts])
    if any("timeline" in part for part, _ in parts):
        record["timeline"] = _merged_timeline(parts)
    if any(part.get("warnings") for part, _ in parts):
        record["warnings"] = list(
            dict.fromkeys(w for p, _ in parts for w in p.get("warnings") or [])
        )
    extras = list(dict.fromkeys(e for part, _ in parts for e in _unexplained(part, summarize)))
    if not reps:
        return finish(record, extras)
    record = summarize(record)
    said = _errors(record)
    return finish(record, said + [e for e in extras if e not in said])


def _params(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The parts' parameters, each key the last part's that says it (not None)."""
    params: dict[str, Any] = {}
    for part in parts:
        said = part.get("params") or {}
        params.update({k: thawed(v) for k, v in said.items() if v is not None})
        params.update({k: None for k, v in said.items() if v is None and k not in params})
    return params


def _errors(record: Mapping[str, Any]) -> list[str]:
    return str(record["error"]).split("; ") if record.get("error") else []


def _unexplained(part: Mapping[str, Any], summarize: Summarize) -> list[str]:
    """The errors of a part that its repetitions do not explain."""
    said = _errors(part)
    if not said or not part["repetitions"]:
        return said
    explained = _errors(summarize(thawed(part)))
    return [error for error in said if error not in explained]


def _shifted(rep: Mapping[str, Any], offset_s: float) -> dict[str, Any]:
    """A repetition on the test's clock: its ``started_s`` / ``ended_s`` moved by ``offset_s``."""
    moved: dict[str, Any] = thawed(rep)
    for key in ("started_s", "ended_s"):
        if offset_s and isinstance(moved.get(key), (int, float)):
            moved[key] = round(moved[key] + offset_s, 3)
    return moved


def _merged_timeline(parts: Sequence[Part]) -> dict[str, Any] | None:
    """Every part's throughput series on the test's clock, in the order of the repetitions."""
    found = []
    for part, offset_s in parts:
        for series in (part.get("timeline") or {}).get("throughput") or []:
            moved = thawed(series)
            moved["t_s"] = [round(t + offset_s, 2) for t in series.get("t_s") or []]
            found.append(moved)
    found.sort(key=lambda s: rep_key({"direction": s.get("direction"), "index": s["repetition"]}))
    return {"throughput": found} if found else None


def merge_resources(parts: Sequence[tuple[Mapping[str, Any] | None, float]]) -> dict[str, Any]:
    """The hosts' resource samples of every part: counts added, extremes kept, the CPU median
    over every point, the series laid end to end on the test's clock."""
    hosts = list(dict.fromkeys(name for resources, _ in parts for name in resources or {}))
    merged: dict[str, Any] = {}
    for name in hosts:
        samples = [(r[name], off) for r, off in parts if r and r.get(name)]
        merged[name] = _host_resources(samples) if samples else None
    return merged


def _host_resources(samples: Sequence[tuple[Mapping[str, Any], float]]) -> dict[str, Any]:
    def values(key: str) -> list[Any]:
        return [s[key] for s, _ in samples if s.get(key) is not None]

    series = _merged_series([(s["series"], off) for s, off in samples if s.get("series")])
    busy = [v for v in (series or {}).get("cpu_busy_percent") or [] if v is not None]
    medians = values("cpu_busy_percent_median")
    result: dict[str, Any] = {
        "samples": sum(values("samples")),
        "cpu_busy_percent_median": statistics.median(busy or medians) if busy or medians else None,
        "cpu_busy_percent_max": max(values("cpu_busy_percent_max"), default=None),
        "mem_available_bytes_min": min(values("mem_available_bytes_min"), default=None),
        "duration_s": sum(values("duration_s")) if values("duration_s") else None,
    }
    if series is not None:
        result["series"] = series
    return result


def _merged_series(parts: Sequence[tuple[Mapping[str, Any], float]]) -> dict[str, Any] | None:
    """Sampler series (``sampler.series``) end to end; a disk or NIC a part did not see moving
    has no values (None) in that part's stretch."""
    if not parts:
        return None
    merged: dict[str, Any] = {"t_s": [], "cpu_busy_percent": [], "mem_available_bytes": []}
    merged.update(disks={}, nics={})
    for series, offset_s in parts:
        length = len(series.get("t_s") or [])
        merged["t_s"] += [round(t + offset_s, 2) for t in series.get("t_s") or []]
        for key in ("cpu_busy_percent", "mem_available_bytes"):
            merged[key] += list(series.get(key) or [None] * length)
        for group in ("disks", "nics"):
            for device in {**merged[group], **(series.get(group) or {})}:
                mine = (series.get(group) or {}).get(device) or {}
                seen = merged[group].setdefault(device, {})
                for counter in dict.fromkeys([*seen, *mine]):
                    earlier = seen.get(counter) or [None] * (len(merged["t_s"]) - length)
                    seen[counter] = earlier + list(mine.get(counter) or [None] * length)
    return merged


Done = tuple[int, str | None]


def done_pairs(record: Mapping[str, Any]) -> set[Done]:
    """Each ``(repetition number, series)`` of ``record`` that ended ok: its direction (a kind
    without directions: None), a disk profile's job and mode (``series_of``)."""
    return {
        (int(rep["index"]), series_of(rep))
        for rep in record.get("repetitions") or []
        if rep.get("status") == "ok"
    }


def done_indices(record: Mapping[str, Any], asked: Sequence[str | None]) -> set[int]:
    """The repetition numbers of ``record`` that ended ok: every direction (series) ``asked`` of
    it there and ok (a transfer's write whose read never ran is not done)."""
    pairs = done_pairs(record)
    indices = {index for index, _ in pairs}
    return {i for i in indices if all((i, direction) in pairs for direction in asked)}


def kept_part(record: Mapping[str, Any]) -> Record | None:
    """What a resumed run keeps of a test's record: each direction of each repetition that
    ended ok (a write whose read did not run too), as a part to merge the new ones with
    (None: nothing to keep)."""
    done = done_pairs(record)
    if not done:
        return None
    kept: Record = thawed(record)
    kept["repetitions"] = [
        r for r in kept["repetitions"] if (int(r.get("index") or 0), series_of(r)) in done
    ]
    throughput = (kept.get("timeline") or {}).get("throughput") or []
    # a series of a kind without directions may have one of its own (iperf3 -R: reverse)
    kept_series = [
        s for s in throughput if {_pair(s, "repetition"), (_pair(s, "repetition")[0], None)} & done
    ]
    kept["timeline"] = {"throughput": kept_series} if kept_series else None
    kept.update(status="ok", error=None)
    return kept


def _pair(entry: Mapping[str, Any], key: str) -> Done:
    return int(entry.get(key) or 0), entry.get("direction")
