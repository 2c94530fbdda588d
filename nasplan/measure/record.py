"""A test's run.json record through its life: begun (``new_record``: failed until it succeeds),
never run (``skipped``), ended (``finish``), failed by a host lost on the way
(``lost_host_record``), stopped by the run (``stopped_record``); the summaries of a kind whose
repetitions each have a direction; its warnings (``warn``); kept as a value (``frozen``: what a
run logs of it cannot be changed in place) and given out as a copy of its own (``thawed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nasplan.analysis import efficiency, summarize

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest


def path_params(test: PlanTest, target: str | None = None) -> dict[str, Any]:
    """The params every client -> server kind records; ``address`` is filled in once known;
    several clients at once (``clients``) named from the start, so a part that could not
    start (a client lost) still says whose test it is."""
    params: dict[str, Any] = {
        "server": test.server,
        "client": test.client,
        "target": target or test.target.label(),
        "address": None,
        "repetitions": test.repetitions,
    }
    if len(test.clients) > 1:
        params["clients"] = list(test.clients)
    return params


def new_record(test: PlanTest, params: dict[str, Any], metric: str) -> dict[str, Any]:
    """A test record that has not run yet (status failed until it succeeds)."""
    record: dict[str, Any] = {
        "id": test.id,
        "kind": test.kind,
        "name": test.name,
        "status": "failed",
        "error": None,
        "params": params,
        "path": None,
        "repetitions": [],
        "summary": summarize([], metric),
        "efficiency": None,
    }
    if test.cell:  # a matrix cell: the plan's test id and the cell's values
        record.update(base_id=test.base_id or test.id, cell=dict(test.cell))
    return record


def skipped(test: PlanTest, reason: str) -> dict[str, Any]:
    """The record of a test that did not run at all (e.g. the network setup failed)."""
    params = {k: v for k, v in path_params(test).items() if k not in ("address", "repetitions")}
    record = new_record(test, params, "bits_per_second")
    record.update(status="skipped", error=reason)
    return record


def finish(record: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """``record`` with its status and error set from what went wrong (``[]``: ok)."""
    record["status"] = "failed" if errors else "ok"
    record["error"] = "; ".join(errors) or None
    return record


def lost_host_record(record: Mapping[str, Any], why: str) -> dict[str, Any]:
    """A new ``record`` failed by a host that stopped answering (``why``), its summary over
    the repetitions it finished."""
    said = record.get("error")
    error = said if said and why in said else "; ".join(e for e in (said, why) if e)
    metric = (record.get("summary") or {}).get("metric") or "bits_per_second"
    values = [
        r[metric]
        for r in record.get("repetitions", [])
        if r.get("status") == "ok" and isinstance(r.get(metric), (int, float))
    ]
    return {**record, "status": "failed", "error": error, "summary": summarize(values, metric)}


def stopped_record(record: Mapping[str, Any], planned: int | None = None) -> dict[str, Any]:
    """A new ``record`` of a test the run stopped (Ctrl-C, a full disk) before it wanted no
    more: ``interrupted``, saying after how many of its ``planned`` repetitions, with those it
    finished; a test that failed of its own before the stop stays failed, saying both."""
    said = f"the run was stopped after {_done_text(record, planned)}"
    reps = record.get("repetitions") or []
    failed = [f"repetition {r.get('index')}: {r.get('error')}" for r in reps if r.get("error")]
    own = (record.get("error") if record.get("status") == "failed" else None) or "; ".join(failed)
    if own:
        return {**record, "status": "failed", "error": f"{own}; {said}"}
    return {**record, "status": "interrupted", "error": f"interrupted: {said}"}


def _done_text(record: Mapping[str, Any], planned: int | None) -> str:
    """``2 of 3 repetitions``; a test of several directions counts each direction's:
    ``3 of 3 repetitions (write), 1 of 3 (read)`` (never ``6 of 3``); a grid's (a disk
    profile's jobs × modes) counts its cells, ``_grid_text``."""
    params = record.get("params") or {}
    jobs, modes = params.get("jobs"), params.get("modes")
    if isinstance(jobs, list) and isinstance(modes, list) and jobs and modes:
        return _grid_text(record, len(jobs) * len(modes), planned)
    # one repetition is one index of a direction (several clients' rows share their index)
    ok = list(
        dict.fromkeys(
            (rep.get("direction"), rep.get("index"))
            for rep in record.get("repetitions") or []
            if rep.get("status") == "ok"
        )
    )
    of = f" of {planned}" if planned else ""
    noun = "repetition" if (planned or len(ok)) == 1 else "repetitions"
    directions = list(dict.fromkeys(str(d) for d, _ in ok if d))
    if len(directions) < 2:
        return f"{len(ok)}{of} {noun}" + (f" ({directions[0]})" if directions else "")
    counts = [sum(1 for d, _ in ok if d == one) for one in directions]
    first = f"{counts[0]}{of} {noun} ({directions[0]})"
    return ", ".join(
        [first, *(f"{n}{of} ({d})" for n, d in zip(counts[1:], directions[1:], strict=True))]
    )


def _grid_text(record: Mapping[str, Any], cells: int, planned: int | None) -> str:
    """How far a grid of ``cells`` (job × mode), measured ``planned`` times over, got:
    ``5 of its 12 cells (job × mode) in repetition 1 of 3``, ``1 of 3 repetitions of the grid
    (12 cells, job × mode)``, or both: ``1 of 3 ... and 5 of its cells in repetition 2``."""
    done: dict[tuple[Any, Any], set[Any]] = {}
    for rep in record.get("repetitions") or []:
        if rep.get("status") == "ok":
            done.setdefault((rep.get("profile_job"), rep.get("direction")), set()).add(
                rep.get("index")
            )
    counts = [len(indexes) for indexes in done.values()]
    whole = min(counts) if len(counts) == cells else 0
    more = sum(1 for n in counts if n > whole)
    of = f" of {planned}" if planned else ""
    if not whole:
        return f"{more} of the grid's {cells} cells (job × mode) in repetition 1{of}"
    noun = "repetition" if (planned or whole) == 1 else "repetitions"
    text = f"{whole}{of} {noun} of the grid ({cells} cells, job × mode)"
    return text + (f" and {more} of its cells in repetition {whole + 1}" if more else "")


def summarize_directions(record: dict[str, Any], directions: tuple[str, ...] | list[str]) -> None:
    """Per-direction byte rates into ``record["directions"]``; the first direction's bit rate is
    the record's ``summary`` and, against the path's TCP maximum, its ``efficiency``."""
    reps = record["repetitions"]
    ok = [r for r in reps if r["status"] == "ok"]
    for direction in directions:
        rates = [r["bytes_per_second"] for r in ok if r["direction"] == direction]
        record["directions"][direction] = summarize(rates, "bytes_per_second")
    bits = [r["bits_per_second"] for r in ok if r["direction"] == directions[0]]
    record["summary"] = summarize(bits, "bits_per_second")
    theoretical = (record["path"] or {}).get("theoretical_bits_per_second")
    record["efficiency"] = efficiency(record["summary"]["median"], theoretical)


def finish_directions(
    record: dict[str, Any], directions: tuple[str, ...] | list[str]
) -> dict[str, Any]:
    """A per-direction kind's finished record (transfer, iSCSI): its summaries per direction
    (``summarize_directions``), its status and its error, from its repetitions."""
    summarize_directions(record, directions)
    reps = record["repetitions"]
    errors = [f"{r['direction']} {r['index']}: {r['error']}" for r in reps if r["error"]]
    return finish(record, errors)


def warn(record: dict[str, Any], text: str) -> None:
    """Note what may skew the test's numbers or what it left behind (``record["warnings"]``,
    said in run.json's warnings with the test's id)."""
    said = record.setdefault("warnings", [])
    if text not in said:
        said.append(text)


class FrozenList(tuple[Any, ...]):
    """A record's list as ``frozen`` keeps it: a tuple (nothing to append to, no item to set)
    that ``thawed`` gives back as a list (a record's own tuples stay tuples)."""

    __slots__ = ()


def frozen(value: Any) -> Any:
    """``value`` (a record or any part of it) as a deep value no one can change in place: each
    mapping a read-only ``MappingProxyType`` over a copy, each list a ``FrozenList``, each tuple
    a tuple of frozen items; the rest (numbers, strings, None) as it is. Writing into it raises
    TypeError (``frozen(r)["status"] = ...``) or AttributeError (``...["repetitions"].append``)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: frozen(item) for key, item in value.items()})
    if isinstance(value, FrozenList):
        return value
    if isinstance(value, list):
        return FrozenList(frozen(item) for item in value)
    if isinstance(value, tuple):
        return tuple(frozen(item) for item in value)
    return value


def thawed(value: Any) -> Any:
    """A deep copy of ``value`` that shares nothing with it, in plain types: each mapping a
    dict, each list (and ``FrozenList``) a list, each tuple a tuple: a record to change as one
    likes, or to write (``thawed(frozen(r)) == r``)."""
    if isinstance(value, Mapping):
        return {key: thawed(item) for key, item in value.items()}
    if isinstance(value, list | FrozenList):
        return [thawed(item) for item in value]
    if isinstance(value, tuple):
        return tuple(thawed(item) for item in value)
    return value
