"""The iperf3 test kind: a plan test -> repetitions on real hosts -> a run.json test record."""

from __future__ import annotations

import dataclasses
import functools
import secrets
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.analysis import (
    CPU_BOUND_PERCENT,
    MIN_TRUSTED_S,
    efficiency,
    stall_reason,
    summarize,
    theoretical_udp_bits_per_second,
)
from nasplan.errors import CannotStart
from nasplan.hosts.session import HostSession
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import timeline
from nasplan.measure.capacity import NETWORK, Capacity
from nasplan.measure.estimate import Estimate
from nasplan.measure.iperf3_repetition import Around, run_processes, run_repetition
from nasplan.measure.kind import DASH, Kind, Needs, Record, RunContext
from nasplan.measure.live_rate import LiveRate
from nasplan.measure.pair import Pair, open_pair
from nasplan.measure.record import finish, new_record, path_params
from nasplan.measure.sampling import Sampling
from nasplan.measure.series import Series, by_direction, single
from nasplan.measure.tools import iperf3, iperf3_multi
from nasplan.units import format_bits_per_second, parse_rate

# Each test of a plan gets its own server port unless it names one: tests never share a server.
FIRST_PORT = 5201
# a repetition's own start and end besides its data: the one-off server started and stopped
STEP_S = 0.4
# Workload parameters compared across as a dimension of their own, labelled or not: 1 vs 4 streams
# on one path says whether one stream is limited (its window, one CPU core) or the link.
STREAM_PARAMS = frozenset({"parallel", "parallel_mode"})


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
    pair = open_pair(test, ctx, KIND.needs(test, params))
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
    of the test is recorded and the next test starts; what it returns, the samplers'
    ``resources``, completes the test's record (a host lost meanwhile fails it)."""

    def __init__(self, ctx: RunContext, sampled: Sampling) -> None:
        self.ctx = ctx
        self.sampled = sampled
        self.handed_over = False

    def take(self, stop_server: Callable[[], None]) -> bool:
        """``Around.defer_stop`` of the last repetition: the server's stop, then the samplers'."""
        self.handed_over = True
        self.ctx.defer(functools.partial(self._stop, stop_server))
        return True

    def hand_over(self) -> None:
        """After the repetitions: the samplers' stop, unless the server's stop took it along
        (the last server was stopped at once: a failure, or several processes)."""
        if not self.handed_over:
            self.handed_over = True
            self.ctx.defer(self._close)

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


def _udp(record: Record) -> bool:
    return str((record.get("params") or {}).get("protocol") or "tcp").lower() == "udp"


def _udp_maximum(path: Mapping[str, Any]) -> float | None:
    speed, mtu = path.get("speed_bits_per_second"), path.get("mtu_bytes")
    if not speed or not mtu:
        return None
    try:
        return theoretical_udp_bits_per_second(speed, mtu, path.get("framing") or "ethernet")
    except ValueError:
        return None


def _median_of(reps: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [r[key] for r in reps if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def _udp_also(reps: Sequence[Mapping[str, Any]]) -> str:
    packets = sum(r.get("packets") or 0 for r in reps)
    lost = sum(r.get("lost_packets") or 0 for r in reps)
    sent, jitter = _median_of(reps, "sent_bits_per_second"), _median_of(reps, "jitter_ms")
    parts = [f"sent {format_bits_per_second(sent)}" if sent is not None else None]
    parts.append(f"loss {lost / packets * 100:.2f} % ({lost} of {packets})" if packets else None)
    parts.append(f"jitter {jitter:.3f} ms" if jitter is not None else None)
    return "; ".join(p for p in parts if p)


class Iperf3(Kind[iperf3.Iperf3Params]):
    """``kind: iperf3``: what the network carries between two hosts, TCP or UDP, in bit/s."""

    name = "iperf3"
    phrase = "TCP throughput with iperf3"
    groups = ("iperf3 TCP", "iperf3 UDP")
    path_rate = True
    short_start = "TCP slow start"
    # iperf3 times its data phase alone: a ratio of short runs still compares rates
    short_skews_ratio = False
    across_params = STREAM_PARAMS
    section = "iperf3"
    settles_itself = True

    def settings(self, test: PlanTest) -> iperf3.Iperf3Params:
        """The measurement's parameters (the port: FIRST_PORT + the test's index)."""
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

    def needs(self, test: PlanTest, s: iperf3.Iperf3Params) -> Needs:
        """iperf3 on both ends."""
        return {test.server: ("iperf3",), test.client: ("iperf3",)}

    def describe(self, test: PlanTest, s: iperf3.Iperf3Params) -> str:
        streams = f", {s.parallel} streams" if s.parallel > 1 else ""
        protocol, target = s.protocol.upper(), test.target.label()
        if s.bidir:
            flow = f"iperf3 {protocol} {test.client} <-> {target} (--bidir)"
        elif s.reverse:
            flow = f"iperf3 {protocol} {target} -> {test.client} (-R)"
        else:
            flow = f"iperf3 {protocol} {test.client} -> {target}"
        bitrate = s.udp_bitrate_bits_per_second
        rate = f" at {format_bits_per_second(bitrate)}" if bitrate is not None else ""
        return f"{flow}{rate}{streams}, {test.repetitions_text} x {s.duration_s} s"

    def estimate(self, test: PlanTest, s: iperf3.Iperf3Params, plan: Plan) -> Estimate:
        return Estimate((s.duration_s + s.omit_s + STEP_S) * test.repetitions)

    def run(self, test: PlanTest, params: iperf3.Iperf3Params, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one iperf3 test; failures are recorded, never raised."""
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
        record["resources"] = None  # what its teardown returns (``_Teardown``)
        teardown = _Teardown(ctx, _sampling(job, ctx))
        try:
            _repetitions(job, ctx, record, teardown)
        except BaseException:
            teardown.abandon()
            raise
        teardown.hand_over()
        return self.summarize(record, params)

    def summarize(self, record: dict[str, Any], params: iperf3.Iperf3Params) -> dict[str, Any]:
        """Its timeline, summary, efficiency, status and error."""
        reps = record["repetitions"]
        record["timeline"] = timeline.timeline([_series(rep, params) for rep in reps])
        rates = [r["bits_per_second"] for r in reps if r["status"] == "ok"]
        record["summary"] = summarize(rates, "bits_per_second")
        theoretical = record["path"]["theoretical_bits_per_second"]
        record["efficiency"] = efficiency(record["summary"]["median"], theoretical)
        errors = [f"repetition {r['index']}: {r['error']}" for r in reps if r["error"]]
        return finish(record, errors)

    # --- how its records read ---------------------------------------------------------------

    def series(self, record: Record) -> list[Series]:
        """Forward (the client sent) or reverse (``-R``); a ``--bidir`` test both; UDP against
        the path's UDP maximum."""
        params, path = record.get("params") or {}, record.get("path") or {}
        first = "reverse" if params.get("reverse") and not params.get("bidir") else "forward"
        found = single(record, first)
        theoretical = found.theoretical_bits_per_second
        if _udp(record):
            theoretical = _udp_maximum(path)
            found = dataclasses.replace(
                found,
                efficiency=efficiency(found.summary.get("median"), theoretical),
                theoretical_bits_per_second=theoretical,
                limit_name="UDP maximum",
            )
        bidir = bool(params.get("bidir"))
        back = by_direction(record, None, "reverse_bits_per_second") if bidir else []
        if not back:
            return [found]
        summary = summarize(back, "reverse_bits_per_second")
        reverse = Series(
            "reverse",
            "reverse_bits_per_second",
            back,
            summary,
            efficiency(summary["median"], theoretical),
            theoretical,
            found.limit_name,
        )
        return [found, reverse]

    def group(self, record: Record) -> str:
        return self.groups[1] if _udp(record) else self.groups[0]

    def phrase_of(self, record: Record) -> str:
        return "UDP throughput with iperf3" if _udp(record) else self.phrase

    def measured(self, record: Record, series: Series | None) -> str:
        params, udp = record.get("params") or {}, _udp(record)
        streams = params.get("parallel") or 1
        text = f"iperf3 {'UDP' if udp else 'TCP'}, {streams} stream{'s' * (streams != 1)}"
        if udp and params.get("udp_bitrate_bits_per_second"):
            text += f" at {format_bits_per_second(params['udp_bitrate_bits_per_second'])}"
        if params.get("bidir") and series is not None:
            text += f", --bidir {series.direction}"
        return text

    def also(self, record: Record, series: Series) -> str:
        reps = self.ok_repetitions(record, series.direction)
        if _udp(record):
            return _udp_also(reps) or DASH
        if series.metric != "bits_per_second":
            return DASH
        retransmits = [r["retransmits"] for r in reps if r.get("retransmits") is not None]
        cpu = [_median_of(reps, f"cpu_{side}_percent") for side in ("client", "server")]
        parts = [f"retransmits {sum(retransmits)}" if retransmits else None]
        if any(c is not None for c in cpu):
            shown = [DASH if c is None else f"{c:.1f} %" for c in cpu]
            parts.append(f"CPU client / server {shown[0]} / {shown[1]}")
        return "; ".join(p for p in parts if p) or DASH

    def tells_also(self, record: Record) -> bool:
        return _udp(record)

    def short_durations(self, record: Record, direction: str | None = None) -> list[float]:
        """None when the test omits its first seconds (``-O``): slow start is then left out."""
        if ((record.get("params") or {}).get("omit_s") or 0) >= 1:
            return []
        return super().short_durations(record, direction)

    def short_advice(self, record: Record, direction: str | None) -> str:
        return f"set `duration_s` to {MIN_TRUSTED_S:g} or more"

    def capacities(self, record: Record) -> list[Capacity]:
        """What its TCP median says the network from client to server carries."""
        params = record.get("params") or {}
        median = (record.get("summary") or {}).get("median")
        if params.get("bidir") or not isinstance(median, (int, float)):
            return []
        direction = "read" if params.get("reverse") else "write"
        server, client = str(params.get("server")), str(params.get("client"))
        address = params.get("address")
        return [Capacity(NETWORK, server, direction, float(median), client, address)]

    def core_advice(self, record: Record, host: str, load: Mapping[str, Any]) -> str:
        """iperf3's own process figure, its version's threading and its streams say why."""
        params = record.get("params") or {}
        process = load.get("iperf3_process_percent")
        if process is not None and process < CPU_BOUND_PERCENT:
            return (
                f"not iperf3 (its process at {process:.0f} % of one core): another program or "
                f"the NIC's interrupts on {host} held that core"
            )
        version = load.get("iperf3_version")
        parallel = int(params.get("parallel") or 1)
        processes = params.get("parallel_mode") == "processes"
        if parallel > 1 and iperf3.single_threaded(version) and not processes:
            return (
                f"single-threaded iperf3 {version}: its {parallel} streams share one thread; "
                f"use 3.16+ or `parallel` as processes (one iperf3 a stream)"
            )
        if parallel == 1:
            named = f"iperf3 {version}" if version else "iperf3"
            return (
                f"one stream of {named} is one thread: `parallel: 2` or more spreads the "
                f"streams over cores (one process each before 3.16)"
            )
        return f"{parallel} streams and still one core at its limit: interrupts, or the NIC's queue"

    def streams_comparable(self, record: Record) -> bool:
        """An ok TCP test with a median, one way at a time."""
        params = record.get("params") or {}
        median = (record.get("summary") or {}).get("median")
        return (
            record.get("status") == "ok"
            and params.get("protocol", "tcp") == "tcp"
            and not params.get("bidir")
            and isinstance(median, (int, float))
            and median > 0
        )


KIND = Iperf3()
