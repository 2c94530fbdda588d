"""The repetitions of one iperf3 test on its pair of hosts: the pair opened, its samplers, each
repetition (``nasplan.measure.kinds.iperf3.repetition``) into the test's record with a checkpoint
after each, the running rate to the console, and the last server's stop handed to the run as
the test's teardown, whose result (the samplers' ``resources``) completes the record.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nasplan import platforms
from nasplan.analysis import stall_reason
from nasplan.errors import CannotStart, NasplanError
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest
from nasplan.measure import timeline
from nasplan.measure.kind import Needs, RunContext
from nasplan.measure.kinds.iperf3 import ahead as iperf3_ahead
from nasplan.measure.kinds.iperf3 import multi as iperf3_multi
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.kinds.iperf3.live_rate import LiveRate
from nasplan.measure.kinds.iperf3.repetition import Around, Started, run_repetition, start_ahead
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.pair import Pair, open_pair
from nasplan.measure.sampler import Ride
from nasplan.measure.sampling import Sampling
from nasplan.measure.under_load import UnderLoad


def run(
    test: PlanTest,
    params: Iperf3Params,
    ctx: RunContext,
    record: dict[str, Any],
    needs: Needs,
) -> None:
    """Every repetition of ``test`` into ``record``; CannotStart when its pair cannot start."""
    opening = iperf3_ahead.taken(ctx, test)  # its first server, started as the last test ended
    try:
        job = _open(test, params, ctx, record, needs, opening.token if opening else None)
    except BaseException:
        if opening is not None:
            opening.abandon()
        raise
    record["resources"] = None  # what its teardown returns (``_Teardown``)
    sampled = opening.sampled if opening is not None else _sampling(job, ctx)
    teardown = _Teardown(ctx, sampled, job.test.server)
    try:
        _repetitions(job, ctx, record, teardown, opening.started if opening else None)
    except BaseException:
        teardown.abandon()
        raise
    teardown.hand_over()


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


@dataclass(frozen=True)
class _Job:
    """One iperf3 test as its repetitions see it: its hosts, settings and run token, whether
    an end runs no POSIX sh (Windows), and whether its streams run as one iperf3 process each
    (iperf3_multi)."""

    test: PlanTest
    params: Iperf3Params
    pair: Pair
    token: str
    non_posix_end: bool
    processes: bool


def _open(
    test: PlanTest,
    params: Iperf3Params,
    ctx: RunContext,
    record: dict[str, Any],
    needs: Needs,
    token: str | None = None,
) -> _Job:
    """Open the pair and decide processes or streams, into ``record``; CannotStart.
    ``token``: the run token its opening made ahead took (else a new one)."""
    pair = open_pair(test, ctx, needs)
    server, client = pair.server.facts, pair.client.facts
    assert server is not None and client is not None
    record["params"]["address"] = pair.address
    # One process per stream needs POSIX sh on both ends (parallel clients, several servers);
    # a Windows end runs -P streams in one iperf3 and is warned about the shared thread.
    non_posix_end = not all(platforms.of(e.runner).posix_shell for e in (pair.server, pair.client))
    processes = not non_posix_end and iperf3_multi.needs_processes(
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
    record["path"] = pair.path
    return _Job(test, params, pair, token or secrets.token_hex(4), non_posix_end, processes)


def _ahead(ctx: RunContext) -> Callable[[PlanTest], iperf3_ahead.Opening | None]:
    """How the next iperf3 test's start is made ahead (``iperf3_ahead.offer_next``): its pair
    opened, its samplers, its first server launched with the server host's sampler riding in
    it; None where that does not apply (several processes, a Windows end, a daemon server) or
    fails (the test then starts as ever and says why)."""

    def make(upcoming: PlanTest) -> iperf3_ahead.Opening | None:
        from nasplan.measure import kinds  # (the kinds import this module)

        params = kinds.kind(upcoming.kind).settings(upcoming)
        if not isinstance(params, Iperf3Params):
            return None
        try:
            job = _open(upcoming, params, ctx, {"params": {}}, kinds.bind(upcoming).needs)
        except CannotStart:
            return None
        if job.non_posix_end or job.processes:
            return None
        sampled = _sampling(job, ctx)
        index, server = upcoming.indices[0], job.pair.server
        assert server.runner is not None
        try:
            started = start_ahead(
                server.runner,
                server.tools["iperf3"],
                params,
                f"{job.token}-{index}",
                server_iperf3_version=_iperf3_version(server),
                around=_Samplers(sampled),
            )
        except (iperf3.Iperf3Error, NasplanError):
            started = None
        if started is None:
            sampled.close()
            return None
        return iperf3_ahead.Opening(upcoming.id, job.token, index, sampled, started)

    return make


@dataclass(frozen=True)
class _Samplers(Around):
    """Around a server started ahead: the server host's sampler rides in its start."""

    sampled: Sampling

    def start_text(self) -> str:
        return self.sampled.start_text()

    def started(self, stdout: str) -> None:
        self.sampled.started(stdout)


def _sampling(job: _Job, ctx: RunContext) -> Sampling:
    """The test's samplers, started while the first server starts: the first client waits for
    them (``_Around.before_client``), so they see every measurement whole. When there is one
    iperf3 process a side and its scripts are sh, the server host's rides along in the
    server's own start and stop scripts, and the client host's in the client's script: no
    round trip of their own."""
    alone = job.non_posix_end or job.processes
    server, client = (None, None) if alone else (job.test.server, job.test.client)
    sampled = Sampling(
        ctx.sessions, job.test.hosts, job.token, ctx.tasks, riding=server, client=client
    )
    sampled.start()
    return sampled


class _Teardown:
    """What is left on the hosts once the last client's result is in: the last server's stop
    and the samplers'. Handed to the run once (``RunContext.defer``): it runs while the rest
    of the test is recorded and the next test starts; what it returns, the samplers'
    ``resources``, completes the test's record (a host lost meanwhile fails it)."""

    def __init__(self, ctx: RunContext, sampled: Sampling, server: str) -> None:
        self.ctx = ctx
        self.sampled = sampled
        self.server = server  # the host the last server's stop runs on
        self.handed_over = False

    def take(self, stop_server: Callable[[], None]) -> bool:
        """``Around.defer_stop`` of the last repetition: the server's stop, then the samplers'."""
        self.handed_over = True
        hosts = {self.server, *self.sampled.working()}
        self.ctx.defer(functools.partial(self._stop, stop_server), hosts)
        return True

    def hand_over(self) -> None:
        """After the repetitions: the samplers' stop, unless the server's stop took it along
        (the last server was stopped at once: a failure, or several processes)."""
        if not self.handed_over:
            self.handed_over = True
            self.ctx.defer(self._close, self.sampled.working())

    def abandon(self) -> None:
        """The test was interrupted: stop the samplers now, unless handed over already."""
        if not self.handed_over:
            self.sampled.close()

    def _stop(self, stop_server: Callable[[], None]) -> dict[str, Any]:
        try:
            stop_server()
        finally:
            self.sampled.close()
        return {"resources": self.sampled.resources}

    def _close(self) -> dict[str, Any]:
        self.sampled.close()
        return {"resources": self.sampled.resources}


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
    under_load: UnderLoad | None = None  # latency_under_load: the client's pings
    measuring: tuple[str, ...] = ()  # the test's hosts: a teardown elsewhere is not waited for
    offer: Callable[[], None] | None = None  # the last client's: the next test's start ahead

    def start_text(self) -> str:
        return self.sampled.start_text()

    def started(self, stdout: str) -> None:
        self.sampled.started(stdout)

    def server_runs(self, read: Callable[[], str | None]) -> None:
        self.live.follow(read)

    def before_client(self) -> None:
        self.ctx.settle(self.measuring or None)
        self.sampled.wait_started()
        if self.offer is not None:
            self.offer()

    def client_ride(self) -> Ride:
        ride = self.sampled.client_ride(last=self.last is not None)
        return self.under_load.ride(ride) if self.under_load is not None else ride

    def client_ended(self, stdout: str) -> None:
        self.sampled.client_rode(stdout)
        if self.under_load is not None:
            self.under_load.read(stdout)

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


def _repetitions(
    job: _Job,
    ctx: RunContext,
    record: dict[str, Any],
    teardown: _Teardown,
    started: Started | None = None,
) -> None:
    """Every repetition into ``record``, a checkpoint after each; ``started``: the first one's
    server, started ahead."""
    test = job.test
    measure_s = job.params.duration_s + job.params.omit_s
    total_s = (measure_s + 1) * test.repetitions
    clock = timeline.Clock()
    live = LiveRate(ctx.tasks, ctx.progress, test.id, job.params)
    ahead = functools.partial(iperf3_ahead.offer_next, ctx, test, measure_s, _ahead(ctx))
    for index in test.indices:
        ctx.progress.test(test.id, index, test.repetitions, total_s)
        last = index == test.indices[-1]
        pings = _under_load(job, index)
        around = _Around(
            ctx,
            teardown.sampled,
            live,
            teardown if last else None,
            pings,
            tuple(test.hosts),
            ahead if last else None,
        )
        started_s = clock.now_s()
        rep = _repetition(job, ctx, index, around, started if index == test.indices[0] else None)
        rep.update(started_s=started_s, ended_s=clock.now_s())
        if pings is not None and rep["status"] == "ok":
            rep.update(pings.found)
        record["repetitions"].append(rep)
        ctx.checkpoint(record, last=last)


def _under_load(job: _Job, index: int) -> UnderLoad | None:
    """The pings of a ``latency_under_load`` repetition; None when not asked, or where nothing
    rides in the client's script (a Windows end, one iperf3 process a stream)."""
    if not job.params.latency_under_load or job.non_posix_end or job.processes:
        return None
    ping = job.pair.client.tools.get("ping")
    if not ping:
        return None
    deadline_s = job.params.duration_s + job.params.omit_s + 10
    return UnderLoad(ping, job.pair.address, f"{job.token}-{index}", deadline_s)


def _repetition(
    job: _Job, ctx: RunContext, index: int, around: Around, started: Started | None = None
) -> dict[str, Any]:
    """One repetition's run.json entry; its raw output saved (also that of a failure)."""
    # Several processes give several JSON documents, one after another under a marker line each.
    raw_name = f"raw/{job.test.dir_name}/rep-{index}.{'txt' if job.processes else 'json'}"
    rep: dict[str, Any] = {"index": index, "status": "failed", "error": None, "raw_file": None}
    try:
        raw, parsed = _measure(job, f"{job.token}-{index}", around, started)
    except iperf3.Iperf3Error as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = ctx.save_raw(raw_name, exc.raw)
        return rep
    rep.update(iperf3.repetition_fields(parsed))
    rep["commands"] = parsed["commands"]
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


def _measure(
    job: _Job, token: str, around: Around, started: Started | None = None
) -> tuple[str, dict[str, Any]]:
    """One repetition on the test's hosts: one iperf3 process a side, or one per stream."""
    server, client = job.pair.server, job.pair.client
    assert server.runner is not None and client.runner is not None
    ends = (server.runner, client.runner, server.tools["iperf3"], client.tools["iperf3"])
    args = (*ends, job.pair.address, job.params, token)
    return run_repetition(
        *args,
        client_iperf3_version=_iperf3_version(client),
        server_iperf3_version=_iperf3_version(server),
        processes=job.processes,
        around=around,
        started=started,
    )


def _iperf3_version(session: HostSession) -> str | None:
    return session.facts.iperf3_version if session.facts else None
