"""``kind: iscsi`` run() through the runner seam: install, timed runs, secrets, cleanup."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.measure import kinds

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "iscsi"
IQN = "iqn.2026-12.lab.nasplan:nas.scratch"


def _test_yaml(extra: str) -> str:
    return (
        f"  - {{id: blk, kind: iscsi, server: nas, client: ws, iqn: '{IQN}', lun: 1,\n"
        f"     size: 8MiB, repetitions: 1, {extra}}}\n"
    )


def _installs(ws: Any) -> None:
    ws.expect("mktemp -d", "/tmp/nasplan-iscsi.Qw12\n")
    ws.expect("import iscsi_rw", "libiscsi ok\n")


def test_write_then_read_of_a_scratch_lun_with_chap(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASPLAN_UNIT_ISCSI_SECRET", "0123456789abcdef")
    ctx, _, ws = kind_context(
        _test_yaml("scratch: true, chap_user: nasplan, chap_secret_env: NASPLAN_UNIT_ISCSI_SECRET")
    )
    _installs(ws)
    ws.expect("--direction write", (CAPTURES / "write-8mib-chap.json").read_text())
    ws.expect("--direction read", (CAPTURES / "read-8mib-chap.json").read_text())
    ws.expect("rm -rf -- /tmp/nasplan-iscsi.Qw12")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    write, read = record["repetitions"]
    assert (write["direction"], read["direction"]) == ("write", "read")
    assert write["bytes_per_second"] == pytest.approx(8 * 2**20 / 0.065878)
    assert record["directions"]["read"]["median"] == pytest.approx(8 * 2**20 / 0.089122)
    assert record["summary"]["median"] == pytest.approx(8 * 8 * 2**20 / 0.065878)
    assert record["params"]["address"] == "198.18.251.1" and record["path"]["mtu_bytes"] == 9000
    # each repetition's window on the test's clock; 8 MiB take less than a sampled second
    assert 0 <= write["started_s"] <= write["ended_s"] <= read["started_s"] <= read["ended_s"]
    assert record["timeline"] is None
    # The secret went on stdin only; the script itself too (never through argv).
    assert "0123456789abcdef" not in " ".join(ws.texts())
    runs = [call for call in ws.calls if "--direction" in call.text]
    assert all(call.stdin == "0123456789abcdef\n" for call in runs)
    install = next(call for call in ws.calls if "mktemp" in call.text)
    assert install.stdin is not None and "libiscsi" in install.stdin
    assert "0123456789abcdef" in ctx.hooks.secrets
    # each repetition's command kept as the client ran it (its login and timed write or read),
    # the CHAP user in it, the secret nowhere in run.json's record
    for rep, call in zip(record["repetitions"], runs, strict=True):
        (kept,) = rep["commands"]
        assert kept["host"] == "ws" and " ".join(kept["argv"]) == call.text
        assert kept["argv"][:2] == ["python3", "/tmp/nasplan-iscsi.Qw12/iscsi_rw.py"]
        assert kept["argv"][kept["argv"].index("--chap-user") + 1] == "nasplan"
        assert kept["argv"][kept["argv"].index("--direction") + 1] == rep["direction"]
    assert "0123456789abcdef" not in json.dumps(record)


def test_a_bad_iqn_is_one_clear_error_and_no_more_attempts(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(_test_yaml("scratch: true"))
    _installs(ws)
    ws.expect("--direction write", (CAPTURES / "login-target-not-found.json").read_text(),
              exited=3)  # fmt: skip
    ws.expect("rm -rf -- /tmp/nasplan-iscsi.Qw12")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert record["status"] == "failed"
    assert record["error"] == (
        f"write 1: iSCSI login to iscsi://198.18.251.1:3260/{IQN}/1 failed: Failed to log in "
        "to target. Status: Target not found(515) (no target with this IQN behind the portal "
        "(`iscsi-ls iscsi://198.18.251.1:3260` lists the portal's targets))"
    )
    assert len(record["repetitions"]) == 1  # the read was not tried


def test_missing_chap_secret_fails_before_touching_the_client(
    kind_context: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NASPLAN_UNIT_ISCSI_SECRET", raising=False)
    ctx, _, ws = kind_context(
        _test_yaml("direction: read, chap_user: u, chap_secret_env: NASPLAN_UNIT_ISCSI_SECRET")
    )
    record = kinds.bind(ctx.plan.tests[0]).run(ctx)
    assert (
        record["error"] == "environment variable NASPLAN_UNIT_ISCSI_SECRET (CHAP secret) is not set"
    )
    assert ws.texts("python3") == []


def test_a_client_without_libiscsi_is_told_what_to_install(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(_test_yaml("direction: read"))
    ws.expect("mktemp -d", "/tmp/nasplan-iscsi.Qw12\n")
    ws.expect("import iscsi_rw", exited=1, stderr=(
        "iscsi_rw.Failed: libiscsi is not installed (libiscsi.so.7: cannot open shared object "
        "file: No such file or directory): apt-get install libiscsi7\n"))  # fmt: skip
    ws.expect("rm -rf -- /tmp/nasplan-iscsi.Qw12")
    record = kinds.bind(ctx.plan.tests[0]).run(ctx)
    assert record["error"].startswith("libiscsi cannot be loaded on ws (")
    assert record["error"].endswith("on Debian/Ubuntu: apt-get install libiscsi-bin")


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("direction: both", "plan.yaml:4:5: tests[0]: "),
        ("scratch: false", "plan.yaml:5:43: tests[0].scratch: "),
    ],
)
def test_a_plan_writing_to_a_lun_not_marked_scratch_is_refused_at_validation(
    kind_context: Callable[..., Any], extra: str, where: str
) -> None:
    with pytest.raises(InputError) as caught:
        kind_context(_test_yaml(extra))
    (message,) = caught.value.messages
    assert message.endswith(
        where + "writing destroys what the LUN holds: mark it scratch: true (only a LUN whose "
        "data may be lost), or measure direction: read"
    )


def test_reading_a_lun_not_marked_scratch_is_allowed(kind_context: Callable[..., Any]) -> None:
    ctx, _, _ = kind_context(_test_yaml("direction: read"))
    assert kinds.bind(ctx.plan.tests[0]).description == (
        f"iscsi ws -> nas {IQN} LUN 1, read, 8MiB x 1"
    )


def test_a_client_without_python3_is_said_from_the_install_s_own_round_trip(
    kind_context: Callable[..., Any],
) -> None:
    ctx, _, ws = kind_context(_test_yaml("direction: read"))
    ws.expect("command -v python3 >/dev/null 2>&1 || { echo @@nasplan:no-python3@@; exit 1; }",
              "@@nasplan:no-python3@@\n", exited=1)  # fmt: skip
    record = kinds.bind(ctx.plan.tests[0]).run(ctx)
    assert record["error"] == "python3 is not installed on ws (the iSCSI initiator runs with it)"
    assert len(ws.calls) == 1
