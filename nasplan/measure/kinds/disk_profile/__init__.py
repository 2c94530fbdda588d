"""The ``disk-profile`` test kind: a disk benchmark's grid with fio on a directory of the NAS's
volume, on the NAS: CrystalDiskMark's and KDiskMark's SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1 and
RND4K Q1T1 (or jobs of the plan's own), each read, write and a mix, in MB/s, IOPS and latency
percentiles from fio's own JSON (``profiles`` beside it).

Each test works in its own directory ``<path>/nasplan-fio-<token>``, removed in ``finally``.
With ``through:`` it runs on a client instead, in that directory of the NAS's share, which
nasplan mounts there for the test (``nasplan.measure.through``), or on an iSCSI LUN, or on the
one file the user-space bridge serves (an NFS export's, a LUN's): fio's queue depth then reaches
the NAS as one request at a time, which the record's warnings say. On a Windows host or client
diskspd measures the same grid, as CrystalDiskMark runs it (``windows`` beside it); the record
says which tool (``params.tool``: fio or diskspd).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from nasplan import platforms
from nasplan.analysis import summarize
from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import probes, through
from nasplan.measure.estimate import Estimate
from nasplan.measure.fio_workdir import FIO_FILE, make_workdir, remove_workdir
from nasplan.measure.kind import DASH, Kind, Needs, Probe, Record, RunContext, Section
from nasplan.measure.kinds.disk_profile import profiles as fio_profiles
from nasplan.measure.kinds.disk_profile import view
from nasplan.measure.kinds.disk_profile import windows as profile_windows
from nasplan.measure.kinds.disk_profile.profiles import Job
from nasplan.measure.kinds.disk_profile.settings import ProfileSettings
from nasplan.measure.kinds.disk_profile.view import cell_of, grid, job_modes
from nasplan.measure.mounts import Mounted
from nasplan.measure.pair import check_ready
from nasplan.measure.record import finish, new_record, warn
from nasplan.measure.series import Series, series_of
from nasplan.measure.tools import fio
from nasplan.units import parse_size

# a run's own start and end besides its time: fio started, the file laid out, its JSON read
STEP_S = 1.0


def _job(given: Mapping[str, Any]) -> Job:
    return Job(
        block_bytes=parse_size(given["block_size"]),
        queue_depth=int(given.get("queue_depth", 1)),
        threads=int(given.get("threads", 1)),
        random=given.get("pattern", "sequential") == "random",
    )


def _grid(
    test: PlanTest, s: ProfileSettings, ctx: RunContext, record: dict[str, Any],
    one: Callable[[Job, str], dict[str, Any]], ext: str,
) -> None:  # fmt: skip
    """Every job of the grid in every mode, repetitions of each (``one(job, mode)``: its
    repetition, raw output under ``raw``, saved as ``raw/<test>/<job>-<mode>-<i>.<ext>``)."""
    for job in s.grid:
        for mode in s.modes:
            for index in test.indices:
                if not test.wants(index, f"{job.name} {mode}"):  # a resumed run kept it
                    continue
                rep = one(job, mode)
                name = f"{job.name.replace(' ', '-').lower()}-{mode}-{index}"
                raw = rep.pop("raw", "")
                rep["raw_file"] = ctx.save_raw(f"raw/{test.dir_name}/{name}.{ext}", raw)
                rep["index"] = index
                record["repetitions"].append(rep)
                ctx.checkpoint(record)


def _us_text(us: float | None) -> str:
    if us is None:
        return DASH
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


class DiskProfile(Kind[ProfileSettings]):
    """``kind: disk-profile``: a disk benchmark's grid on the NAS itself, in MB/s and IOPS."""

    name = "disk-profile"
    phrase = "disk profiles with fio"
    groups = ("Disk profiles",)
    metric = "bytes_per_second"
    short_start = None
    section = Section(__name__, view.view)

    def settings(self, test: PlanTest) -> ProfileSettings:
        s = test.settings
        given = test.given("volume", "profile", "read_percent", "size", "duration_s")
        jobs = tuple(_job(j) for j in s.get("jobs") or ())
        modes = tuple(s.get("modes") or ("read", "write"))
        return ProfileSettings(
            host=str(s["host"]), path=str(s.get("path") or ""), jobs=jobs, modes=modes,
            through=through.through_of(s), **given,
        )  # fmt: skip

    def needs(self, test: PlanTest, s: ProfileSettings) -> Needs:
        return {s.through.client if s.through else s.host: ("fio",)}

    def probes(
        self, test: PlanTest, s: ProfileSettings, plan: Plan, sessions: Mapping[str, HostSession]
    ) -> list[Probe]:
        if s.through or s.path.find(":\\") == 1:  # a share's, once mounted; a Windows path
            return []
        return [probes.writable_directory(s.host, s.path, "the disk profile's path")]

    def describe(self, test: PlanTest, s: ProfileSettings) -> str:
        named = "its own jobs" if s.jobs else s.profile
        jobs = ", ".join(j.name for j in s.grid)
        where = f"{s.host}:{s.path}"
        if s.through:
            nas = s.through.target or s.host
            where = f"{s.through.client} through {s.through.method} {nas}:{s.through.share}"
        # (a Windows client is known once connected: diskspd there too)
        tool = "diskspd" if s.path.find(":\\") == 1 else "fio"
        return (
            f"{tool} {named} ({jobs}) {'/'.join(s.modes)} on {where}, "
            f"{s.size} file, {s.duration_s} s each, x {test.repetitions_text}"
        )

    def estimate(self, test: PlanTest, s: ProfileSettings, plan: Plan) -> Estimate:
        runs = len(s.grid) * len(s.modes) * test.repetitions
        return Estimate(runs * (s.duration_s + STEP_S), ("fio laying its file out in 1 s",))

    def run(self, test: PlanTest, s: ProfileSettings, ctx: RunContext) -> dict[str, Any]:
        """Every job of the grid in every mode, repetitions of each; failures recorded."""
        params = {
            "host": s.host,
            "path": None if s.through else s.path,
            "volume": s.volume,
            "profile": None if s.jobs else s.profile,
            "jobs": [j.name for j in s.grid],
            "modes": list(s.modes),
            "read_percent": s.read_percent,
            "size_bytes": s.size_bytes,
            "duration_s": s.duration_s,
            "repetitions": test.repetitions,
            "through": s.through.params() if s.through else None,
            "tool": "fio",
        }
        record = new_record(test, params, "bytes_per_second")
        try:
            check_ready(test, ctx, self.needs(test, s))
            if s.through:
                via = through.at(s.through, test, ctx, s.host)
                s = replace(s, through=via)
                record["params"]["through"] = via.params()
        except CannotStart as exc:
            record["error"] = str(exc)
            return record
        token = secrets.token_hex(4)
        session = ctx.sessions[s.through.client if s.through else s.host]
        if platforms.of(session.runner).equivalent("fio") == "diskspd":
            record["params"]["tool"] = "diskspd"
            grid = partial(_grid, test, s, ctx, record)
            profile_windows.run(s, ctx, session, token, record, grid)
            return self.summarize(record, s)
        if s.through is None:
            return self._run_in(test, s, ctx, session, s.path, token, record)
        if s.through.on_lun and set(s.modes) - {"read"} and not s.through.scratch:
            record["error"] = "refusing to write to an iSCSI LUN not marked scratch: true"
            return record
        try:
            with through.client_place(ctx, s.through, token, record, s.size_bytes) as (
                session, path, found,
            ):  # fmt: skip
                if not found.plain:
                    return self._run_on(test, s, ctx, session, path, found, record)
                return self._run_in(test, s, ctx, session, path, token, record)
        except CannotStart as exc:
            record["error"] = str(exc)
            return self.summarize(record, s)

    def _run_in(
        self, test: PlanTest, s: ProfileSettings, ctx: RunContext, session: HostSession,
        path: str, token: str, record: dict[str, Any],
    ) -> dict[str, Any]:  # fmt: skip
        """The grid in a fresh directory under ``path`` on ``session``'s host."""
        assert session.runner is not None
        try:
            workdir = make_workdir(session, path, f"{token}")
        except CannotStart as exc:
            record["error"] = str(exc)
            return record
        try:
            filename = fio.check_filename(f"{workdir}/{FIO_FILE}")
            self._fio_grid(test, s, ctx, session, filename, record, lay_out=s.through is not None)
        except ValueError as exc:
            record["error"] = f"path {path!r} resolves to {workdir!r}: {exc}"
        finally:
            remove_workdir(session, workdir, record)
        return self.summarize(record, s)

    def _run_on(
        self, test: PlanTest, s: ProfileSettings, ctx: RunContext, session: HostSession,
        filename: str, found: Mounted, record: dict[str, Any],
    ) -> dict[str, Any]:  # fmt: skip
        """The grid on the one file the bridge serves, or the LUN's block device."""
        deep = [j.name for j in s.grid if j.queue_depth * j.threads > 1]
        if found.bridged and deep:
            warn(record, f"{', '.join(deep)} ran at Q1 at the NAS: the user-space bridge "
                 "(nbdfuse) serves one request at a time, whatever fio queues")  # fmt: skip
        try:
            fio.check_filename(filename)
            # (a LUN is used as it is: laying it out would write to it)
            self._fio_grid(test, s, ctx, session, filename, record, lay_out=found.new_file)
        except ValueError as exc:
            record["error"] = str(exc)
        return self.summarize(record, s)

    def _fio_grid(
        self, test: PlanTest, s: ProfileSettings, ctx: RunContext, session: HostSession,
        filename: str, record: dict[str, Any], *, lay_out: bool,
    ) -> None:  # fmt: skip
        """Every job in every mode on ``filename``, its file written in full first (lay_out)."""
        assert session.runner is not None
        if lay_out:
            failed = through.lay_out(session.runner, session.tools["fio"], filename, s.size_bytes)
            if failed:
                record["error"] = failed
                return
        one = partial(self._one, session, session.tools["fio"], filename, s=s)
        _grid(test, s, ctx, record, one, "json")

    def _one(
        self, session: HostSession, fio_path: str, filename: str, job: Job, mode: str,
        s: ProfileSettings,
    ) -> dict[str, Any]:  # fmt: skip
        argv = fio_profiles.job_argv(
            fio_path, filename, job, mode, size_bytes=s.size_bytes, duration_s=s.duration_s,
            read_percent=s.read_percent, total_latency=s.through is not None,
        )  # fmt: skip
        assert session.runner is not None
        result = session.runner.run(
            argv, timeout_s=fio_profiles.timeout_s(s.size_bytes, s.duration_s)
        )
        raw = result.stdout + (result.stderr if not result.ok else "")
        try:
            sides = fio_profiles.parse(result.stdout)
        except fio.FioError as exc:
            error = f"{exc} (exit {result.exited}): {result.stderr.strip()[:200]}"
            return fio_profiles.repetition(job, mode, raw, None, error)
        return fio_profiles.repetition(job, mode, raw, sides)

    def summarize(self, record: dict[str, Any], s: ProfileSettings) -> dict[str, Any]:
        """The grid, the first cell's summary as the record's, the status."""
        record["grid"] = grid(record)
        found = self.series(record)
        if found:
            record["summary"] = found[0].summary
        reps = record["repetitions"]
        errors = [
            f"{r['profile_job']} {r['direction']} {r['index']}: {r['error']}"
            for r in reps
            if r["error"]
        ]
        return finish(record, [*errors, *([record["error"]] if record.get("error") else [])])

    # --- how its records read ---------------------------------------------------------------

    def series(self, record: Record) -> list[Series]:
        """One per job and mode that ran, in the profile's order: ``SEQ1M Q8T1 read``."""
        reps = record.get("repetitions") or []
        ran = {series_of(r) for r in reps}
        found = []
        for name in self.directions_asked(record):
            if name not in ran:
                continue
            values = [
                float(r["bytes_per_second"])
                for r in reps
                if series_of(r) == name and r.get("status") == "ok"
            ]
            summary = summarize(values, "bytes_per_second")
            found.append(Series(name, "bytes_per_second", values, summary, None, None))
        return found

    def directions_asked(self, record: Record) -> list[str | None]:
        """Each job and mode of the grid (``SEQ1M Q8T1 read``): what a resumed run keeps or
        measures again, a column of a table for a test that measured none."""
        jobs, modes = job_modes(record)
        return [f"{job} {mode}" for job in jobs for mode in modes] or [None]

    def named(self, record: Record, found: Sequence[Series]) -> bool:
        return True

    def ok_repetitions(self, record: Record, direction: str | None) -> list[Mapping[str, Any]]:
        return [
            r
            for r in record.get("repetitions") or []
            if r.get("status") == "ok" and (direction is None or series_of(r) == direction)
        ]

    def flow(self, record: Record, direction: str | None) -> str:
        return view.where(record)

    def phrase_of(self, record: Record) -> str:
        return f"disk profiles with {(record.get('params') or {}).get('tool') or 'fio'}"

    def measured(self, record: Record, series: Series | None) -> str:
        tool = (record.get("params") or {}).get("tool") or "fio"
        return f"{tool} {series.direction}" if series else tool

    def also(self, record: Record, series: Series) -> str:
        cell = cell_of(self.ok_repetitions(record, series.direction))
        if not cell:
            return DASH
        iops = cell["iops"]
        return (
            f"{iops:,.0f} IOPS; latency p50 {_us_text(cell['latency_p50_us'])}, "
            f"p99 {_us_text(cell['latency_p99_us'])}"
            if iops is not None
            else DASH
        )

    def storage_path(self, record: Record) -> tuple[str, str] | None:
        params = record.get("params") or {}
        host, path = params.get("host"), params.get("path")
        return (str(host), path) if isinstance(path, str) else None


KIND = DiskProfile()
