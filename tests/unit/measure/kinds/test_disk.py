"""``kind: disk`` run() through the runner seam: fio on the NAS, its work directory, fallback."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasplan.measure import kinds
from nasplan.remote import shell
from nasplan.remote.runner import Result

FIO = Path(__file__).resolve().parents[3] / "fixtures" / "fio"
DISKSPD = Path(__file__).resolve().parents[3] / "fixtures" / "diskspd"
TEST = "  - {id: vol, kind: disk, host: nas, path: /volume1/test, size: 32MiB, repetitions: 1}\n"
TOOLS = {"fio": "/usr/bin/fio"}
MKDIR = "mkdir -m 700"  # the host-side script that makes the work directory and prints it


def _made_name(script: str) -> str:
    """The fresh name the work-directory script was given (its ``set -- PATH NAME`` line)."""
    line = next(line for line in script.splitlines() if line.startswith("set -- "))
    return shlex.split(line)[-1]


def made_in(directory: str) -> Callable[[str], Result]:
    """The work-directory script's answer: ``directory/<the name it was given>``."""
    return lambda text: Result(text, f"{directory}/{_made_name(text)}\n", "", 0)


def test_write_then_read_in_a_directory_removed_afterwards(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, _ = kind_context(TEST, TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    nas.expect("--rw=write", (FIO / "seq-write-direct.json").read_text())
    nas.expect("fio.bin.bw_bw.1.log", (FIO / "bwlog" / "direct-write-steady_bw.1.log").read_text())
    nas.expect("--rw=read", (FIO / "seq-read-direct.json").read_text())
    nas.expect("fio.bin.bw_bw.1.log", (FIO / "bwlog" / "direct-read_bw.1.log").read_text())
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert record["params"]["size_bytes"] == 32 * 2**20
    assert "--size=33554432" in nas.texts("--rw=write")[0]
    assert "--direct=1" in nas.texts("--rw=read")[0]
    assert set(record["directions"]) == {"write", "read"}
    assert record["summary"] == record["directions"]["write"]
    (made,) = nas.texts(MKDIR)
    name = _made_name(made)
    assert f"set -- /volume1/test {name}" in made  # the plan's path and a fresh name
    # in the host's lock before it is made
    assert made.index('nasplan_register - - "$base/$2"') < made.index("mkdir -m 700")
    workdir = f"/volume1/test/{name}"
    assert name.startswith("nasplan-fio-")
    assert f"--filename={workdir}/fio.bin" in nas.texts("--rw=write")[0]
    assert nas.texts("rm -rf")[0].endswith(workdir)
    # fio's per-second log of each job, read back and removed, is the test's timeline
    assert f"--write_bw_log={workdir}/fio.bin.bw" in nas.texts("--rw=write")[0]
    assert all('rm -f -- "$1"' in text for text in nas.texts("_bw.1.log"))
    write, read = record["timeline"]["throughput"]
    assert (write["direction"], write["source"], len(write["t_s"])) == ("write", "fio", 4)
    assert (read["direction"], len(read["t_s"])) == ("read", 3)
    assert write["fall"] is None and read["fall"] is None
    assert write["bits_per_second"][0] == 23552 * 1024 * 8
    reps = record["repetitions"]
    assert reps[0]["started_s"] < write["t_s"][0] and reps[0]["ended_s"] <= reps[1]["started_s"]


def test_refused_direct_io_is_measured_buffered_and_said(
    kind_context: Callable[..., Any],
) -> None:
    # the size of the captured buffered write (32 MiB)
    test = TEST.replace("size: 32MiB", "size: 32MiB, direction: write")
    ctx, nas, _ = kind_context(test, TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    nas.expect("--direct=1", (FIO / "direct-io-error.txt").read_text())
    nas.expect("--direct=0", (FIO / "seq-write-buffered.json").read_text())
    bwlog = FIO / "bwlog" / "buffered-write-cache-then-disk_bw.1.log"
    nas.expect("_bw.1.log", bwlog.read_text())
    nas.expect("rm -rf")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "ok"
    assert record["params"]["direct"] is False
    assert record["repetitions"][0]["direct"] is False
    assert any("refused direct I/O" in w for w in record["warnings"])
    # buffered, its rate fell once the page cache was full (a real fio log)
    (series,) = record["timeline"]["throughput"]
    assert series["fall"] is not None and series["fall"]["after_s"] == 4.0


def test_a_directory_that_cannot_be_made_fails_without_running_fio(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, _ = kind_context(TEST, TOOLS)
    nas.expect(MKDIR, stderr="mkdir: cannot create directory: Read-only file system", exited=3)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"].endswith("Read-only file system")
    assert record["summary"]["median"] is None
    assert record["repetitions"] == []


def test_a_disk_test_on_a_windows_host_through_run(kind_context: Callable[..., Any]) -> None:
    ctx, nas, _ = kind_context(
        "  - {id: pcdisk, kind: disk, host: nas, path: 'D:\\bench', direction: write,\n"
        "     size: 1GiB, duration_s: 5, repetitions: 1}\n",
        {"fio": "C:\\Tools\\diskspd.exe"},
    )
    nas.use_shell(shell.windows(None))
    result = (DISKSPD / "DiskSpdExample-ReadWrite.txt").read_text()
    nas.expect("New-Item").expect("C:\\Tools\\diskspd.exe -c1024M -b1M -d5", result)
    nas.expect("Remove-Item")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert record["params"]["tool"] == "diskspd"
    assert record["directions"]["write"]["median"] == 43524096 / 30.01
    assert (ctx.hooks.run_dir / record["repetitions"][0]["raw_file"]).read_text() == result


def test_a_directory_that_resolves_to_a_name_fio_misreads_is_removed_unused(
    kind_context: Callable[..., Any],
) -> None:
    """/volume1/test is a symlink to /volume1/a:b on the NAS: fio would split the name at ':'."""
    ctx, nas, _ = kind_context(TEST, TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/a:b"))
    nas.expect("rm -rf -- /volume1/a:b/nasplan-fio-")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert "resolves to '/volume1/a:b/nasplan-fio-" in record["error"]
    assert "fio would not read" in record["error"]
    assert not nas.texts("--rw=")  # fio never ran
    assert record["repetitions"] == []


def test_a_read_after_a_write_that_failed_is_not_measured(
    kind_context: Callable[..., Any],
) -> None:
    """A full volume: the write fails with ENOSPC (real fio output). Reading what it left would
    read holes at memory speed: the read fails, saying why, and fio is never asked to."""
    ctx, nas, _ = kind_context(TEST.replace("size: 32MiB", "size: 16MiB"), TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    nas.expect("--rw=write", (FIO / "enospc-write.txt").read_text())
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    write, read = record["repetitions"]
    assert write["status"] == "failed" and "No space left on device" in write["error"]
    assert read["status"] == "failed"
    assert read["error"].startswith("not measured: the file to read was not written whole")
    assert nas.texts("--rw=read") == []
    assert record["status"] == "failed" and record["directions"]["read"]["n"] == 0


def test_a_job_that_moved_fewer_bytes_than_asked_is_no_measurement(
    kind_context: Callable[..., Any],
) -> None:
    test = TEST.replace("size: 32MiB", "size: 128MiB, direction: write")
    ctx, nas, _ = kind_context(test, TOOLS)
    nas.expect(MKDIR, reply=made_in("/volume1/test"))
    # a real 64 MiB write's result, for a test that asked for 128 MiB
    nas.expect("--rw=write", (FIO / "seq-write-direct.json").read_text())
    nas.expect("fio.bin.bw_bw.1.log", "")
    nas.expect("rm -rf -- /volume1/test/nasplan-fio-")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    (write,) = record["repetitions"]
    assert write["status"] == "failed"
    assert write["error"] == (
        "fio moved 67108864 of the 134217728 bytes asked for: not a measurement of the whole file"
    )
    assert write["raw_file"]  # what fio said is kept
