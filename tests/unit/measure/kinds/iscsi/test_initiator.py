"""The iSCSI initiator's argv and its parser, on real captured output (fixtures/iscsi/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.measure.kinds.iscsi import initiator as iscsi

CAPTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iscsi"


def test_a_write_names_bytes_duration_and_that_the_target_synced() -> None:
    parsed = iscsi.parse_output((CAPTURES / "write-8mib-chap.json").read_text())
    assert (parsed["direction"], parsed["bytes"]) == ("write", 8 * 2**20)
    assert parsed["duration_s"] == pytest.approx(0.065878)
    assert parsed["synchronized"] is True
    assert (parsed["lun_block_bytes"], parsed["lun_capacity_bytes"]) == (512, 16 * 2**20)


def test_a_read_parses_too() -> None:
    parsed = iscsi.parse_output((CAPTURES / "read-8mib-chap.json").read_text())
    assert (parsed["direction"], parsed["synchronized"]) == ("read", False)
    assert parsed["bytes"] / parsed["duration_s"] == pytest.approx(8 * 2**20 / 0.089122)


@pytest.mark.parametrize(
    ("name", "stage", "message"),
    [
        ("login-target-not-found.json", "login", "Status: Target not found(515)"),
        ("login-chap-refused.json", "login", "Status: Authentication failure(513)"),
        ("login-no-portal.json", "login", "Can not reconnect right now"),
        ("capacity-too-small.json", "capacity", "the LUN holds 16777216 bytes, less than"),
    ],
)
def test_failures_carry_the_stage_and_libiscsi_s_own_words(
    name: str, stage: str, message: str
) -> None:
    with pytest.raises(iscsi.IscsiError) as caught:
        iscsi.parse_output((CAPTURES / name).read_text())
    assert caught.value.stage == stage
    assert message in str(caught.value)


def test_no_json_line_is_an_error_naming_what_came() -> None:
    with pytest.raises(iscsi.IscsiError, match=r"printed no result \(python3: not found\)"):
        iscsi.parse_output("python3: not found\n")


def test_argv_carries_the_chap_user_but_never_a_secret() -> None:
    target = iscsi.Target("198.19.48.10", "iqn.2026-12.lab.nasplan:nas.scratch", 1, 3260, "nasplan")
    argv = iscsi.rw_argv("python3", "/tmp/nasplan-iscsi.x", target, "write", 2**20, 2**20, 8)
    assert argv[:2] == ["python3", "/tmp/nasplan-iscsi.x/iscsi_rw.py"]
    assert argv[argv.index("--portal") + 1] == "198.19.48.10:3260"
    assert argv[argv.index("--chap-user") + 1] == "nasplan"
    assert not any("secret" in word.lower() or "password" in word.lower() for word in argv)
    assert target.url == "iscsi://198.19.48.10:3260/iqn.2026-12.lab.nasplan:nas.scratch/1"
    assert iscsi.Target("fd00::1", "iqn.2026-12.x:y", 0).portal == "[fd00::1]:3260"
