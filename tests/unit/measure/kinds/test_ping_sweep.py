"""``kind: ping-sweep`` run() through the runner seam, on real iputils output (tests/fixtures)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasplan.measure import kinds
from nasplan.remote.runner import Result

PING = Path(__file__).resolve().parents[3] / "fixtures" / "ping"
TEST = (
    "  - {id: mtu, kind: ping-sweep, server: nas, client: ws, sizes_bytes: [9000, 1500],\n"
    "     repetitions: 1}\n"
)
TOOLS = {"ping": "/usr/bin/ping"}


def test_sizes_are_tried_smallest_first_and_the_largest_answered_is_the_path_mtu(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    ctx, _, ws = kind_context(TEST, TOOLS)
    ws.expect("-M do -s 1472 198.18.251.1", reply=df_path(1500))
    ws.expect("-M do -s 8972 198.18.251.1", reply=df_path(1500))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    rep = record["repetitions"][0]
    assert rep["path_mtu_bytes"] == 1500
    assert [(e["size_bytes"], e["received"]) for e in rep["sweep"]] == [(1500, 2), (9000, 0)]
    assert record["summary"]["median"] == 1500
    assert record["params"]["sizes_bytes"] == [1500, 9000]
    raw = (ctx.hooks.run_dir / rep["raw_file"]).read_text()
    assert raw.count("=== nasplan ping-sweep:") == 2 and "100% packet loss" in raw
    # each size's command kept, as the client ran it, smallest first
    assert [c["host"] for c in rep["commands"]] == ["ws", "ws"]
    assert [" ".join(c["argv"]) for c in rep["commands"]] == ws.texts("-M do")
    assert [c["argv"][c["argv"].index("-s") + 1] for c in rep["commands"]] == ["1472", "8972"]


def captured_sweep(command: str) -> Result:
    """The real outputs of a sweep from an MTU 9000 sender to an MTU 4000 peer, by size."""
    argv = command.split()
    size = int(argv[argv.index("-s") + 1]) + 28
    name = "sweep-local-mtu9000-9100.txt" if size == 9100 else f"sweep-peer-mtu4000-{size}.txt"
    return Result(command, (PING / name).read_text(), "", 0)


def test_a_4000_byte_hop_on_a_jumbo_path_is_found_and_sizes_the_nic_refuses_named(
    kind_context: Callable[..., Any],
) -> None:
    sizes = "sizes_bytes: [1500, 4000, 4100, 9000, 9100]"
    ctx, _, ws = kind_context(TEST.replace("sizes_bytes: [9000, 1500]", sizes), TOOLS)
    ws.allow("-M do", reply=captured_sweep)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "ok"
    sweep = record["repetitions"][0]["sweep"]
    assert [entry["received"] for entry in sweep] == [2, 2, 0, 0, 0]
    assert [entry["local_mtu_bytes"] for entry in sweep] == [None, None, None, None, 9000]
    assert record["summary"]["median"] == 4000


def test_an_expected_jumbo_path_that_drops_them_fails_with_the_mtu_found(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    ctx, _, ws = kind_context(
        TEST.replace("repetitions: 1", "repetitions: 2, expect_mtu_bytes: 9000"), TOOLS
    )
    ws.allow("-M do", reply=df_path(1500))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"] == "path MTU 1500 bytes, expected 9000"
    assert record["summary"]["n"] == 2


def test_a_target_that_answers_no_size_fails_the_repetition(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    ctx, _, ws = kind_context(TEST, TOOLS)
    ws.allow("-M do", (PING / "iputils-no-reply.txt").read_text())

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert "no size got a reply from 198.18.251.1" in record["error"]
    assert record["summary"]["median"] is None


def test_check_describes_the_sweep_and_installs_nothing(kind_context: Callable[..., Any]) -> None:
    ctx, _, _ = kind_context(TEST, TOOLS)
    bound = kinds.bind(ctx.plan.tests[0])
    assert bound.description == "DF ping sweep ws -> nas at 1500, 9000 bytes, 2 pings each x 1"
    assert bound.needs == {}
