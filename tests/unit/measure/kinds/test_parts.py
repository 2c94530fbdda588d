"""A test run in parts (``PlanTest.first_repetition``) merged by ``measure.merge`` is the record
one run of all its repetitions gives: the iperf3 kind through the runner seam."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure import kinds, timeline
from nasplan.measure.merge import merge
from nasplan.run.cell import Cell, TornDown

from .conftest import riding_client, run_cell


@pytest.fixture()
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every repetition at 0 s on its test's clock: parts and whole compare byte for byte."""
    monkeypatch.setattr(timeline.Clock, "now_s", lambda self: 0.0)


IPERF3 = Path(__file__).resolve().parents[3] / "fixtures" / "iperf3" / "3.12"


def _torn(cell: Cell, number: int) -> dict[str, Any]:
    """What part ``number``'s teardown returned (its ``resources``)."""
    found = [e.completes for e in cell.log if isinstance(e, TornDown) and e.number == number]
    return dict(found[-1]) if found else {}


CLIENT_OUTPUT = (IPERF3 / "tcp-single.json").read_text()
TEST = "  - {id: p2p, kind: iperf3, server: nas, client: ws, duration_s: 2, repetitions: 3}\n"


def _expect_repetitions(nas: Any, ws: Any, count: int) -> None:
    for _ in range(count):
        nas.expect("port=5201")
        nas.expect("kill", (IPERF3 / "tcp-single-server-log.json").read_text())
        ws.expect("/usr/bin/iperf3 -J -c", reply=riding_client(CLIENT_OUTPUT))


def _tokens_out(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its kept servers' temp file names (the run token's) left out."""
    record = copy.deepcopy(record)
    for rep in record["repetitions"]:
        for kept in rep.get("commands") or []:
            if kept.get("server"):
                kept["argv"] = [a for a in kept["argv"] if not a.startswith("/tmp/nasplan-")]
    return record


def test_a_test_run_as_three_parts_merges_to_the_record_of_one_run(
    kind_context: Callable[..., Any], frozen_clock: None
) -> None:
    ctx, nas, ws = kind_context(TEST, {"iperf3": "/usr/bin/iperf3"})
    bound = kinds.bind(ctx.plan.tests[0])
    _expect_repetitions(nas, ws, 6)

    whole_cell = run_cell(ctx, bound.test)
    ctx.settle()
    whole = whole_cell.record()
    cell = Cell(bound)
    ctx.hooks.cell = cell
    for first in (1, 2, 3):
        cell.returned(bound.run_part(cell.part(first, 1), ctx), ended=True)
        ctx.settle()
    parts = [cell_part.record | _torn(cell, cell_part.number) for cell_part in cell.parts]
    merged = merge([(p, 0.0) for p in parts], bound.summarize)

    # the samplers ran once a part: their samples add up, the rest is the one run's
    samples = [p["resources"]["ws"]["samples"] for p in parts]
    assert merged.pop("resources")["ws"]["samples"] == sum(samples)
    whole.pop("resources")
    # each one-off iperf3 server's pidfile and log are named by its run's token
    assert _tokens_out(merged) == _tokens_out(whole)
    assert all(r["commands"][0]["server"] for r in merged["repetitions"])
    assert [r["raw_file"] for r in merged["repetitions"]] == [
        f"raw/p2p/rep-{i}.json" for i in (1, 2, 3)
    ]


SWEEP = (
    "  - {id: mtu, kind: ping-sweep, server: nas, client: ws, sizes_bytes: [9000, 1500],\n"
    "     expect_mtu_bytes: 9000, repetitions: 3}\n"
)


def test_a_sweep_in_parts_merges_to_the_record_of_one_run_its_verdict_included(
    kind_context: Callable[..., Any], df_path: Any
) -> None:
    """No sampler, no clock: the merged record is the whole run's, byte for byte (its failure
    too: the path MTU found, 1500, is not the one expected)."""
    ctx, _, ws = kind_context(SWEEP, {"ping": "/usr/bin/ping"})
    ws.allow("-M do", reply=df_path(1500))
    bound = kinds.bind(ctx.plan.tests[0])

    whole = bound.run(ctx)
    parts = [
        bound.run_part(dataclasses.replace(bound.test, first_repetition=i, repetitions=1), ctx)
        for i in (1, 2, 3)
    ]

    merged = merge([(p, 0.0) for p in parts], bound.summarize)
    assert json.dumps(merged) == json.dumps(whole)
    assert merged["error"] == "path MTU 1500 bytes, expected 9000"
