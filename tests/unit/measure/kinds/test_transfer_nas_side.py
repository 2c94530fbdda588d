"""``kind: transfer`` on the NAS's side through the runner seam: a set of many files beside one
file of the same bytes, a cold read after the NAS dropped its cache (and a NAS that cannot),
several clients at once, rsync's known_hosts made from the NAS's verified key."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure import estimate, kinds
from nasplan.measure.kinds import transfer as transfer_kind
from nasplan.measure.series import COLD_READ
from nasplan.platforms.truenas import TrueNas

TRANSFER = Path(__file__).resolve().parents[3] / "fixtures" / "transfer"
SETUP_DIR = "/tmp/nasplan-xfer.Ab12Cd"


def timed(fixture: str, elapsed_ns: int) -> str:
    """What ``timed_script`` prints around a captured tool output."""
    output = (TRANSFER / fixture).read_text()
    return f"{output.rstrip()}\nNASPLAN_ELAPSED_NS={elapsed_ns}\nNASPLAN_EXIT=0\n"


@pytest.fixture()
def smb_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NASPLAN_UNIT_SMB_PASSWORD", "unit-pw")


def test_a_mixed_set_over_smb_beside_one_file_of_the_same_bytes(
    kind_context: Callable[..., Any], smb_password: None
) -> None:
    # the captured mput/mget moved 3 files of 1 MiB and one of 64 KiB
    ctx, _nas, ws = kind_context(
        "  - {id: many, kind: transfer, server: nas, client: ws, method: smb, share: data,\n"
        "     password_env: NASPLAN_UNIT_SMB_PASSWORD, repetitions: 1,\n"
        "     files: [{count: 3, size: 1MiB}, {count: 1, size: 64KiB}]}\n",
        {"smbclient": "/usr/bin/smbclient"},
    )
    ws.expect("split -b 1048576", SETUP_DIR + "\n")
    ws.expect("mput nasplan-many-", timed("smbclient-4.17-mput.txt", 40_000_000))
    ws.expect(
        "put /tmp/nasplan-xfer.Ab12Cd/source.bin", timed("smbclient-4.17-put.txt", 20_000_000)
    )
    ws.expect("mget nasplan-many-", timed("smbclient-4.17-mget.txt", 32_000_000))
    ws.expect("get nasplan-many-", timed("timed-smbclient-get.txt", 16_000_000))
    ws.expect("deltree nasplan-many-")
    ws.expect("del nasplan-many-")
    ws.expect(f"rm -rf -- {SETUP_DIR}")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None), record["error"]
    write, _read = record["repetitions"]
    total = 3 * 2**20 + 64 * 2**10
    assert (write["files"], write["bytes"]) == (4, total)
    assert write["files_per_second"] == pytest.approx(4 / 0.04)
    assert write["one_file_bytes_per_second"] == pytest.approx(total / 0.02)
    setup = next(call.text for call in ws.calls if "split" in call.text)
    assert "head -c 3145728 /dev/urandom | split -b 1048576" in setup
    assert "head -c 65536 /dev/urandom | split -b 65536" in setup
    series = kinds.readout(record).series(record)
    said = kinds.readout(record).also(record, series[0])
    assert "100 files/s" in said and "50 % slower than one file of the same bytes" in said


def test_a_cold_read_comes_after_the_nas_dropped_its_cache(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        "  - {id: cold, kind: transfer, server: nas, client: ws, method: copy,\n"
        "     mounted_path: /mnt/nas, server_path: /srv/share, direction: read,\n"
        "     read_cache: both, size: 16MiB, repetitions: 1}\n"
    )
    ws.expect("head -c 16777216 /dev/urandom", SETUP_DIR + "\n")
    ws.expect("conv=fsync", timed("dd-9.1-write-fsync.txt", 17_000_000))
    ws.expect("dd if=/mnt/nas/nasplan-cold-", timed("dd-9.1-read.txt", 8_000_000))
    nas.expect("drop_caches", "nasplan: dropped the page cache of /srv/share/nasplan-cold-x.bin\n")
    ws.expect("dd if=/mnt/nas/nasplan-cold-", timed("dd-9.1-read.txt", 80_000_000))
    ws.expect("rm -f -- /mnt/nas/nasplan-cold-")
    ws.expect(f"rm -rf -- {SETUP_DIR}")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "ok", record["error"]
    read, cold = record["repetitions"]
    assert (read["direction"], cold["direction"]) == ("read", COLD_READ)
    assert cold["cache"].startswith("dropped the page cache of /srv/share/nasplan-cold-")
    drop = next(call for call in nas.calls if "drop_caches" in call.text)
    # as root: a page cache is the kernel's; the copy's path on the NAS, quoted, first
    assert drop.sudo and "set -- /srv/share/nasplan-cold-" in drop.text
    assert set(record["directions"]) == {"read", COLD_READ}
    series = {s.direction: s for s in kinds.readout(record).series(record)}
    assert "cold: dropped the page cache" in kinds.readout(record).also(record, series[COLD_READ])
    assert kinds.readout(record).flow(record, COLD_READ).endswith("→ ws")


def test_a_nas_that_cannot_drop_its_cache_says_so_and_skips_cold_reads(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, ws = kind_context(
        "  - {id: cold, kind: transfer, server: nas, client: ws, method: copy,\n"
        "     mounted_path: /mnt/nas, direction: read, read_cache: cold, size: 16MiB,\n"
        "     repetitions: 1}\n"
    )
    ctx.sessions["nas"].platform = TrueNas()
    ws.expect("head -c 16777216 /dev/urandom", SETUP_DIR + "\n")
    ws.expect("conv=fsync", timed("dd-9.1-write-fsync.txt", 17_000_000))
    ws.expect("rm -f -- /mnt/nas/nasplan-cold-")
    ws.expect(f"rm -rf -- {SETUP_DIR}")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["repetitions"] == [] and not nas.texts("drop_caches")
    (warning,) = record["warnings"]
    assert warning.startswith("cold reads not measured: TrueNAS keeps files in ZFS's ARC")


def test_two_clients_write_at_once_and_share_fairly(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _nas, ws = kind_context(
        "  - {id: office, kind: transfer, server: nas, clients: [ws, ws2], method: copy,\n"
        "     mounted_path: /mnt/nas, direction: write, size: 16MiB, repetitions: 1}\n",
        clients=("ws2",),
    )
    for runner in (ws, ctx.sessions["ws2"].runner):
        runner.expect("head -c 16777216 /dev/urandom", SETUP_DIR + "\n")
    for runner, elapsed_ns in ((ws, 200_000_000), (ctx.sessions["ws2"].runner, 400_000_000)):
        runner.expect("conv=fsync", timed("dd-9.1-write-fsync.txt", elapsed_ns))
    for runner in (ws, ctx.sessions["ws2"].runner):
        runner.expect("rm -f -- /mnt/nas/nasplan-office-")
        runner.expect(f"rm -rf -- {SETUP_DIR}")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "ok", record["error"]
    (rep,) = record["repetitions"]
    assert set(rep["clients"]) == {"ws", "ws2"}
    ws_rate = 16 * 2**20 / 0.2
    assert rep["clients"]["ws"]["bytes_per_second"] == pytest.approx(ws_rate)
    # each client's copy has a name of its own on the NAS
    names = {t.split("of=/mnt/nas/")[1].split()[0] for t in ws.texts("conv=fsync")}
    assert all(name.endswith("-ws.bin") for name in names)
    # Jain's index of 80 and 40 MiB/s: (80 + 40)^2 / (2 * (80^2 + 40^2)) = 0.9
    assert rep["fairness"] == pytest.approx(0.9)
    shares = record["together"]["write"]
    assert shares["clients"]["ws2"] == pytest.approx(ws_rate / 2)
    assert kinds.readout(record).flow(record, "write").startswith("ws + ws2 →")


def test_rsync_trusts_the_nas_s_verified_key_for_the_address_it_sends_to(
    kind_context: Callable[..., Any],
) -> None:
    ctx, nas, _ws = kind_context(
        "  - {id: rs, kind: transfer, server: nas, client: ws, method: rsync, path: /srv/in,\n"
        "     direction: write, size: 1MiB, repetitions: 1}\n",
        {"rsync": "/usr/bin/rsync"},
    )
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPSJaMJPpoYVgr4C0bzXKpkoM3Hw3XwPlenmTFSua/1v"
    nas.host_key = lambda: key  # the key nasplan's own connection checked
    test = ctx.plan.tests[0]
    s = transfer_kind.KIND.settings(test)
    side = transfer_kind._side(test, s, ctx, "tok", "ws")
    files = dict(side.xfer.method.client_files(side.xfer))
    assert files == {"known_hosts": f"198.18.251.1 {key}\n"}
    argv, _ = side.xfer.command("write", SETUP_DIR, side.address)
    ssh = argv[argv.index("-e") + 1]
    assert f"UserKnownHostsFile={SETUP_DIR}/known_hosts" in ssh
    assert "StrictHostKeyChecking=yes" in ssh
    # a plan that names its own known_hosts keeps it: nothing written
    given = dataclasses.replace(side.xfer, ssh=dataclasses.replace(side.xfer.ssh, known_hosts="/k"))
    assert given.method.client_files(given) == []


def test_the_estimate_counts_each_client_each_file_and_the_one_file_beside(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, _ = kind_context(
        "  - {id: a, kind: transfer, server: nas, client: ws, method: rsync, path: /x,\n"
        "     size: 125MB, repetitions: 2, direction: write}\n"
        "  - {id: b, kind: transfer, server: nas, clients: [ws, ws2], method: rsync, path: /x,\n"
        "     size: 125MB, repetitions: 2, direction: write}\n"
        "  - {id: c, kind: transfer, server: nas, client: ws, method: rsync, path: /x,\n"
        "     files: {count: 1000, size: 125KB}, repetitions: 2, direction: write}\n",
        clients=("ws2",),
    )
    seconds = [kinds.bind(t).estimate(ctx.plan).seconds for t in ctx.plan.tests]
    rate, _ = estimate.copy_rate(ctx.plan, ctx.plan.tests[0])
    copy_s = 125e6 / rate  # one copy of the 125 MB at the path's assumed rate
    part_s = transfer_kind.PART_S + 125e6 / transfer_kind.SOURCE_BYTES_PER_SECOND
    step_s = transfer_kind.STEP_S
    n = estimate.parts(ctx.plan, ctx.plan.tests[0])  # each part makes its source
    assert seconds[0] == pytest.approx(n * part_s + 2 * (copy_s + step_s))
    assert seconds[1] == pytest.approx(n * part_s + 2 * (2 * copy_s + step_s))  # two share
    # the set's files each cost PER_FILE_S, and one file of the same bytes is copied beside it
    # (whose source is made too)
    one_s = copy_s + step_s
    set_s = one_s + 1000 * transfer_kind.PER_FILE_S + one_s
    assert seconds[2] == pytest.approx(
        n * (part_s + 125e6 / transfer_kind.SOURCE_BYTES_PER_SECOND) + 2 * set_s
    )


def test_a_set_that_filled_the_share_warns_of_no_copy_it_never_made(
    kind_context: Callable[..., Any], smb_password: None
) -> None:
    """The set's write failed on a full volume, so its one-file twin was never put: removing the
    set's directory is all the clean-up says or does (smbclient's ``del`` of the twin that is
    not there is no problem)."""
    ctx, _nas, ws = kind_context(
        "  - {id: many, kind: transfer, server: nas, client: ws, method: smb, share: data,\n"
        "     password_env: NASPLAN_UNIT_SMB_PASSWORD, repetitions: 1, direction: write,\n"
        "     files: {count: 3, size: 1MiB}}\n",
        {"smbclient": "/usr/bin/smbclient"},
    )
    full = "NT_STATUS_DISK_FULL closing remote file \\nasplan-many\\f2\n"
    ws.expect("split -b 1048576", SETUP_DIR + "\n")
    ws.expect("mput nasplan-many-", full + "NASPLAN_ELAPSED_NS=9000000\nNASPLAN_EXIT=1\n", exited=1)
    ws.allow("put /tmp/nasplan-xfer.Ab12Cd/source.bin", full + "NASPLAN_EXIT=1\n", exited=1)
    ws.expect("deltree nasplan-many-")
    ws.expect("del nasplan-many-", "NT_STATUS_NO_SUCH_FILE listing \\nasplan-many.set.bin\n",
              exited=1)  # fmt: skip
    ws.expect(f"rm -rf -- {SETUP_DIR}")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert "NT_STATUS_DISK_FULL" in record["error"], record["error"]
    assert "cleanup" not in record["error"] and not record.get("warnings"), record
