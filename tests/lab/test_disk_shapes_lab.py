"""In the lab: disks with a shape. An SSD volume whose writes are a quarter of its reads, and an
SSD with an SLC cache (fast for its first 48 MiB written, then slow): fio measures each rate
within its shaping, a copy that fits the cache goes at the cache's rate, a longer one falls to
the disk's write rate in its timeline."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import LabContext

from nasplan.input.plan import load_plan
from nasplan.lab import LabState
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

MIB = 2**20
LAB = {
    "name": "l45-shapes",
    "lan": {"prefix": "198.18.104.0/24", "rate": "1G"},
    "hosts": {
        "nas": {
            "volumes": {
                "ssd": {"read": "200MiB/s", "write": "50MiB/s", "size": "256MiB"},
                "slc": {"read": "200MiB/s", "write": "25MiB/s", "size": "384MiB",
                        "write_cache": {"size": "48MiB", "rate": "200MiB/s"}},
            },
        },
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def nas(running_lab: LabContext) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


def run_plan(state: LabState, tmp_path: Path, tests: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply the tests against the lab; its run.json's tests by id (every one ok)."""
    plan = {"name": "shapes", "inventory": str(state.inventory_path), "tests": tests}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    outcome = apply(RunRequest(load_plan(path), out=tmp_path / "run"), make_progress(io.StringIO()))
    run = load_run(tmp_path / "run")
    assert outcome.exit_code == EXIT_OK, [(t["id"], t["error"]) for t in run["tests"]]
    return {t["id"]: t for t in run["tests"]}


def test_reads_and_writes_each_meet_their_own_rate(nas: LabState, tmp_path: Path) -> None:
    inventory = yaml.safe_load(nas.inventory_path.read_text())
    ssd = inventory["hosts"]["nas"]["volumes"]["ssd"]
    assert (ssd["read_rate"], ssd["write_rate"], ssd["rate"]) == ("200MiB/s", "50MiB/s", "50MiB/s")
    tests = run_plan(nas, tmp_path, [
        {"id": "disk", "kind": "disk", "host": "nas", "volume": "ssd", "size": "96MiB",
         "repetitions": 1},
    ])  # fmt: skip
    directions = tests["disk"]["directions"]
    write, read = directions["write"]["median"], directions["read"]["median"]
    assert 40 * MIB < write < 60 * MIB, write / MIB
    # reads: 200 MiB/s, or what the machine's CPU lets the disk serve, well above the writes
    assert 120 * MIB < read < 240 * MIB, read / MIB
    assert read > 2.5 * write


def test_an_slc_cache_is_fast_for_its_size_then_writes_fall_to_the_disk_s_rate(
    nas: LabState, tmp_path: Path
) -> None:
    tests = run_plan(nas, tmp_path, [
        {"id": "fits", "kind": "disk", "host": "nas", "volume": "slc", "size": "24MiB",
         "direction": "write", "repetitions": 1},
        {"id": "outlasts", "kind": "disk", "host": "nas", "volume": "slc", "size": "128MiB",
         "direction": "write", "repetitions": 1},
    ])  # fmt: skip
    fits = tests["fits"]["directions"]["write"]["median"]
    outlasts = tests["outlasts"]["directions"]["write"]["median"]
    # 24 MiB into the cache: far above the disk's 25 MiB/s
    assert fits > 100 * MIB, fits / MIB
    # 48 MiB at 200 MiB/s and 80 MiB at 25 MiB/s: about 37 MiB/s in all
    assert 28 * MIB < outlasts < 50 * MIB, outlasts / MIB
    (series,) = tests["outlasts"]["timeline"]["throughput"]
    rates = [r for r in series["bits_per_second"] if r]
    # the first second holds the cache's burst; the last ones the disk's own write rate
    assert rates[0] > 2 * rates[-1], [r / 8 / MIB for r in rates]
    assert rates[-1] / 8 < 32 * MIB, [r / 8 / MIB for r in rates]
