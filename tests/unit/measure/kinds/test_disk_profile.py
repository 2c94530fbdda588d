"""``kind: disk-profile`` run() through the runner seam: the grid's fio jobs on the NAS, their
real JSON (tests/fixtures/fio/profiles), the grid the report prints, sizes refused when fio
would read them otherwise."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.measure import kinds
from nasplan.measure.kinds.disk_profile import profiles as fio_profiles
from nasplan.measure.merge import done_indices, done_pairs, kept_part, merge
from nasplan.report import render_report

from .test_disk import MKDIR, made_in

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "fio" / "profiles"
TOOLS = {"fio": "/usr/bin/fio"}


def _test(extra: str = "") -> str:
    return (
        "  - {id: cdm, kind: disk-profile, host: nas, path: /volume1/test, size: 32MiB, "
        f"duration_s: 1, repetitions: 1{extra}}}\n"
    )


def fixture(name: str) -> str:
    return (PROFILES / name).read_text()


def test_the_crystaldiskmark_grid_runs_each_job_and_mode_and_prints_its_shape(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, _ = kind_context(_test(", modes: [read, write, mix]"), TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    # the real fio outputs of this machine's runs (one job read, another written: enough for
    # what the grid takes of each)
    for job, read, write, mix in (
        ("seq1m-q8t1", "seq1m-q8t1-read", "seq1m-q1t1-write", "rnd4k-q1t1-mix"),
        ("seq1m-q1t1", "seq1m-q8t1-read", "seq1m-q1t1-write", "rnd4k-q1t1-mix"),
        ("rnd4k-q32t1", "rnd4k-q32t1-read", "rnd4k-q32t1-write", "rnd4k-q1t1-mix"),
        ("rnd4k-q1t1", "rnd4k-q32t1-read", "rnd4k-q32t1-write", "rnd4k-q1t1-mix"),
    ):
        for mode, name in (("read", read), ("write", write), ("mix", mix)):
            nas.expect(f"--name=nasplan-{job}-{mode}", fixture(f"{name}.json"))
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    q32 = nas.texts("--name=nasplan-rnd4k-q32t1-read")[0]
    for part in ("--rw=randread", "--bs=4096", "--iodepth=32", "--numjobs=1", "--size=33554432",
                 "--runtime=1", "--time_based", "--ioengine=libaio", "--direct=1"):  # fmt: skip
        assert part in q32, part
    assert "--rw=rw" in nas.texts("--name=nasplan-seq1m-q8t1-mix")[0]
    assert "--rwmixread=70" in nas.texts("--name=nasplan-seq1m-q8t1-mix")[0]
    assert [row["job"] for row in record["grid"]] == [
        "SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"
    ]  # fmt: skip
    cell = record["grid"][2]["cells"]["read"]
    assert cell["iops"] == pytest.approx(85786.213786)
    assert cell["latency_p99_us"] == pytest.approx(2146.304)
    mix = next(r for r in record["repetitions"] if r["direction"] == "mix")
    assert mix["bytes_per_second"] == mix["read_bytes_per_second"] + mix["write_bytes_per_second"]

    report = render_report({**_run_of(record)})
    assert "| Test | Read (MB/s) | Write (MB/s) | Mix (MB/s) |" in report
    assert "| SEQ1M Q8T1 | 2148.33 | 3939.75 | 53.66 |" in report
    assert "| RND4K Q32T1 | read | 85786.2 | 297 µs | 2.15 ms | 5.34 ms | 1 |" in report


def _run_of(record: dict[str, Any]) -> dict[str, Any]:
    from nasplan.results import load_run

    run = load_run(Path(__file__).resolve().parents[3] / "fixtures" / "runs" / "sample")
    return {**run, "tests": [record]}


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("size: 1G", "tests[0].size: a size with its unit: 1GiB (2^30 bytes, what fio reads"),
        ("jobs: [{block_size: 4K}]", "tests[0].jobs[0].block_size: a block size with its unit"),
    ],
)
def test_a_size_fio_would_read_otherwise_is_refused_with_both_readings(
    kind_context: Callable[..., Any], extra: str, where: str
) -> None:
    with pytest.raises(InputError) as caught:
        text = _test() if extra.startswith("size") else _test(f", {extra}")
        kind_context(
            text.replace("size: 32MiB", extra) if extra.startswith("size") else text, TOOLS
        )
    (said,) = caught.value.messages
    assert where in said, said


def test_jobs_of_the_plans_own_are_named_as_the_benchmarks_name_them(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(
        _test(", jobs: [{block_size: 64KiB, queue_depth: 4, threads: 2, pattern: random}]"),
        TOOLS,
    )
    bound = kinds.bind(ctx.plan.tests[0])
    assert bound.description.startswith("fio its own jobs (RND64K Q4T2) read/write on nas:")


def test_a_resumed_run_measures_only_the_cells_it_did_not_keep(
    kind_context: Callable[..., Any],
) -> None:
    """Ctrl-C after the read of repetition 1 (tests/fixtures/runs/disk-profile-lab/interrupted
    is such a run): the resumed run keeps that read, measures the write alone, and the merged
    record has each job, mode and repetition once."""
    ctx, nas, _ = kind_context(_test(", jobs: [{block_size: 1MiB}]"), TOOLS)
    test = ctx.plan.tests[0]
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    nas.expect("--name=nasplan-seq1m-q1t1-read", fixture("seq1m-q8t1-read.json"))
    nas.expect("--name=nasplan-seq1m-q1t1-write", fixture("seq1m-q1t1-write.json"))
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")
    bound = kinds.bind(test)
    first = bound.run(ctx)
    interrupted = {
        **first,
        "repetitions": [r for r in first["repetitions"] if r["direction"] == "read"],
    }
    kind = kinds.readout(interrupted)
    assert kind.directions_asked(interrupted) == ["SEQ1M Q1T1 read", "SEQ1M Q1T1 write"]
    assert done_indices(interrupted, kind.directions_asked(interrupted)) == set()
    kept = done_pairs(interrupted)
    assert kept == {(1, "SEQ1M Q1T1 read")}

    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    nas.expect("--name=nasplan-seq1m-q1t1-write", fixture("seq1m-q1t1-write.json"))
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")
    part = bound.run_part(dataclasses.replace(test, kept=frozenset(kept)), ctx)
    assert [r["direction"] for r in part["repetitions"]] == ["write"]
    assert not nas.texts("--name=nasplan-seq1m-q1t1-read")[1:]  # the read not measured again

    merged = merge([(kept_part(interrupted) or {}, 0.0), (part, 5.0)], bound.summarize)
    keys = [(r["profile_job"], r["direction"], r["index"]) for r in merged["repetitions"]]
    assert sorted(keys) == [("SEQ1M Q1T1", "read", 1), ("SEQ1M Q1T1", "write", 1)]
    assert {m: c["n"] for m, c in merged["grid"][0]["cells"].items()} == {"read": 1, "write": 1}


def test_the_lab_runs_records_are_what_fios_json_said() -> None:
    """tests/fixtures/runs/disk-profile-lab: each kept repetition's numbers are its raw fio
    JSON's, parsed again (through the share with the whole request's latency)."""
    lab = Path(__file__).resolve().parents[3] / "fixtures" / "runs" / "disk-profile-lab"
    run = json.loads((lab / "run.json").read_text())
    checked = 0
    for test in run["tests"]:
        for rep in test["repetitions"]:
            if not (lab / rep["raw_file"]).is_file():
                continue  # (the fixture keeps a few)
            sides = fio_profiles.parse((lab / rep["raw_file"]).read_text())
            main = sides["write" if rep["direction"] == "write" else "read"]
            total = sum(s["bytes_per_second"] for s in sides.values() if s)
            assert rep["bytes_per_second"] == pytest.approx(total)
            for key in ("latency_p50_us", "latency_p99_us", "latency_p999_us"):
                assert rep[key] == pytest.approx(main[key]), (rep["raw_file"], key)
            checked += 1
    assert checked == 14
