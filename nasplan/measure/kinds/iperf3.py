"""The iperf3 test kind: a plan test -> repetitions on real hosts -> a run.json test record."""

from __future__ import annotations

import dataclasses
import functools
import secrets
from collections.abc import Callable
from typing import Any

from nasplan.analysis import efficiency, stall_reason, summarize
from nasplan.errors import CannotStart, HostLostError
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest
from nasplan.measure import sampler, timeline
from nasplan.measure.kind import (
    Kind,
    Needs,
    RunContext,
    fail_for_lost_host,
    finish,
    new_record,
    open_pair,
    path_params,
)
from nasplan.measure.tools import iperf3, iperf3_multi
from nasplan.units import parse_rate

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
        pair = open_pair(test, ctx, needs(test, params))
    except CannotStart as exc:
        record["error"] = str(exc)
        return record
    server, client, address = pair.server, pair.client, pair.address
    assert server.facts is not None and client.facts is not None
    record["params"]["address"] = address
    # One process per stream needs POSIX sh on both ends (parallel clients, several servers);
    # a Windows end runs -P streams in one iperf3 and is warned about the shared thread.
    windows_end = any(s.facts.kernel_name == "Windows" for s in (server, client) if s.facts)
    processes = not windows_end and iperf3_multi.needs_processes(
        params.parallel, server.facts.iperf3_version, client.facts.iperf3_version
    )
    record["params"]["parallel_mode"] = "processes" if processes else "streams"
    record["warnings"] = version_warnings(
        test.server,
        server.facts.iperf3_version,
        test.client,
        client.facts.iperf3_version,
        params.parallel,
        processes,
    )
    ctx.warnings += [f"{test.id}: {w}" for w in record["warnings"]]
    record["path"] = pair.path
    total_s = (params.duration_s + params.omit_s + 1) * test.repetitions
    token = secrets.token_hex(4)
    errors: list[str] = []
    throughput: list[dict[str, Any] | None] = []
    # The samplers start while the first server does and stop while the last one does: the
    # first client waits for them, so they see every measurement whole. The server host's rides
    # along in the server's own start and stop scripts (one iperf3 process: its scripts are sh).
    # Once the last client's result is in, the server's stop and the samplers' are this test's
    # teardown: it runs while the rest of the test is recorded and the next test starts
    # (ctx.defer); the previous test's is settled before this test's first client runs.
    riding = () if processes or windows_end else (test.server,)
    sampled = sampler.Sampling(ctx.sessions, test.hosts, token, riding=riding)
    sampled.start()
    record["resources"] = None  # known once the teardown is over (``done``)

    def done(error: BaseException | None) -> None:
        record["resources"] = sampled.resources
        if isinstance(error, HostLostError):
            fail_for_lost_host(record, error, ctx.sessions)
            ctx.progress.test_done(test.id, "failed", f"after its measurement: {error}")
        elif error is not None:
            raise error

    handed_over = False

    def tear_down(stop: Callable[[], None]) -> None:
        """The last server's stop, handed over by run_repetition, and the samplers'."""
        nonlocal handed_over

        def work() -> None:
            try:
                stop()
            finally:
                sampled.close()

        handed_over = True
        ctx.defer(work, done)

    try:
        rider = sampled.riding_on(test.server)
        clock = timeline.Clock()
        for index in range(1, test.repetitions + 1):
            ctx.progress.test(test.id, index, test.repetitions, total_s)
            started_s = clock.now_s()
            last = index == test.repetitions
            hooks = (
                _settled_then(ctx, sampled.wait_started) if index == 1 else sampled.wait_started,
                sampled.stop if last else iperf3.nothing,
            )
            rep = _repetition(
                test, params, address, server, client, ctx, index, token, processes, hooks, rider,
                tear_down if last else None,
            )  # fmt: skip
            rep.update(started_s=started_s, ended_s=clock.now_s())
            if rep["error"]:
                errors.append(f"repetition {index}: {rep['error']}")
            record["repetitions"].append(rep)
            throughput.append(_series(rep, params))
            ctx.checkpoint(record, last=last)
    except BaseException:
        if not handed_over:  # else the teardown stops them
            sampled.close()
        raise
    if not handed_over:  # the last server was stopped at once (a failure, several processes)
        ctx.defer(sampled.close, done)
    record["timeline"] = timeline.timeline(throughput)
    rates = [r["bits_per_second"] for r in record["repetitions"] if r["status"] == "ok"]
    record["summary"] = summarize(rates, "bits_per_second")
    theoretical = record["path"]["theoretical_bits_per_second"]
    record["efficiency"] = efficiency(record["summary"]["median"], theoretical)
    return finish(record, errors)


def _settled_then(ctx: RunContext, wait: Callable[[], None]) -> Callable[[], None]:
    """``wait``, after the previous test's teardown is over (just before the first client)."""

    def settled_then_wait() -> None:
        ctx.settle()
        wait()

    return settled_then_wait


def _repetition(
    test: PlanTest,
    params: iperf3.Iperf3Params,
    address: str,
    server: HostSession,
    client: HostSession,
    ctx: RunContext,
    index: int,
    token: str,
    processes: bool = False,
    hooks: iperf3.ClientHooks = (iperf3.nothing, iperf3.nothing),
    rider: iperf3.Rider = iperf3.NO_RIDER,
    defer: iperf3.Defer | None = None,
) -> dict[str, Any]:
    assert server.runner is not None and client.runner is not None
    # Several processes give several JSON documents, one after another under a marker line each.
    raw_name = f"raw/{test.id}/rep-{index}.{'txt' if processes else 'json'}"
    rep: dict[str, Any] = {"index": index, "status": "failed", "error": None, "raw_file": None}
    run_one = (
        iperf3_multi.run_repetition
        if processes
        else functools.partial(
            iperf3.run_repetition,
            rider=rider,
            defer=defer,
            server_iperf3_version=server.facts.iperf3_version if server.facts else None,
        )
    )
    try:
        raw, parsed = run_one(
            server.runner,
            client.runner,
            server.tools["iperf3"],
            client.tools["iperf3"],
            address,
            params,
            f"{token}-{index}",
            client_iperf3_version=client.facts.iperf3_version if client.facts else None,
            hooks=hooks,
        )
    except iperf3.Iperf3Error as exc:
        rep["error"] = str(exc)
        if exc.raw:
            rep["raw_file"] = ctx.save_raw(raw_name, exc.raw)
        return rep
    rep.update(iperf3.repetition_fields(parsed))
    rep["interval_bits_per_second"] = [row["bits_per_second"] for row in parsed["intervals"]]
    if params.bidir:  # --bidir: the server -> client direction, received by the client
        rep["reverse_bits_per_second"] = parsed.get("reverse_bits_per_second")
    if processes:
        rep["processes"] = parsed["processes"]
    # A stall is a fault, not a slow result: the repetition fails with why.
    rep["error"] = stall_reason(parsed["intervals"])
    rep["status"] = "failed" if rep["error"] else "ok"
    rep["raw_file"] = ctx.save_raw(raw_name, raw)
    return rep


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
    reverse = ", reverse" if params.reverse else ""
    return (
        f"iperf3 {test.client} -> {test.target.label()}{streams}{reverse}, "
        f"{test.repetitions} x {params.duration_s} s"
    )


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
)
