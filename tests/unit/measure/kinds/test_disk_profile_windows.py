"""``kind: disk-profile`` on Windows: diskspd with CrystalDiskMark's arguments, on the host's own
path and from a Windows client through the NAS's SMB share (opened around each script, the
password on stdin), through the runner seam; answers are real diskspd outputs
(tests/fixtures/diskspd/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure import kinds
from nasplan.measure.kinds.disk_profile import profiles
from nasplan.measure.kinds.disk_profile import windows as profile_windows
from nasplan.remote import shell
from nasplan.report import render_report

from .test_disk_profile import _run_of

DISKSPD = Path(__file__).resolve().parents[3] / "fixtures" / "diskspd"
MIX = (DISKSPD / "DiskSpdExample-ReadWrite.txt").read_text()  # 4K random, 70/30, Q1T1
WRITE = (DISKSPD / "DiskSpdExample-WriteOnly-v2.2.0.txt").read_text()  # 4K random writes
TOOLS = {"fio": "C:\\Tools\\diskspd.exe"}
PASSWORD = "hunter2-unit"
RND4K = "jobs: [{block_size: 4KiB, pattern: random}], modes: [write, mix]"


@pytest.fixture(autouse=True)
def password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NASPLAN_UNIT_SMB_PW", PASSWORD)


def test_the_crystaldiskmark_grid_in_diskspd_s_arguments() -> None:
    seq8, seq1, rnd32, rnd1 = profiles.GRID
    argv = profile_windows.job_argv("d.exe", "D:\\t\\f.dat", seq8, "read", duration_s=5)
    assert argv == [
        "d.exe", "-b1048576", "-o8", "-t1", "-W0", "-S", "-w0", "-d5", "-L", "-Rtext",
        "D:\\t\\f.dat",
    ]  # fmt: skip
    argv = profile_windows.job_argv("d.exe", "f", rnd32, "write", duration_s=5)
    assert argv[1:8] == ["-b4096", "-o32", "-t1", "-W0", "-S", "-w100", "-r"]
    assert "-Z4096" in argv  # writes of random data, as CrystalDiskMark's
    mix = profile_windows.job_argv("d.exe", "f", rnd1, "mix", duration_s=5, read_percent=70)
    assert "-w30" in mix and "-r" in mix
    # more than one thread reading one sequence shares its offset (CrystalDiskMark's -si)
    four = profiles.Job(seq1.block_bytes, 1, 4)
    assert "-si" in profile_windows.job_argv("d.exe", "f", four, "read", duration_s=5)
    with pytest.raises(ValueError):
        profile_windows.job_argv("d.exe", "f", seq1, "both", duration_s=5)


def _cells(record: dict[str, Any]) -> dict[str, Any]:
    (row,) = record["grid"]
    assert row["job"] == "RND4K Q1T1"
    return dict(row["cells"])


def test_the_grid_on_a_windows_host_s_own_path(kind_context: Callable[..., Any]) -> None:
    ctx, nas, _ = kind_context(
        "  - {id: pc, kind: disk-profile, host: nas, path: 'D:\\bench', size: 16MiB, "
        f"duration_s: 5, repetitions: 1, {RND4K}}}\n",
        TOOLS,
    )
    nas.use_shell(shell.windows(None))
    nas.expect("New-Item").expect("IO.FileStream")
    nas.expect("C:\\Tools\\diskspd.exe -b4096 -o1 -t1 -W0 -S -w100 -r -Z4096 -d5 -L", WRITE)
    nas.expect("-w30 -r -Z4096 -d5 -L -Rtext", MIX)
    nas.expect("Remove-Item")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert record["params"]["tool"] == "diskspd"
    cells = _cells(record)
    assert cells["write"]["bytes_per_second"] == 8265251819520 / 900.0
    assert cells["write"]["iops"] == 2242082.85
    assert (cells["write"]["latency_p50_us"], cells["write"]["latency_p999_us"]) == (146.0, 37418.0)
    assert cells["mix"]["bytes_per_second"] == 102645760 / 30.01 + 43524096 / 30.01
    assert cells["mix"]["iops"] == 834.98 + 354.05
    # a mix's latency is its reads', as fio's side of the grid keeps it
    assert (cells["mix"]["latency_p50_us"], cells["mix"]["latency_p99_us"]) == (232.0, 877.0)
    make, layout, write, _mix, remove = nas.texts()
    workdir = write.split()[-1].rsplit("\\", 1)[0]
    assert workdir.startswith("D:\\bench\\nasplan-diskspd-")
    assert f"'{workdir}'" in make and f"'{workdir}'" in remove
    assert f"$file = '{workdir}\\diskspd.dat'" in layout and "[long]16777216" in layout
    raw = record["repetitions"][1]["raw_file"]
    assert raw.endswith("rnd4k-q1t1-mix-1.txt")
    assert (ctx.hooks.run_dir / raw).read_text() == MIX
    kind = kinds.bind(ctx.plan.tests[0]).kind
    assert kind.measured(record, None) == "diskspd"


THROUGH = (
    "through: {method: smb, client: ws, share: data, path: bench, user: ann, "
    "password_env: NASPLAN_UNIT_SMB_PW}"
)


def test_a_windows_client_measures_through_the_share_it_opens_for_each_script(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        "  - {id: from-pc, kind: disk-profile, host: nas, size: 16MiB, duration_s: 5, "
        f"repetitions: 1, {RND4K}, {THROUGH}}}\n",
        TOOLS,
    )
    ws.use_shell(shell.windows(None))
    ws.expect("New-Item").expect("IO.FileStream").expect("-w100", WRITE).expect("-w30", MIX)
    ws.expect("Remove-Item")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert not [t for t in nas.texts() if "diskspd" in t or "Smb" in t]  # nothing on the NAS
    share = "\\\\198.18.251.1\\data"
    for call in ws.calls:
        if call.script and "Smb" in call.text:  # every script of the test opened the share
            assert call.stdin == PASSWORD + "\n" and PASSWORD not in call.text
            assert f"$share = '{share}'" in call.text and "$user = 'ann'" in call.text
            assert "-Persistent $false" in call.text
            # closed on every way out; one left in the session by a cut-off script goes first
            assert call.text.index("Remove-SmbMapping") < call.text.index("New-SmbMapping")
            assert "finally {\n  Remove-SmbMapping -RemotePath $share" in call.text
    assert len([c for c in ws.calls if "New-SmbMapping" in c.text]) == 5
    write = ws.texts("-w100")[0]
    assert f"'{share}\\bench\\nasplan-diskspd-" in write and "$rc = $LASTEXITCODE" in write
    assert record["params"]["through"]["mounted"] == f"SMB {share} mapped with New-SmbMapping"
    assert _cells(record)["mix"]["latency_p999_us"] == 1608.0
    kind = kinds.bind(ctx.plan.tests[0]).kind
    assert kind.flow(record, None) == f"ws through SMB {share} mapped with New-SmbMapping of nas"
    # the report's grid is fio's (the same columns), saying which tool measured
    report = render_report({**_run_of(record)})
    assert f"diskspd on ws through SMB {share} mapped with New-SmbMapping of nas:" in report
    assert "the system's file cache off (-S), the mix 70 % reads; ok." in report
    assert "| Test | Write (MB/s) | Mix (MB/s) |" in report
    assert "| RND4K Q1T1 | 9183.61 | 4.87 |" in report
    assert "| RND4K Q1T1 | mix | 1189.0 | 232 µs | 877 µs | 1.61 ms | 1 |" in report


def test_a_failed_diskspd_is_recorded_and_the_directory_still_removed(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(
        "  - {id: from-pc, kind: disk-profile, host: nas, size: 16MiB, duration_s: 5, "
        f"repetitions: 1, modes: [write], jobs: [{{block_size: 4KiB}}], "
        f"{THROUGH[:-1]}, version: '3.0'}}}}\n",
        TOOLS,
    )
    ws.use_shell(shell.windows(None))
    ws.expect("New-Item").expect("IO.FileStream")
    ws.expect("-w100", "", stderr="The network path was not found.", exited=1)
    ws.expect("Remove-Item")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["warnings"] == [
        "ws is Windows: its SMB client picks the dialect itself (through's version and mount "
        "are a Linux client's)"
    ]
    (rep,) = record["repetitions"]
    assert rep["error"] == "diskspd printed no result: (no output) (exit 1)"
    assert _grid_job(record) == "SEQ4K Q1T1"


def _grid_job(record: dict[str, Any]) -> str:
    (row,) = record["grid"]
    return str(row["job"])


def test_a_share_that_does_not_open_stops_the_test_before_diskspd(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(
        "  - {id: from-pc, kind: disk-profile, host: nas, size: 16MiB, duration_s: 5, "
        f"repetitions: 1, {RND4K}, {THROUGH}}}\n",
        TOOLS,
    )
    ws.use_shell(shell.windows(None))
    said = "nasplan: cannot open \\\\198.18.251.1\\data as ann: Access is denied."
    ws.expect("New-Item", said + "\n", exited=2)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed" and record["repetitions"] == []
    assert record["error"].endswith(f"on ws: {said}")


def test_a_windows_client_refuses_nfs_in_one_line(kind_context: Callable[..., Any]) -> None:
    ctx, _, ws = kind_context(
        "  - {id: nfs-pc, kind: disk-profile, host: nas, repetitions: 1, "
        "through: {method: nfs, client: ws, export: /volume1/data}}\n",
        TOOLS,
    )
    ws.use_shell(shell.windows(None))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"] == (
        "ws is Windows: nasplan measures a share from Windows over SMB only "
        "(diskspd in \\\\NAS\\share), not nfs"
    )
