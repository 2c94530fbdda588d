"""The ``disk`` test kind: fio sequential write/read on a path of the NAS's volume, on the NAS.

Each test works in its own directory ``<path>/nasplan-fio-<token>``, removed in ``finally``.
When the file system refuses O_DIRECT, the test says so and (``fallback_buffered``, the
default) repeats with buffered I/O, marked cache-influenced.
"""

from __future__ import annotations

import secrets
from typing import Any

from nasplan import shell
from nasplan.analysis import cache_influence, summarize
from nasplan.context import RunContext
from nasplan.hosts import HostSession
from nasplan.measure import TestKind, disk_windows, fio, sampler
from nasplan.measure.common import not_ready
from nasplan.plan import TestSpec
from nasplan.results import save_raw
from nasplan.units import parse_size

DIRECTIONS = ("write", "read")
DEFAULT_SIZE = "64MiB"
_SETUP_TIMEOUT_S = 60.0


def host_of(test: TestSpec) -> str:
    """The one host a disk test runs on (``host:`` in the plan)."""
    return str(test.settings["host"])


def _directions(test: TestSpec) -> tuple[str, ...]:
    direction = str(test.settings.get("direction", "both"))
    return DIRECTIONS if direction == "both" else (direction,)


def new_record(test: TestSpec, size_bytes: int) -> dict[str, Any]:
    """A disk test record that has not run yet (status failed until it succeeds)."""
    s = test.settings
    return {
        "id": test.id,
        "kind": "disk",
        "name": test.name,
        "status": "failed",
        "error": None,
        "params": {
            "host": host_of(test),
            "path": s["path"],
            "direction": s.get("direction", "both"),
            "size_bytes": size_bytes,
            "block_bytes": fio.DEFAULT_BLOCK_BYTES,
            "direct": bool(s.get("direct", True)),
            "repetitions": test.repetitions,
        },
        "path": None,
        "repetitions": [],
        "summary": summarize([], "bytes_per_second"),
        "efficiency": None,
        "directions": {},
        "cache_warning": None,
    }


def run(test: TestSpec, ctx: RunContext) -> dict[str, Any]:
    """Run every repetition of one disk test; failures are recorded, never raised."""
    size_bytes = parse_size(test.settings.get("size", DEFAULT_SIZE))
    record = new_record(test, size_bytes)
    session = ctx.sessions[host_of(test)]
    reason = not_ready(test, ctx)
    if reason:
        record["error"] = reason
        return record
    assert session.runner is not None
    fio_path = session.tools["fio"]
    if shell.of(session.runner).is_windows:
        return _run_windows(test, ctx, session, fio_path, record, size_bytes)
    token = secrets.token_hex(4)
    workdir = f"{str(test.settings['path']).rstrip('/')}/nasplan-fio-{token}"
    made = session.runner.run(["mkdir", "-p", "--", workdir], timeout_s=_SETUP_TIMEOUT_S)
    if not made.ok:
        record["error"] = f"cannot create {workdir} on {session.host.name}: {made.stderr.strip()}"
        return record
    errors: list[str] = []
    try:
        with sampler.sampling(ctx.sessions, [session.host.name], token) as resources:
            _repetitions(test, ctx, session, fio_path, f"{workdir}/fio.bin", record, errors)
        record["resources"] = resources
    finally:
        removed = session.runner.run(["rm", "-rf", "--", workdir], timeout_s=_SETUP_TIMEOUT_S)
        if not removed.ok:
            ctx.warnings.append(f"{test.id}: could not remove {workdir}: {removed.stderr.strip()}")
    _summarize(record, session, size_bytes)
    record["status"] = "failed" if errors else "ok"
    record["error"] = "; ".join(errors) or None
    return record


def _run_windows(
    test: TestSpec,
    ctx: RunContext,
    session: HostSession,
    diskspd_path: str,
    record: dict[str, Any],
    size_bytes: int,
) -> dict[str, Any]:
    """Windows: diskspd (the platform's disk tool, given for ``fio``), caches off."""
    assert session.runner is not None
    record["params"]["tool"] = "diskspd"
    duration_s = int(test.settings.get("duration_s", 10))
    plan = [(d, i) for d in _directions(test) for i in range(1, test.repetitions + 1)]
    reps, errors, warnings = disk_windows.run_repetitions(
        session.runner,
        diskspd_path,
        str(test.settings["path"]),
        plan,
        size_bytes,
        duration_s,
        lambda name, raw: save_raw(ctx.run_dir, f"raw/{test.id}/{name}.txt", raw),
    )
    record["repetitions"] = reps
    ctx.warnings += [f"{test.id}: {w}" for w in warnings]
    _summarize(record, session, size_bytes)
    record["status"] = "failed" if errors or not reps else "ok"
    record["error"] = "; ".join(errors) or None
    return record


def _repetitions(
    test: TestSpec,
    ctx: RunContext,
    session: HostSession,
    fio_path: str,
    filename: str,
    record: dict[str, Any],
    errors: list[str],
) -> None:
    params = record["params"]
    direct = bool(params["direct"])
    directions = _directions(test)
    total, done = test.repetitions * len(directions), 0
    for direction in directions:
        for index in range(1, test.repetitions + 1):
            done += 1
            ctx.progress.test(test.id, done, total, 0.0)
            job = fio.FioParams(rw=direction, size_bytes=params["size_bytes"], direct=direct)
            rep, refused = _one(
                ctx, session, fio_path, filename, job, f"{test.id}/{direction}-{index}"
            )
            if refused and test.settings.get("fallback_buffered", True):
                direct = params["direct"] = False
                ctx.warnings.append(
                    f"{test.id}: {session.host.name} refused direct I/O (O_DIRECT) on "
                    f"{params['path']}; measured with buffered I/O instead (cache-influenced)"
                )
                job = fio.FioParams(rw=direction, size_bytes=params["size_bytes"], direct=False)
                rep, _ = _one(
                    ctx, session, fio_path, filename, job, f"{test.id}/{direction}-{index}"
                )
            rep["index"] = index
            record["repetitions"].append(rep)
            if rep["error"]:
                errors.append(f"{direction} {index}: {rep['error']}")


def _one(
    ctx: RunContext,
    session: HostSession,
    fio_path: str,
    filename: str,
    job: fio.FioParams,
    name: str,
) -> tuple[dict[str, Any], bool]:
    """One fio job -> (repetition, whether O_DIRECT was refused)."""
    assert session.runner is not None
    rep: dict[str, Any] = {"index": 0, "status": "failed", "error": None, "raw_file": None}
    rep["direction"] = job.rw
    try:
        raw, parsed = fio.run_job(session.runner, fio_path, filename, job)
    except fio.FioError as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = save_raw(ctx.run_dir, f"raw/{name}.txt", exc.raw)
        return rep, exc.direct_io_unsupported and job.direct
    rep.update(
        status="ok",
        raw_file=save_raw(ctx.run_dir, f"raw/{name}.json", raw),
        bytes_per_second=parsed["bytes_per_second"],
        bytes=parsed["bytes"],
        duration_s=parsed["duration_s"],
        direct=parsed["direct"],
    )
    return rep, False


def _summarize(record: dict[str, Any], session: HostSession, size_bytes: int) -> None:
    reps = record["repetitions"]
    for direction in DIRECTIONS:
        rates = [
            r["bytes_per_second"]
            for r in reps
            if r.get("direction") == direction and r["status"] == "ok"
        ]
        if any(r.get("direction") == direction for r in reps):
            record["directions"][direction] = summarize(rates, "bytes_per_second")
    first = next(iter(record["directions"].values()), None)
    if first is not None:
        record["summary"] = first
    memory_bytes = session.facts.memory_bytes if session.facts else None
    record["cache_warning"] = cache_influence(size_bytes, memory_bytes, record["params"]["direct"])


def describe(test: TestSpec) -> str:
    """One line for ``apply --check``."""
    s = test.settings
    return (
        f"fio sequential {s.get('direction', 'both')} on {host_of(test)}:{s['path']}, "
        f"{s.get('size', DEFAULT_SIZE)} in 1 MiB blocks, "
        f"{'direct' if s.get('direct', True) else 'buffered'} I/O, x {test.repetitions}"
    )


def needs(test: TestSpec) -> dict[str, tuple[str, ...]]:
    """fio on the host whose disk is measured."""
    return {host: ("fio",) for host in test.hosts}


KIND = TestKind(name="disk", needs=needs, run=run, describe=describe)
