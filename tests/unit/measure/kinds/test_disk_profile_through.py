"""``kind: disk-profile`` with ``through:``: the grid on a client, in the NAS's share that
nasplan mounts there for the test, through the runner seam: the mount first (the password on
stdin), the test file written in full, the grid, the directory removed and the share
unmounted on every way out; the plan's mistakes said before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.measure import kinds
from nasplan.measure.kinds import disk_profile
from nasplan.remote.runner import Result

from .test_disk import MKDIR, made_in

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "fio" / "profiles"
TOOLS = {"fio": "/usr/bin/fio"}
PASSWORD = "hunter2-unit"
MOUNT = "@@nasplan:mounted@@"
UNMOUNT = "@@nasplan:unmounted@@"
MP = "/tmp/nasplan-mnt-0a0b0c0d"
MOUNTED = f"@@nasplan:mounted@@\nhow=fuse\nmount_point={MP}\ndir={MP}/198.18.251.1/data\n"
IQN = "iqn.2005-10.org.freenas.ctl:scratch"
THROUGH = (
    "through: {method: smb, client: ws, share: data, path: bench, user: ann, "
    "password_env: NASPLAN_UNIT_SMB_PW}"
)


def _test(through: str = THROUGH) -> str:
    return (
        "  - {id: cdm, kind: disk-profile, host: nas, size: 16MiB, duration_s: 1, "
        f"repetitions: 1, jobs: [{{block_size: 1MiB}}], {through}}}\n"
    )


@pytest.fixture(autouse=True)
def password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NASPLAN_UNIT_SMB_PW", PASSWORD)


def test_the_grid_runs_on_the_client_in_the_mounted_share_then_it_is_unmounted(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(_test(), TOOLS)
    assert ctx.plan.tests[0].hosts == ("nas", "ws")
    ws.expect(MOUNT, MOUNTED)
    ws.expect(MKDIR, reply=made_in(f"{MP}/198.18.251.1/data/bench"))
    ws.expect("--name=nasplan-layout", "{}")
    ws.expect("--name=nasplan-seq1m-q1t1-read", (PROFILES / "seq1m-q8t1-read.json").read_text())
    ws.expect("--name=nasplan-seq1m-q1t1-write", (PROFILES / "seq1m-q1t1-write.json").read_text())
    ws.expect(f"rm -rf -- {MP}/198.18.251.1/data/bench/nasplan-fio-")
    ws.expect(UNMOUNT, UNMOUNT + "\n")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert not [t for t in nas.texts() if "fio" in t or "mount" in t]  # nothing on the NAS
    (mount,) = [c for c in ws.calls if MOUNT in c.text]
    assert mount.stdin == PASSWORD + "\n" and PASSWORD not in mount.text
    assert "server=198.18.251.1\n" in mount.text and "share=data\n" in mount.text
    assert "--lat_percentiles=1" in ws.texts("--name=nasplan-seq1m-q1t1-read")[0]
    layout = ws.texts("--name=nasplan-layout")[0]
    assert "--size=16777216" in layout and "--rw=write" in layout
    assert record["params"]["path"] is None
    assert record["params"]["through"] == {
        "method": "smb", "client": "ws", "share": "data", "path": "bench", "user": "ann",
        "mount": "auto", "target": None, "address": "198.18.251.1",
        "mounted": "SMB //198.18.251.1/data mounted with smbnetfs (FUSE)", "bridge": False,
    }  # fmt: skip
    kind = kinds.bind(ctx.plan.tests[0]).kind
    assert kind.flow(record, None) == (
        "ws through SMB //198.18.251.1/data mounted with smbnetfs (FUSE) of nas"
    )


def test_a_target_mounts_the_share_from_that_address_of_the_nas(
    kind_context: Callable[..., Any],
) -> None:
    """``target:`` picks which of the NAS's addresses (which link) the client mounts from."""
    ctx, _, ws = kind_context(_test(THROUGH.replace("}", ", target: 198.18.251.5}")), TOOLS)
    assert ctx.plan.tests[0].target.label() == "198.18.251.5"
    ws.expect(MOUNT, MOUNTED.replace("198.18.251.1", "198.18.251.5"))
    ws.expect(MKDIR, reply=made_in(f"{MP}/198.18.251.5/data/bench"))
    ws.expect("--name=nasplan-layout", "{}")
    ws.expect("--name=nasplan-seq1m-q1t1-read", (PROFILES / "seq1m-q8t1-read.json").read_text())
    ws.expect("--name=nasplan-seq1m-q1t1-write", (PROFILES / "seq1m-q1t1-write.json").read_text())
    ws.expect("rm -rf -- ")
    ws.expect(UNMOUNT, UNMOUNT + "\n")
    bound = kinds.bind(ctx.plan.tests[0])
    assert "ws through smb 198.18.251.5:data" in bound.description

    record = bound.run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert "server=198.18.251.5\n" in ws.texts(MOUNT)[0]
    via = record["params"]["through"]
    assert (via["target"], via["address"]) == ("198.18.251.5", "198.18.251.5")
    assert bound.kind.flow(record, None) == (
        "ws through SMB //198.18.251.5/data mounted with smbnetfs (FUSE) of 198.18.251.5"
    )


def test_a_failed_fio_still_removes_its_directory_and_unmounts(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(_test(), TOOLS)
    ws.expect(MOUNT, MOUNTED)
    ws.expect(MKDIR, reply=made_in(f"{MP}/198.18.251.1/data/bench"))
    ws.expect("--name=nasplan-layout", stderr="fio: io_u error: Input/output error", exited=1)
    ws.expect("rm -rf -- ")
    ws.expect(UNMOUNT, UNMOUNT + "\n")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"].startswith("fio could not write the test file "), record["error"]
    assert ws.texts(UNMOUNT)


def test_a_share_that_will_not_unmount_is_a_warning_naming_the_next_runs_cleanup(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(_test(), TOOLS)
    ws.expect(MOUNT, MOUNTED)
    ws.expect(MKDIR, stderr="mkdir: Permission denied", exited=3)
    ws.expect(UNMOUNT, reply=Result("u", "", "fusermount: device is busy", 3))

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"].startswith(f"cannot create a test directory in {MP}/198.18.251.1/")
    assert record["warnings"] == [
        "ws: could not unmount SMB //198.18.251.1/data: fusermount: device is busy "
        "(the next run's clean-up of ws unmounts it)"
    ]


def test_a_password_variable_that_is_not_set_mounts_nothing(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NASPLAN_UNIT_SMB_PW")
    ctx, _, ws = kind_context(_test(), TOOLS)
    record = kinds.bind(ctx.plan.tests[0]).run(ctx)
    assert record["error"] == (
        "the environment variable NASPLAN_UNIT_SMB_PW (through's password_env) is not set on "
        "this machine"
    )
    assert not ws.texts(MOUNT)


@pytest.mark.parametrize(
    ("through", "said"),
    [
        ("through: {method: nfs, client: ws, export: /data, password_env: X}", "tests[0].through"),
        ("through: {method: smb, client: ws, share: data}", "tests[0].through"),
        ("through: {method: smb, client: nope, share: d, user: u, password_env: X}",
         "tests[0].through.client: unknown host 'nope'"),
        # writing destroys what the LUN holds: refused before anything connects
        (f"through: {{method: iscsi, client: ws, target: '{IQN}', lun: 1}}",
         "tests[0].through: writing destroys what the LUN holds: mark it scratch: true"),
        (f"modes: [read, mix], through: {{method: iscsi, client: ws, target: '{IQN}', lun: 1}}",
         "tests[0].through: writing destroys what the LUN holds"),
        (f"through: {{method: iscsi, client: ws, target: '{IQN}', lun: 1, export: /d}}",
         "tests[0].through: method iscsi takes target and lun"),
        # target: which of the NAS's addresses, as a transfer's (an iSCSI target's name)
        ("through: {method: smb, client: ws, share: d, user: u, password_env: X, target: p2p}",
         "tests[0].through.target: expected HOST.INTERFACE (e.g. nas.lan) or an IP address"),
        ("through: {method: smb, client: ws, share: d, user: u, password_env: X, target: ws.e}",
         "tests[0].through.target: target 'ws.e' is not an interface of the server host 'nas'"),
        ("through: {method: nfs, client: ws, export: /d, target: nas.p2p10}",
         "tests[0].through.target: host 'nas' has no interface 'p2p10' in"),
        ("modes: [read], through: {method: iscsi, client: ws, target: nas.p2p10, lun: 1}",
         "tests[0].through.target: an iSCSI target's name: iqn."),
    ],
)  # fmt: skip
def test_a_through_the_plan_gets_wrong_is_refused_naming_it(
    kind_context: Callable[..., Any], through: str, said: str
) -> None:
    with pytest.raises(InputError) as caught:
        kind_context(_test(through), TOOLS)
    assert any(said in message for message in caught.value.messages), caught.value.messages


def test_through_fuse_the_latency_is_the_whole_requests_not_completions() -> None:
    """A real read through smbnetfs in the lab: completion latency 5 µs (the request is done
    while fio submits it), the whole request 43.8 ms at 22.7 IOPS; the grid keeps the latter."""
    fio_profiles = disk_profile.fio_profiles  # (wherever the profiles module lives)
    raw = (PROFILES / "smbnetfs-seq1m-q1t1-read-total-latency.json").read_text()
    read = fio_profiles.parse(raw)["read"]
    assert read["iops"] == pytest.approx(22.660099)
    assert read["latency_p50_us"] == pytest.approx(43778.048)
    assert 0.5 < read["latency_p50_us"] * read["iops"] / 1e6 < 2  # one request at a time
    argv = fio_profiles.job_argv(
        "fio", "/tmp/f", fio_profiles.GRID[1], "read", size_bytes=1, duration_s=1,
        total_latency=True,
    )  # fmt: skip
    assert argv[-1] == "--lat_percentiles=1"


def test_a_read_only_grid_on_a_lun_needs_no_scratch_and_through_the_bridge_says_q1(
    kind_context: Callable[..., Any],
) -> None:
    """The LUN through the user-space bridge: fio on its one file, nothing laid out (that would
    write to the LUN), and a queue depth above 1 said to reach the NAS as one request."""
    through = f"modes: [read], through: {{method: iscsi, client: ws, target: '{IQN}', lun: 1}}"
    test = _test(through).replace("[{block_size: 1MiB}]", "[{block_size: 1MiB, queue_depth: 8}]")
    ctx, _, ws = kind_context(test, TOOLS)
    ws.expect(MOUNT, f"{MOUNT}\nhow=fuse\nmount_point={MP}\ndir={MP}/nbd\n")
    ws.expect("--name=nasplan-seq1m-q8t1-read", (PROFILES / "seq1m-q8t1-read.json").read_text())
    ws.expect(UNMOUNT, UNMOUNT + "\n")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    (mount,) = ws.texts(MOUNT)
    assert f"share={IQN}\n" in mount and "lun=1\n" in mount
    assert f"--filename={MP}/nbd" in ws.texts("--name=nasplan-seq1m-q8t1-read")[0]
    assert not ws.texts("--name=nasplan-layout") and len(ws.calls) == 3  # mount, fio, unmount
    assert record["params"]["through"]["mounted"] == (
        f"iSCSI {IQN} LUN 1 on 198.18.251.1:3260 through the user-space bridge (libiscsi, nbdfuse)"
    )
    assert record["warnings"] == [
        "SEQ1M Q8T1 ran at Q1 at the NAS: the user-space bridge (nbdfuse) serves one request "
        "at a time, whatever fio queues"
    ]
