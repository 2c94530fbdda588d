"""``kind: iperf3`` with -C, -l, -B, -4/-6, -n and DSCP: the plan's keys, their refusals at
validation, the argv a host gets, the record and what the report says of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.measure import kinds
from nasplan.measure.estimate import Estimate

from .conftest import riding_client, riding_start, riding_stop, run_cell

IPERF3 = Path(__file__).resolve().parents[3] / "fixtures" / "iperf3" / "3.12"
TOOLS = {"iperf3": "/usr/bin/iperf3"}


def _test(extra: str) -> str:
    return f"  - {{id: p2p, kind: iperf3, server: nas, client: ws, repetitions: 1, {extra}}}\n"


def test_the_options_reach_the_client_and_what_iperf3_used_reaches_the_report(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        _test("duration_s: 1, congestion: reno, length: 16K, dscp: EF, ip_version: 4"), TOOLS
    )
    nas.expect("port=5201", riding_start())
    nas.expect("kill", riding_stop((IPERF3 / "tcp-single-server-log.json").read_text()))
    ws.expect(
        "/usr/bin/iperf3 -J -c 198.18.251.1 -p 5201 -t 1 --connect-timeout 3000"
        " -C reno -l 16384 -4 -S 184",
        reply=riding_client((IPERF3 / "tcp-congestion-reno.json").read_text()),
    )
    cell = run_cell(ctx, ctx.plan.tests[0])
    ctx.settle()
    record = cell.record()

    assert record["status"] == "ok"
    params = record["params"]
    assert (params["congestion"], params["length_bytes"], params["dscp"]) == ("reno", 16384, 46)
    assert params["ip_version"] == 4
    (rep,) = record["repetitions"]
    assert (rep["congestion"], rep["local_address"]) == ("reno", "127.0.0.1")
    readout = kinds.readout(record)
    detail = readout.detail_text(record)
    assert "congestion control reno (-C)" in detail
    assert "16 KiB writes (-l 16384)" in detail
    assert "IPv4 only (-4)" in detail
    assert "DSCP 46 (EF) (-S 184)" in detail
    assert "iperf3 used congestion control reno" in detail
    assert readout.measured(record, None) == "iperf3 TCP, 1 stream, 16 KiB writes, reno"


def test_a_bytes_test_sends_its_bytes_and_is_given_time_to(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(_test("bytes: 1GiB"), TOOLS)
    test = ctx.plan.tests[0]
    iperf3_kind = kinds.kind("iperf3")
    settings = iperf3_kind.settings(test)  # type: ignore[attr-defined]
    assert settings.bytes_total == 2**30
    # 1 GiB at the slowest rate waited for (10 Mbit/s): some 14 minutes before it is given up
    assert settings.duration_s == 859
    bound = kinds.bind(test)
    assert bound.description == "iperf3 TCP ws -> nas, 1 x 1 GiB"
    estimate = bound.estimate(ctx.plan)
    assert isinstance(estimate, Estimate)
    # the inventory gives no speed: 1 GiB at the assumed 1 Gbit/s
    assert estimate.seconds == pytest.approx(2**30 * 8 / 1e9, rel=0.05)


def test_a_udp_packet_rate_test_names_its_packets_a_second(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        _test("duration_s: 1, protocol: udp, bitrate: 20M, length: 64"), TOOLS
    )
    nas.expect("port=5201", riding_start())
    nas.expect("kill", riding_stop((IPERF3 / "tcp-single-server-log.json").read_text()))
    ws.expect(
        "-u -b 20000000 -l 64", reply=riding_client((IPERF3 / "udp-length-64.json").read_text())
    )
    cell = run_cell(ctx, ctx.plan.tests[0])
    ctx.settle()
    record = cell.record()
    readout = kinds.readout(record)
    (series,) = readout.series(record)
    also = readout.also(record, series)
    # 38,991 datagrams of 64 bytes in iperf3's 1.0026 s
    assert "; 38,890 packets/s; loss 0.01 % (5 of 38991)" in also
    assert "64 bytes a datagram" in readout.detail_text(record)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "bytes: 1GiB, duration_s: 5",
            "tests[0].duration_s: bytes (-n) sends a size instead of a time (-t): "
            "give one of bytes and duration_s",
        ),
        (
            "bytes: 1G",
            "tests[0].bytes: a size with its unit: 1GiB (2^30 bytes, what iperf3 reads as "
            "-n 1G) or 1GB (10^9 bytes)",
        ),
        ("protocol: udp, congestion: reno", "tests[0].congestion: congestion (-C) is TCP's"),
        ("ip_version: 6, target: 198.18.251.1", "tests[0].target: an IPv4 address with ip_"),
        ("ip_version: 4, bind: 'fd00::2'", "tests[0].bind: an IPv6 address with ip_version: 4"),
        ("dscp: XX", "tests[0].dscp"),
    ],
)
def test_options_that_cannot_go_together_are_refused_at_validation(
    kind_context: Callable[..., Any], extra: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        kind_context(_test(extra), TOOLS)
    (said,) = caught.value.messages
    assert "plan.yaml:4:" in said
    assert message in said, said


PING = Path(__file__).resolve().parents[3] / "fixtures" / "ping"


def test_latency_under_load_rides_in_the_client_script_and_is_recorded(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        _test("duration_s: 1, latency_under_load: true"), {**TOOLS, "ping": "/bin/ping"}
    )
    nas.expect("port=5201", riding_start())
    nas.expect("kill", riding_stop((IPERF3 / "tcp-single-server-log.json").read_text()))
    idle = (PING / "busybox-ok.txt").read_text()  # 5 replies, 0.056 to 0.089 ms
    loaded = (PING / "iputils-ok.txt").read_text()  # 5 replies, 0.057 to 0.919 ms
    client = riding_client((IPERF3 / "tcp-single.json").read_text())

    def reply(text: str) -> Any:
        said = client(text)
        pings = f"\n@@nasplan:ping-idle@@\n{idle}\n@@nasplan:ping-loaded@@\n{loaded}"
        return dataclasses.replace(said, stdout=said.stdout + pings)

    ws.expect("/bin/ping -n -i 0.2 -c 5 -W 1 198.18.251.1", reply=reply)
    cell = run_cell(ctx, ctx.plan.tests[0])
    ctx.settle()
    record = cell.record()

    assert record["status"] == "ok", record["error"]
    (rep,) = record["repetitions"]
    assert rep["loaded_pings"] == 5
    assert rep["idle_rtt_median_ms"] == 0.076 and rep["loaded_rtt_p95_ms"] == 0.919
    under = record["latency_under_load"]
    assert under["increase_ms"] == pytest.approx(rep["loaded_rtt_median_ms"] - 0.076)
    # the client's pings end by themselves after the run's time and a margin
    assert "-w 11 198.18.251.1" in ws.texts("/bin/ping")[0]
    assert "round-trip time idle 0.08 ms (p95 0.09 ms), under load" in (
        kinds.readout(record).detail_text(record)
    )


def test_check_says_a_test_pings_under_load(kind_context: Callable[..., Any]) -> None:
    ctx, _, _ = kind_context(_test("duration_s: 2, latency_under_load: true"), TOOLS)
    bound = kinds.bind(ctx.plan.tests[0])
    assert bound.description == "iperf3 TCP ws -> nas, pinged idle and under load, 1 x 2 s"
    assert bound.needs["ws"] == ("iperf3", "ping") and bound.needs["nas"] == ("iperf3",)
