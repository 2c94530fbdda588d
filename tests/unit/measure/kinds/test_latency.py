"""``kind: latency`` run() through the runner seam: pings, the path-MTU probe, the verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasplan.measure import kinds

PING = Path(__file__).resolve().parents[3] / "fixtures" / "ping"
TEST = "  - {id: rtt, kind: latency, server: nas, client: ws, count: 5, repetitions: 1}\n"
TOOLS = {"ping": "/usr/bin/ping"}


def test_rtts_are_recorded_and_a_full_path_mtu_takes_one_probe(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    ctx, _, ws = kind_context(TEST, TOOLS)
    ws.expect(
        "/usr/bin/ping -n -c 5 -i 0.2 -W 1 198.18.251.1", (PING / "iputils-ok.txt").read_text()
    )
    ws.expect("-M do -s 8972", reply=df_path(9000))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    rep = record["repetitions"][0]
    assert (rep["packets"], rep["lost_packets"], rep["rtt_min_ms"]) == (5, 0, 0.057)
    assert record["summary"]["median"] == rep["rtt_avg_ms"]
    assert record["mtu_probe"]["path_mtu_bytes"] == 9000
    raw = (ctx.hooks.run_dir / rep["raw_file"]).read_text()
    assert raw == (PING / "iputils-ok.txt").read_text()


def test_a_hop_that_drops_jumbo_frames_fails_the_test_with_the_mtu_found(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    ctx, _, ws = kind_context(TEST, TOOLS)
    ws.expect("ping -n -c 5", (PING / "iputils-ok.txt").read_text())
    ws.allow("-M do", reply=df_path(1500))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["mtu_probe"]["path_mtu_bytes"] == 1500
    assert "path MTU 1500 bytes, expected 9000" in record["error"]


def test_a_loopback_target_passes_its_mtu_probe_and_names_lo_in_its_path(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    """A target of 127.0.0.1: the path is a loopback's (lo, MTU 65536 in the NAS's facts)."""
    test = "  - {id: lo, kind: latency, server: nas, client: ws, target: 127.0.0.1, count: 5,"
    ctx, _, ws = kind_context(test + " repetitions: 1}\n", TOOLS)
    ws.expect("/usr/bin/ping -n -c 5 -i 0.2 -W 1 127.0.0.1", (PING / "iputils-ok.txt").read_text())
    ws.expect("-M do -s 65507", reply=df_path(65535))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    path = record["path"]
    assert (path["server_interface"], path["mtu_bytes"]) == ("lo", 65536)
    assert record["mtu_probe"]["path_mtu_bytes"] == 65535
