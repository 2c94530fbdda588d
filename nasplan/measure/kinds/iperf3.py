"""The iperf3 test kind: a plan test -> repetitions on real hosts -> a run.json test record."""

from __future__ import annotations

import dataclasses
import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import efficiency, stall_reason, summarize
from nasplan.errors import CannotStart, HostLostError
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest
from nasplan.measure import timeline
from nasplan.measure.iperf3_repetition import Around, run_processes, run_repetition
from nasplan.measure.kind import (
    Kind,
    Needs,
    Pair,
    RunContext,
    fail_for_lost_host,
    finish,
    new_record,
    open_pair,
    path_params,
)
from nasplan.measure.live_rate import LiveRate
from nasplan.measure.sampling import Sampling
from nasplan.measure.tools import iperf3, iperf3_multi
from nasplan.units import format_bits_per_second, parse_rate

# Each test of a plan gets its own server port unless it names one: tests never share a server.
FIRST_PORT = 5201


def version_warnings(
    server: str,
    server_version: str | None,
    client: str,
    client_version: str | None,
    parallel: int,
    processes: bool = False,
) -> list[str]:
    """Warnings about the two ends' iperf3 versions (differ; single-threaded -P before 3.16).

    ``processes``: the test already spreads its streams over one iperf3 process each.
    """
    warnings: list[str] = []
    if server_version and client_version and server_version != client_version:
        warnings.append(
            f"iperf3 versions differ: {server} has {server_version}, {client} has "
            f"{client_version}; results may not compare with runs of matching versions"
        )
    warnings.extend(
        f"iperf3 {version} on {host} is from 2016 (3.1.3 is the last build esnet published for "
        f"Windows): no --connect-timeout, and TCP retransmits only where it reads TCP_INFO "
        f"(Linux, FreeBSD); a current Windows build of iperf3 measures the same link better"
        for host, version in ((server, server_version), (client, client_version))
        if iperf3.before_connect_timeout(version)
    )
    old = [
        (host, version)
        for host, version in ((server, server_version), (client, client_version))
        if iperf3.single_threaded(version)
    ]
    if parallel > 1 and old and processes:
        hosts = " and ".join(f"{version} on {host}" for host, version in old)
        warnings.append(
            f"iperf3 {hosts} is single-threaded (before 3.16): the {parallel} streams ran as "
            f"{parallel} separate iperf3 processes on consecutive ports, their rates summed"
        )
    elif parallel > 1:
        warnings.extend(
            f"iperf3 {version} on {host} runs all {parallel} streams in one thread "
            f"(multi-threaded from 3.16): one CPU core may cap the result"
            for host, version in old
        )
    return warnings


def _window_bytes(text: str) -> int:
    factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * factor


def settings(test: PlanTest) -> iperf3.Iperf3Params:
    """Plan settings -> the measurement's parameters (the port: FIRST_PORT + the test's index)."""
    s = test.settings
    bitrate, window = s.get("bitrate"), s.get("window")
    return iperf3.Iperf3Params(
        duration_s=int(s.get("duration_s", 10)),
        omit_s=int(s.get("omit_s", 0)),
        parallel=int(s.get("parallel", 1)),
        reverse=bool(s.get("reverse", False)),
        bidir=bool(s.get("bidir", False)),
        protocol=str(s.get("protocol", "tcp")),
        udp_bitrate_bits_per_second=None if bitrate is None else parse_rate(bitrate),
        zerocopy=bool(s.get("zerocopy", False)),
        window_bytes=_window_bytes(window) if window else None,
        mss_bytes=s.get("mss"),
        port=int(s.get("port", FIRST_PORT + test.index)),
    )


def run(test: PlanTest, params: iperf3.Iperf3Params, ctx: RunContext) -> dict[str, Any]:
    """Run every repetition of one iperf3 test; failures are recorded, never raised."""
    record = new_record(
        test,
        {**path_params(test), **dataclasses.asdict(params)},
        "bits_per_second",
    )
    try:
        job = _open(test, params, ctx, record)
    except CannotStart as exc:
        record["error"] = str(exc)
        return record
    teardown = _Teardown(ctx, record, _sampling(job, ctx))
    try:
        _repetitions(job, ctx, record, teardown)
    except BaseException:
        teardown.abandon()
        raise
    teardown.hand_over()
    return _summarize(record, params)


@dataclass(frozen=True)
class _Job:
    """One iperf3 test as its repetitions see it: its hosts, settings and run token, whether
    an end is Windows, and whether its streams run as one iperf3 process each (iperf3_multi)."""

    test: PlanTest
    params: iperf3.Iperf3Params
    pair: Pair
    token: str
    windows_end: bool
    processes: bool


def _open(
    test: PlanTest, params: iperf3.Iperf3Params, ctx: RunContext, record: dict[str, Any]
) -> _Job:
    """Open the pair and decide processes or streams, into ``record``; CannotStart."""
    pair = open_pair(test, ctx, needs(test, params))
    server, client = pair.server.facts, pair.client.facts
    assert server is not None and client is not None
    record["params"]["address"] = pair.address
    # One process per stream needs POSIX sh on both ends (parallel clients, several servers);
    # a Windows end runs -P streams in one iperf3 and is warned about the shared thread.
    windows_end = "Windows" in (server.kernel_name, client.kernel_name)
    processes = not windows_end and iperf3_multi.needs_processes(
        params.parallel, server.iperf3_version, client.iperf3_version
    )
    record["params"]["parallel_mode"] = "processes" if processes else "streams"
    record["warnings"] = version_warnings(
        test.server,
        server.iperf3_version,
        test.client,
        client.iperf3_version,
        params.parallel,
        processes,
    )
    ctx.warnings += [f"{test.id}: {w}" for w in record["warnings"]]
    record["path"] = pair.path
    return _Job(test, params, pair, secrets.token_hex(4), windows_end, processes)


def _sampling(job: _Job, ctx: RunContext) -> Sampling:
    """The test's samplers, started while the first server starts: the first client waits for
    them (``_Around.before_client``), so they see every measurement whole. The server host's
    rides along in the server's own start and stop scripts when there is one iperf3 process
    a side and its scripts are sh."""
    riding = None if job.windows_end or job.processes else job.test.server
    sampled = Sampling(ctx.sessions, job.test.hosts, job.token, ctx.tasks, riding=riding)
    sampled.start()
    return sampled


class _Teardown:
    """What is left on the hosts once the last client's result is in: the last server's stop
    and the samplers'. Handed to the run once (``RunContext.defer``): it runs while the rest
    of the test is recorded and the next test starts, and completes the record (its
    ``resources``; failed when a host was lost meanwhile) once the run settles it."""

    def __init__(self, ctx: RunContext, record: dict[str, Any], sampled: Sampling) -> None:
        self.ctx = ctx
        self.record = record
        self.sampled = sampled
        self.handed_over = False
        record["resources"] = None  # known once the teardown is over (``_done``)

    def take(self, stop_server: Callable[[], None]) -> bool:
        """``Around.defer_stop`` of the last repetition: the server's stop, then the samplers'."""
        self.handed_over = True
        self.ctx.defer(functools.partial(self._stop, stop_server), self._done)
        return True

    def hand_over(self) -> None:
        """After the repetitions: the samplers' stop, unless the server's stop took it along
        (the last server was stopped at once: a failure, or several processes)."""
        if not self.handed_over:
            self.handed_over = True
            self.ctx.defer(self.sampled.close, self._done)

    def abandon(self) -> None:
        """The test was interrupted: stop the samplers now, unless handed over already."""
        if not self.handed_over:
            self.sampled.close()

    def _stop(self, stop_server: Callable[[], None]) -> None:
        try:
            stop_server()
        finally:
            self.sampled.close()

    def _done(self, error: BaseException | None) -> None:
        record = self.record
        record["resources"] = self.sampled.resources
        if isinstance(error, HostLostError):
            fail_for_lost_host(record, error, self.ctx.sessions)
            self.ctx.progress.test_done(record["id"], "failed", f"after its measurement: {error}")
        elif error is not None:
            raise error


@dataclass(frozen=True)
class _Around(Around):
    """Around each client of a test: the previous test's teardown settled and the samplers
    started before it measures; after the last, the samplers stopped and the server's stop
    handed to the test's teardown (``last``); the server host's sampler rides in the server's
    scripts; a launched server's rate each second to the progress (``live``)."""

    ctx: RunContext
    sampled: Sampling
    live: LiveRate
    last: _Teardown | None = None

    def start_text(self) -> str:
        return self.sampled.start_text()

    def started(self, stdout: str) -> None:
        self.sampled.started(stdout)

    def server_runs(self, read: Callable[[], str | None]) -> None:
        self.live.follow(read)

    def before_client(self) -> None:
        self.ctx.settle()
        self.sampled.wait_started()

    def after_result(self) -> None:
        self.live.stop()
        if self.last is not None:
            self.sampled.stop()

    def stop_text(self) -> str:
        return self.sampled.stop_text()

    def stopped(self, stdout: str) -> None:
        self.sampled.stopped(stdout)

    def defer_stop(self, stop: Callable[[], None]) -> bool:
        return self.last.take(stop) if self.last is not None else False


def _repetitions(job: _Job, ctx: RunContext, record: dict[str, Any], teardown: _Teardown) -> None:
    """Every repetition into ``record``, a checkpoint after each."""
    test = job.test
    total_s = (job.params.duration_s + job.params.omit_s + 1) * test.repetitions
    clock = timeline.Clock()
    live = LiveRate(ctx.tasks, ctx.progress, test.id, job.params)
    for index in test.indices:
        ctx.progress.test(test.id, index, test.repetitions, total_s)
        last = index == test.indices[-1]
        around = _Around(ctx, teardown.sampled, live, teardown if last else None)
        started_s = clock.now_s()
        rep = _repetition(job, ctx, index, around)
        rep.update(started_s=started_s, ended_s=clock.now_s())
        record["repetitions"].append(rep)
        ctx.checkpoint(record, last=last)


def _repetition(job: _Job, ctx: RunContext, index: int, around: Around) -> dict[str, Any]:
    """One repetition's run.json entry; its raw output saved (also that of a failure)."""
    # Several processes give several JSON documents, one after another under a marker line each.
    raw_name = f"raw/{job.test.dir_name}/rep-{index}.{'txt' if job.processes else 'json'}"
    rep: dict[str, Any] = {"index": index, "status": "failed", "error": None, "raw_file": None}
    try:
        raw, parsed = _measure(job, f"{job.token}-{index}", around)
    except iperf3.Iperf3Error as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = ctx.save_raw(raw_name, exc.raw)
        return rep
    rep.update(iperf3.repetition_fields(parsed))
    rep["interval_bits_per_second"] = [row["bits_per_second"] for row in parsed["intervals"]]
    if job.params.bidir:  # --bidir: the server -> client direction, received by the client
        rep["reverse_bits_per_second"] = parsed.get("reverse_bits_per_second")
    if job.processes:
        rep["processes"] = parsed["processes"]
    # A stall is a fault, not a slow result: the repetition fails with why.
    rep["error"] = stall_reason(parsed["intervals"])
    rep["status"] = "failed" if rep["error"] else "ok"
    rep["raw_file"] = ctx.save_raw(raw_name, raw)
    return rep


def _measure(job: _Job, token: str, around: Around) -> tuple[str, dict[str, Any]]:
    """One repetition on the test's hosts: one iperf3 process a side, or one per stream."""
    server, client = job.pair.server, job.pair.client
    assert server.runner is not None and client.runner is not None
    ends = (server.runner, client.runner, server.tools["iperf3"], client.tools["iperf3"])
    args = (*ends, job.pair.address, job.params, token)
    client_version = _iperf3_version(client)
    if job.processes:
        return run_processes(*args, client_iperf3_version=client_version, around=around)
    server_version = _iperf3_version(server)
    return run_repetition(
        *args,
        client_iperf3_version=client_version,
        server_iperf3_version=server_version,
        around=around,
    )


def _iperf3_version(session: HostSession) -> str | None:
    return session.facts.iperf3_version if session.facts else None


def _summarize(record: dict[str, Any], params: iperf3.Iperf3Params) -> dict[str, Any]:
    """The finished record: its timeline, summary, efficiency, status and error."""
    reps = record["repetitions"]
    record["timeline"] = timeline.timeline([_series(rep, params) for rep in reps])
    rates = [r["bits_per_second"] for r in reps if r["status"] == "ok"]
    record["summary"] = summarize(rates, "bits_per_second")
    theoretical = record["path"]["theoretical_bits_per_second"]
    record["efficiency"] = efficiency(record["summary"]["median"], theoretical)
    errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
    return finish(record, errors)


def _series(rep: dict[str, Any], params: iperf3.Iperf3Params) -> dict[str, Any] | None:
    """A repetition's per-second rates from iperf3's own intervals, on the test's clock."""
    if rep["status"] != "ok":
        return None
    t_s, rates = timeline.iperf3_points(
        rep.get("interval_bits_per_second") or [], rep["started_s"], params.omit_s
    )
    return timeline.series(
        repetition=rep["index"],
        direction="reverse" if params.reverse else None,
        source="iperf3",
        t_s=t_s,
        bits_per_second=rates,
        started_s=rep["started_s"],
        detect_fall=False,
    )


def describe(test: PlanTest, params: iperf3.Iperf3Params) -> str:
    """One line for ``apply --check``."""
    streams = f", {params.parallel} streams" if params.parallel > 1 else ""
    if params.bidir:
        flow = f"iperf3 {params.protocol.upper()} {test.client} <-> {test.target.label()} (--bidir)"
    elif params.reverse:
        flow = f"iperf3 {params.protocol.upper()} {test.target.label()} -> {test.client} (-R)"
    else:
        flow = f"iperf3 {params.protocol.upper()} {test.client} -> {test.target.label()}"
    bitrate = params.udp_bitrate_bits_per_second
    rate = f" at {format_bits_per_second(bitrate)}" if bitrate is not None else ""
    return f"{flow}{rate}{streams}, {test.repetitions_text} x {params.duration_s} s"


def needs(test: PlanTest, params: iperf3.Iperf3Params) -> Needs:
    """iperf3 on both ends."""
    return {test.server: ("iperf3",), test.client: ("iperf3",)}


KIND = Kind(
    name="iperf3",
    settings=settings,
    needs=needs,
    describe=describe,
    run=run,
    settles_itself=True,
    summarize=_summarize,
)
