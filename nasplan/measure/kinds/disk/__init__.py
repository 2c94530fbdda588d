"""The ``disk`` test kind: fio sequential write/read on a path of the NAS's volume, on the NAS.

Each test works in its own directory ``<path>/nasplan-fio-<token>``, removed in ``finally``.
When the file system refuses O_DIRECT, the test says so and (``fallback_buffered``, the
default) repeats with buffered I/O, marked cache-influenced.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nasplan import platforms
from nasplan.analysis import MIN_TRUSTED_S, cache_influence, summarize
from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import probes, sampling, timeline
from nasplan.measure.capacity import DISK, Capacity
from nasplan.measure.commands import command
from nasplan.measure.estimate import Estimate, parts, volume_rate
from nasplan.measure.fio_workdir import FIO_FILE, WORKDIR_PREFIX, make_workdir, remove_workdir
from nasplan.measure.kind import Kind, Needs, Probe, Record, RunContext, Section
from nasplan.measure.kinds.disk import windows as disk_windows
from nasplan.measure.kinds.disk.settings import DiskSettings
from nasplan.measure.pair import check_ready
from nasplan.measure.record import finish, new_record, warn
from nasplan.measure.series import DIRECTIONS, Series
from nasplan.measure.tools import fio
from nasplan.quantities import BYTES

# a repetition's own start and end besides its data: fio started, its output read back
STEP_S = 0.3
# a part's own start and end besides its repetitions: its directory made and removed, sampling
PART_S = 0.1
# what a disk test's estimate assumes when the plan cannot say: a single hard disk's rate
ASSUMED_DISK_BYTES_PER_SECOND = 200 * 2**20


def _run_diskspd(
    test: PlanTest,
    s: DiskSettings,
    ctx: RunContext,
    session: HostSession,
    diskspd_path: str,
    record: dict[str, Any],
) -> dict[str, Any]:
    """diskspd (Windows' tool for fio's job: ``Platform.equivalent``), caches off."""
    assert session.runner is not None
    record["params"]["tool"] = "diskspd"
    plan = [(d, i) for d in s.directions for i in test.indices if test.wants(i, d)]
    reps, errors, warnings = disk_windows.run_repetitions(
        session.runner,
        diskspd_path,
        s.path,
        plan,
        s.size_bytes,
        s.duration_s,
        lambda name, raw: ctx.save_raw(f"raw/{test.dir_name}/{name}.txt", raw),
    )
    record["repetitions"] = reps
    for text in warnings:
        warn(record, text)
    _summarize(record, session, s.size_bytes)
    return finish(record, errors if reps else [*errors, "no repetition ran"])


# A platform's own tool for fio's job (``Platform.equivalent("fio")``) -> how the test runs it.
_OTHER_TOOLS = {"diskspd": _run_diskspd}


@dataclass(frozen=True)
class _Fio:
    """One disk test's fio work on its host: the test, its settings, the file, its record."""

    test: PlanTest
    s: DiskSettings
    ctx: RunContext
    session: HostSession
    fio_path: str
    filename: str
    record: dict[str, Any]


def _repetitions(job: _Fio, errors: list[str]) -> list[dict[str, Any] | None]:
    """Run every repetition into the record (writes first); return each one's series from
    fio's log. A read of a file whose last write failed is no measurement (fio would read the
    holes such a write leaves, at memory speed): it fails, saying so, and fio does not run."""
    test, ctx, record = job.test, job.ctx, job.record
    clock = timeline.Clock()
    throughput: list[dict[str, Any] | None] = []
    last_write: dict[str, Any] | None = None
    for direction in job.s.directions:
        for index in (i for i in test.indices if test.wants(i, direction)):
            ctx.progress.test(test.id, index, test.repetitions, 0.0, direction)
            started_s = clock.now_s()
            unwritten = _unwritten(last_write) if direction == "read" else None
            if unwritten is not None:
                rep: dict[str, Any] = {"status": "failed", "error": unwritten, "raw_file": None}
                rep.update(direction=direction)
            else:
                rep = _measured(job, direction, index)
            rep.update(index=index, started_s=started_s, ended_s=clock.now_s())
            if direction == "write":
                last_write = rep
            bw_log = rep.pop("bw_log", [])
            record["repetitions"].append(rep)
            ctx.checkpoint(record)
            if rep["error"]:
                errors.append(f"{direction} {index}: {rep['error']}")
                continue
            throughput.append(_series(bw_log, started_s, direction, index))
    return throughput


def _unwritten(last_write: dict[str, Any] | None) -> str | None:
    """Why a read cannot be measured after ``last_write`` (None: it can, or nothing was
    written by this test: fio then lays out the file itself before it reads)."""
    if last_write is None or last_write["status"] == "ok":
        return None
    return (
        "not measured: the file to read was not written whole (the write before it failed), "
        "and reading what a failed write left is not a disk's speed"
    )


def _measured(job: _Fio, direction: str, index: int) -> dict[str, Any]:
    """One fio repetition; when the host refuses O_DIRECT and the plan allows it, measured
    again with buffered I/O (said once, in the run's warnings)."""
    params, name = job.record["params"], f"{job.test.dir_name}/{direction}-{index}"
    fio_job = fio.FioParams(rw=direction, size_bytes=params["size_bytes"], direct=params["direct"])
    rep, refused = _one(job, fio_job, name)
    if refused and job.s.fallback_buffered:
        params["direct"] = False
        warn(
            job.record,
            f"{job.session.host.name} refused direct I/O (O_DIRECT) on "
            f"{params['path']}; measured with buffered I/O instead (cache-influenced)",
        )
        fio_job = fio.FioParams(rw=direction, size_bytes=params["size_bytes"], direct=False)
        rep, _ = _one(job, fio_job, name)
    return rep


def _series(
    bw_log: list[tuple[float, float, str]], started_s: float, direction: str, index: int
) -> dict[str, Any] | None:
    """A repetition's per-second rates from fio's bandwidth log, on the test's clock."""
    t_s, rates = timeline.fio_points(bw_log, started_s, direction)
    return timeline.series(
        repetition=index,
        direction=direction,
        source="fio",
        t_s=t_s,
        bits_per_second=rates,
        started_s=started_s,
        detect_fall=True,
    )


def _one(job: _Fio, fio_job: fio.FioParams, name: str) -> tuple[dict[str, Any], bool]:
    """One fio job -> (repetition, whether O_DIRECT was refused)."""
    runner, ctx, filename = job.session.runner, job.ctx, job.filename
    assert runner is not None
    rep: dict[str, Any] = {"index": 0, "status": "failed", "error": None, "raw_file": None}
    rep["direction"] = fio_job.rw
    bw_log_prefix = f"{filename}.bw"
    # the argv run_job runs (fio_argv is pure: the same arguments give the same argv)
    argv = fio.fio_argv(job.fio_path, filename, fio_job, bw_log_prefix)
    rep["commands"] = [command(runner.name, argv)]
    try:
        raw, parsed = fio.run_job(runner, job.fio_path, filename, fio_job, bw_log_prefix)
    except fio.FioError as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = ctx.save_raw(f"raw/{name}.txt", exc.raw)
        return rep, exc.direct_io_unsupported and fio_job.direct
    rep["raw_file"] = ctx.save_raw(f"raw/{name}.json", raw)
    if parsed["bytes"] is not None and parsed["bytes"] < fio_job.size_bytes:
        rep["error"] = (
            f"fio moved {parsed['bytes']} of the {fio_job.size_bytes} bytes asked for: not a "
            "measurement of the whole file"
        )
        return rep, False
    rep.update(
        status="ok",
        bytes_per_second=parsed["bytes_per_second"],
        bytes=parsed["bytes"],
        duration_s=parsed["duration_s"],
        direct=parsed["direct"],
        bw_log=parsed.get("bw_log") or [],
    )
    return rep, False


def _summarize(record: dict[str, Any], session: HostSession, size_bytes: int) -> None:
    _direction_summaries(record)
    # the RAM its page cache may fill: a cgroup's limit below the RAM counts (facts)
    memory_bytes = session.facts.cache_bytes if session.facts else None
    medians = [s.get("median") or 0.0 for s in (record.get("directions") or {}).values() if s]
    record["cache_warning"] = cache_influence(
        size_bytes,
        memory_bytes,
        record["params"]["direct"],
        at_least_bytes=max(medians, default=0.0) * MIN_TRUSTED_S,  # the Diagnosis's size too
    )


def _direction_summaries(record: dict[str, Any]) -> None:
    """Each direction's summary; the first one's is the record's."""
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


class Disk(Kind[DiskSettings]):
    """``kind: disk``: fio's sequential write and read on the NAS itself, in MiB/s."""

    name = "disk"
    phrase = "disk rate with fio"
    groups = ("Disk",)
    metric = "bytes_per_second"
    timeline_quantity = BYTES
    directed = True
    short_start = "start-up (opening the file, the first requests)"
    section = Section(__name__)

    def settings(self, test: PlanTest) -> DiskSettings:
        """``host`` and ``path`` required; the defaults of DiskSettings."""
        s = test.settings
        given = test.given(
            "volume", "direction", "size", "direct", "fallback_buffered", "duration_s"
        )
        return DiskSettings(host=str(s["host"]), path=str(s["path"]), **given)

    def needs(self, test: PlanTest, s: DiskSettings) -> Needs:
        """fio on the host whose disk is measured."""
        return {host: ("fio",) for host in test.hosts}

    def probes(
        self, test: PlanTest, s: DiskSettings, plan: Plan, sessions: Mapping[str, HostSession]
    ) -> list[Probe]:
        """The directory fio writes into (a Windows path: diskspd's, not looked at here)."""
        if s.path.find(":\\") == 1:
            return []
        return [probes.writable_directory(s.host, s.path, "the disk test's path")]

    def describe(self, test: PlanTest, s: DiskSettings) -> str:
        on = f" (volume {s.volume})" if s.volume else ""
        return (
            f"fio sequential {s.direction} on {s.host}:{s.path}{on}, "
            f"{s.size} in 1 MiB blocks, "
            f"{'direct' if s.direct else 'buffered'} I/O, x {test.repetitions_text}"
        )

    def estimate(self, test: PlanTest, s: DiskSettings, plan: Plan) -> Estimate:
        each = len(s.directions) * test.repetitions
        setup_s = parts(plan, test) * PART_S
        if s.path.find(":\\") == 1:  # diskspd on Windows runs duration_s
            return Estimate(setup_s + (s.duration_s + STEP_S) * each)
        stated = volume_rate(plan, s.host, s.volume)
        rate, said = stated or (ASSUMED_DISK_BYTES_PER_SECOND, "disks at 200 MiB/s")
        seconds = setup_s + (s.size_bytes / rate + STEP_S) * each
        return Estimate(seconds, (said,))

    def run(self, test: PlanTest, s: DiskSettings, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one disk test; failures are recorded, never raised."""
        size_bytes = s.size_bytes
        params = {
            "host": s.host,
            "path": s.path,
            "volume": s.volume,
            "direction": s.direction,
            "size_bytes": size_bytes,
            "block_bytes": fio.DEFAULT_BLOCK_BYTES,
            "direct": bool(s.direct),
            "repetitions": test.repetitions,
        }
        record = new_record(test, params, "bytes_per_second")
        record.update(directions={}, cache_warning=None)
        session = ctx.sessions[s.host]
        try:
            check_ready(test, ctx, self.needs(test, s))
        except CannotStart as exc:
            record["error"] = str(exc)
            return record
        assert session.runner is not None
        fio_path = session.tools["fio"]  # the platform's tool for fio's job (``equivalent``)
        other = _OTHER_TOOLS.get(platforms.of(session.runner).equivalent("fio"))
        if other is not None:
            return other(test, s, ctx, session, fio_path, record)
        token = secrets.token_hex(4)
        path = s.path
        try:
            fio.check_filename(f"{path.rstrip('/')}/{WORKDIR_PREFIX}{token}/{FIO_FILE}")
        except ValueError as exc:
            record["error"] = f"path {path!r}: {exc}"
            return record
        # The sampler starts while the test directory is made and stops while it is removed; the
        # first fio waits for it, so it sees every measurement whole.
        with sampling.overlapped(ctx.sessions, [session.host.name], token, ctx.tasks) as sampled:
            try:
                workdir = make_workdir(session, path, token)
            except CannotStart as exc:
                record["error"] = str(exc)
                return record
            errors: list[str] = []
            throughput: list[dict[str, Any] | None] | None = None
            try:
                filename = fio.check_filename(f"{workdir}/{FIO_FILE}")
                sampled.wait_started()
                job = _Fio(test, s, ctx, session, fio_path, filename, record)
                throughput = _repetitions(job, errors)
            except ValueError as exc:  # the directory resolved to a path fio would misread
                errors.append(f"path {path!r} resolves to {workdir!r}: {exc}")
            finally:
                sampled.stop()
                remove_workdir(session, workdir, record)
        if throughput is not None:  # measured (the directory's path was one fio reads as given)
            record["resources"] = sampled.resources
            record["timeline"] = timeline.timeline(throughput)
        _summarize(record, session, size_bytes)
        return finish(record, errors)

    def summarize(self, record: dict[str, Any], s: DiskSettings) -> dict[str, Any]:
        """Summaries and status from its repetitions (a merged record's cache warning is its
        last part's)."""
        _direction_summaries(record)
        reps = record["repetitions"]
        errors = [f"{r['direction']} {r['index']}: {r['error']}" for r in reps if r["error"]]
        return finish(record, errors)

    def flow(self, record: Record, direction: str | None) -> str:
        params = record.get("params") or {}
        on = f" (volume {params['volume']})" if params.get("volume") else ""
        return f"{params.get('host', '–')} {params.get('path', '')}{on}".strip()

    def measured(self, record: Record, series: Series | None) -> str:
        direct = (record.get("params") or {}).get("direct")
        direction = series.direction if series else None
        return f"fio {direction} ({'direct' if direct else 'buffered'})"

    def storage_path(self, record: Record) -> tuple[str, str] | None:
        params = record.get("params") or {}
        host, path = params.get("host"), params.get("path")
        return (str(host), path) if isinstance(path, str) else None

    def capacities(self, record: Record) -> list[Capacity]:
        params = record.get("params") or {}
        host, volume = str(params.get("host")), params.get("volume")
        return [
            Capacity(DISK, host, direction, float(median), volume=volume)
            for direction, summary in (record.get("directions") or {}).items()
            if isinstance(median := (summary or {}).get("median"), (int, float))
        ]


KIND = Disk()
