"""``kind: transfer`` run() through the runner seam: the client's commands, timing, cleanup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.measure import kinds
from nasplan.remote import shell

TRANSFER = Path(__file__).resolve().parents[3] / "fixtures" / "transfer"
TEST = (
    "  - {id: nfs, kind: transfer, server: nas, client: ws, method: copy,\n"
    "     mounted_path: /mnt/nas, direction: write, size: 16MiB, repetitions: 1}\n"
)


def test_a_write_to_a_mounted_path_is_timed_and_everything_removed(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(TEST)
    ws.expect("head -c 16777216 /dev/urandom", "/tmp/nasplan-xfer.Ab12Cd\n")
    ws.expect("dd if=/tmp/nasplan-xfer.Ab12Cd/source.bin of=/mnt/nas/nasplan-nfs-", (
        TRANSFER / "timed-dd-write.txt").read_text())  # fmt: skip
    ws.expect("rm -f -- /mnt/nas/nasplan-nfs-")
    ws.expect("rm -rf -- /tmp/nasplan-xfer.Ab12Cd")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    rep = record["repetitions"][0]
    assert rep["duration_s"] == pytest.approx(0.017025099)
    assert rep["bytes_per_second"] == pytest.approx(16 * 2**20 / 0.017025099)
    assert record["params"]["method"] == "copy" and record["params"]["size_bytes"] == 16 * 2**20
    assert record["path"]["mtu_bytes"] == 9000
    assert (ctx.hooks.run_dir / rep["raw_file"]).read_text() == (
        TRANSFER / "timed-dd-write.txt"
    ).read_text()


def test_smb_without_its_password_in_the_environment_fails_before_copying(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NASPLAN_UNIT_SMB_PASSWORD", raising=False)
    ctx, _, ws = kind_context(
        "  - {id: smb, kind: transfer, server: nas, client: ws, method: smb, share: data,\n"
        "     password_env: NASPLAN_UNIT_SMB_PASSWORD, repetitions: 1}\n",
        {"smbclient": "/usr/bin/smbclient"},
    )
    ws.expect("command -v", "/usr/bin/smbclient\n")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"] == (
        "environment variable NASPLAN_UNIT_SMB_PASSWORD (SMB password) is not set"
    )


def test_the_smb_password_never_reaches_argv_and_is_masked_in_raw_files(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASPLAN_UNIT_SMB_PASSWORD", "s3cr3t-pw")
    ctx, _, ws = kind_context(
        "  - {id: smb, kind: transfer, server: nas, client: ws, method: smb, share: data,\n"
        "     password_env: NASPLAN_UNIT_SMB_PASSWORD, direction: write, size: 1MiB,\n"
        "     repetitions: 1}\n",
        {"smbclient": "/usr/bin/smbclient"},
    )
    ws.expect("nasplan-xfer.", "/tmp/nasplan-xfer.Zz9\n")
    refused = (TRANSFER / "timed-smbclient-logon-failure.txt").read_text()
    ws.expect("smbclient", refused + "echoed back: s3cr3t-pw\n")
    ws.expect("smbclient")  # the cleanup's del
    ws.expect("rm -rf -- /tmp/nasplan-xfer.Zz9")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert "s3cr3t-pw" not in " ".join(ws.texts())
    setup = next(call for call in ws.calls if "nasplan-xfer." in call.text)
    assert setup.stdin is not None and "s3cr3t-pw" in setup.stdin  # on stdin only
    raw = (ctx.hooks.run_dir / record["repetitions"][0]["raw_file"]).read_text()
    assert "s3cr3t-pw" not in raw and "********" in raw


def test_an_smb_transfer_from_a_windows_client_through_run(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("W10_TEST_SMB_PASSWORD", "pa ss'word")
    ctx, _, ws = kind_context(
        "  - {id: smb, kind: transfer, server: nas, client: ws, method: smb, share: Public,\n"
        "     user: admin, password_env: W10_TEST_SMB_PASSWORD, direction: write,\n"
        "     size: 64MiB, repetitions: 1}\n",
        {"smbclient": "builtin: Windows SMB client (New-SmbMapping, Copy-Item)"},
    )
    ws.use_shell(shell.windows(None))
    temp = "C:\\Users\\me\\AppData\\Local\\Temp\\nasplan-xfer-0123456789ab"
    ws.expect("RandomNumberGenerator", temp + "\r\n")
    ws.expect("Copy-Item -LiteralPath $local", "NASPLAN_ELAPSED_NS=500000000\r\nNASPLAN_EXIT=0\r\n")
    ws.expect("Test-Path -LiteralPath $remote")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    [rep] = record["repetitions"]
    assert rep["bytes_per_second"] == 64 * 2**20 / 0.5
    setup, timed, cleanup = ws.calls
    assert timed.stdin == cleanup.stdin == "pa ss'word\n" and setup.stdin is None
    assert "pa ss'word" not in timed.text + cleanup.text
    assert f"$dir = '{temp}'" in cleanup.text
    assert "pa ss'word" in ctx.hooks.secrets


def test_a_client_without_the_tool_is_said_from_the_setup_s_own_round_trip(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(TEST)
    # the tool is looked for by the script that makes the source, before it makes anything
    ws.expect("command -v dd >/dev/null 2>&1 || { echo @@nasplan:no-tool@@; exit 1; }",
              "@@nasplan:no-tool@@\n", exited=1)  # fmt: skip

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"] == "dd is not installed on ws"
    # one round trip: the tool, then the temp dir's free space, are looked for by the script
    # that makes the temp dir and the source (the mount's free space: in the script that
    # records the copies, not run for a tool that is not there)
    assert [call.text for call in ws.calls if "nasplan-xfer." not in call.text] == []
    (setup,) = ws.calls
    assert setup.text.index("command -v dd") < setup.text.index("df -P -k")


def test_a_client_temp_dir_too_small_is_said_from_the_setup_s_own_round_trip(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(TEST)
    # df's answer in the set-up script, before it records or makes anything (a real sh run of
    # these lines: tests/unit/measure/test_space.py)
    ws.expect("command -v dd", "NASPLAN_SHORT=0 12288 /tmp\n", exited=1)

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["error"] == (
        "ws: /tmp has 12.0 MiB free, the test writes 16.0 MiB there (its source file); "
        "nothing was made"
    )
    (setup,) = ws.calls  # the mount's free space and its copy's record: in the same script
    assert "nasplan_fit=/mnt/nas\n" in setup.text and "/mnt/nas/nasplan-nfs-" in setup.text
    assert setup.text.index("NASPLAN_SHORT=") < setup.text.index("nasplan_register -")
